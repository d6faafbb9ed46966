/**
 * `mode` in `POST /api/react` on the real server over a scripted model
 * (test/utils/webAppServer.ts + webDagScript.ts).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { getJson, openSse, postJson } from "../utils/sse.js"
import { webAppServer } from "../utils/webAppServer.js"

const QUERY = "dag: compare the populations of Lyon and Porto"

describe("POST /api/react with mode", () => {
  it.scopedLive("mode dag: the plan, the steps (their events with step_id), the answer and one done; the turn is stored", () =>
    Effect.gen(function*() {
      const { url } = yield* webAppServer()
      const result = yield* Effect.promise(() =>
        openSse(`${url}/api/react`, { body: { query: QUERY, mode: "dag" }, timeoutMs: 30_000 })
      )
      assert.strictEqual(result.status, 200)
      const events = result.events
      const plan = events.find((e) => e.event === "dag" && e.data.type === "plan")
      assert.deepStrictEqual(plan?.data.steps.map((s: any) => [s.id, s.dependencies]), [["1", []], ["2", []], ["3", [
        "1",
        "2"
      ]]])
      const steps = events.filter((e) => e.event === "dag" && e.data.type === "step").map((e) =>
        `${e.data.status}:${e.data.step_id}`
      )
      assert.sameMembers(steps, ["start:1", "start:2", "start:3", "done:1", "done:2", "done:3"])
      const toolStarts = events.filter((e) =>
        e.event === "step" && e.data.type === "iteration" && e.data.status === "start"
      )
      assert.sameMembers(toolStarts.map((e) => `${e.data.step_id}:${e.data.tool_name}`), [
        "1:lookup",
        "2:lookup",
        "3:calculator"
      ])
      assert.deepStrictEqual(
        events.filter((e) => e.event === "phase").map((e) => e.data.phase),
        ["planning", "analyzing"]
      )
      const ids = events.map((e) => Number(e.id))
      assert.deepStrictEqual(ids, ids.map((_, i) => i + 1), "one cursor for the whole run")
      const done = events[events.length - 1]
      assert.strictEqual(done.event, "done")
      assert.strictEqual(events.filter((e) => e.event === "done").length, 1)
      assert.include(done.data.answer, "Lyon is larger")
      assert.strictEqual(done.data.usage.by_phase.planning.llm_calls, 1)
      assert.strictEqual(done.data.usage.by_phase.analysis.llm_calls, 1)
      const stored = yield* Effect.promise(() =>
        getJson(`${url}/api/conversations/${result.headers.get("x-conversation-id")}`)
      )
      assert.deepStrictEqual(stored.body.messages.map((m: any) => m.role), ["user", "assistant"])
      assert.include(stored.body.messages[1].content, "Lyon is larger")
    }))

  it.scopedLive("REACT_DEFAULT_MODE applies when the request names no mode; mode react overrides it", () =>
    Effect.gen(function*() {
      const { url } = yield* webAppServer({ defaultMode: "dag" })
      const byDefault = yield* Effect.promise(() =>
        openSse(`${url}/api/react`, { body: { query: QUERY }, timeoutMs: 30_000 })
      )
      assert.isDefined(byDefault.events.find((e) => e.event === "dag"))
      const react = yield* Effect.promise(() =>
        openSse(`${url}/api/react`, { body: { query: "plain question", mode: "react" } })
      )
      assert.isUndefined(react.events.find((e) => e.event === "dag"))
      assert.strictEqual(react.events[react.events.length - 1].event, "done")
    }))

  it.scopedLive("an unknown mode is a 400 naming the field", () =>
    Effect.gen(function*() {
      const { url } = yield* webAppServer()
      const response = yield* Effect.promise(() => postJson(`${url}/api/react`, { query: "q", mode: "graph" }))
      assert.strictEqual(response.status, 400)
      assert.include(JSON.stringify(response.body), "mode")
    }))
})
