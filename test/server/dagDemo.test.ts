/**
 * DAG mode out of the box: `POST /api/react` with `mode: "dag"` (and `auto`), and
 * the OpenAI-compatible model `react-agent-dag`, on
 * the real server over the offline demo model and the built-in tools
 * (test/utils/demoAppServer.ts), no LLM configured and nothing scripted.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { demoAppServer } from "../utils/demoAppServer.js"
import { openSse, postJson } from "../utils/sse.js"

const QUERY = "What is (17 + 25) * 3 and what time is it in Tokyo?"

const stepTools = (events: ReadonlyArray<any>) =>
  events.filter((e) => e.event === "step" && e.data.type === "iteration" && e.data.status === "done")
    .map((e) => `${e.data.step_id}:${e.data.tool_name}`)

describe("DAG mode on the offline demo model, through the HTTP API", () => {
  it.scopedLive("mode dag: a plan of two parallel steps (calc, time), each runs its tool, one answer with both results", () =>
    Effect.gen(function*() {
      const { url } = yield* demoAppServer({ chunkDelay: 0, thinkDelay: 0 })
      const result = yield* Effect.promise(() =>
        openSse(`${url}/api/react`, { body: { query: QUERY, mode: "dag" }, timeoutMs: 30_000 })
      )
      assert.strictEqual(result.status, 200)
      const events = result.events
      const plan = events.find((e) => e.event === "dag" && e.data.type === "plan")
      assert.deepStrictEqual(
        plan?.data.steps.map((s: any) => [s.id, s.dependencies, s.tool_hint]),
        [["calc", [], "calculator"], ["time", [], "current_time"]]
      )
      // planning then analysis: no fallback to ReAct, no re-plan
      assert.deepStrictEqual(events.filter((e) => e.event === "phase").map((e) => e.data.phase), [
        "planning",
        "analyzing"
      ])
      const steps = events.filter((e) => e.event === "dag" && e.data.type === "step").map((e) =>
        `${e.data.status}:${e.data.step_id}`
      )
      assert.sameMembers(steps, ["start:calc", "start:time", "done:calc", "done:time"])
      assert.sameMembers(stepTools(events), ["calc:calculator", "time:current_time"])
      const done = events[events.length - 1]
      assert.strictEqual(done.event, "done")
      assert.include(done.data.answer, "(17 + 25) * 3 = **126**")
      assert.include(done.data.answer, "The current time in Asia/Tokyo is **")
      assert.strictEqual(done.data.usage.by_phase.planning.llm_calls, 1)
    }))

  it.scopedLive("mode auto: the router sends a two-part question to DAG mode and a one-part question to ReAct", () =>
    Effect.gen(function*() {
      const { url } = yield* demoAppServer({ chunkDelay: 0, thinkDelay: 0 })
      const two = yield* Effect.promise(() =>
        openSse(`${url}/api/react`, { body: { query: QUERY, mode: "auto" }, timeoutMs: 30_000 })
      )
      assert.isDefined(two.events.find((e) => e.event === "dag" && e.data.type === "plan"))
      assert.sameMembers(stepTools(two.events), ["calc:calculator", "time:current_time"])
      const one = yield* Effect.promise(() =>
        openSse(`${url}/api/react`, { body: { query: "What is 6*7?", mode: "auto" }, timeoutMs: 30_000 })
      )
      assert.isUndefined(one.events.find((e) => e.event === "dag"))
      assert.include(one.events[one.events.length - 1].data.answer, "**42**")
    }))

  it.scopedLive("the OpenAI-compatible model react-agent-dag: the plan in reasoning_content, both results in the content", () =>
    Effect.gen(function*() {
      const { url } = yield* demoAppServer({ chunkDelay: 0, thinkDelay: 0 })
      const reply = yield* Effect.promise(() =>
        postJson(`${url}/v1/chat/completions`, {
          model: "react-agent-dag",
          messages: [{ role: "user", content: QUERY }]
        })
      )
      assert.strictEqual(reply.status, 200)
      const message = reply.body.choices[0].message
      assert.include(
        message.reasoning_content,
        "Plan (round 1): calc. Calculate (17 + 25) * 3; time. What time is it in Asia/Tokyo?"
      )
      assert.notInclude(message.reasoning_content, "react fallback")
      assert.include(message.content, "(17 + 25) * 3 = **126**")
      assert.include(message.content, "Asia/Tokyo")
    }))
})
