/**
 * Tool progress through the real server (durable runs): a tool's
 * `Tool.progress` reaches the live SSE client as `step {type:"iteration",
 * status:"progress"}` frames without an `id:` (ephemeral), between the call's
 * start and done; it is never stored, so a client resuming from the run log
 * (`Last-Event-ID`) does not get it, and the stored events keep their ids 1, 2, 3…
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Tool from "../../src/Tool.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { openSse } from "../utils/sse.js"

const work = Tool.make({
  name: "work",
  description: "Works in three steps",
  parameters: Schema.Struct({}),
  handler: () =>
    Effect.gen(function*() {
      for (let i = 1; i <= 3; i++) {
        yield* Effect.sleep("150 millis")
        yield* Tool.progress(`step ${i}`, i / 3)
      }
      return "worked"
    })
})

describe("tool progress on the server", () => {
  it.scopedLive("live frames without an id, between the call's start and done; never stored", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped([
        FakeOpenAi.completion({ toolCalls: [{ id: "call_w", name: "work", arguments: "{}" }] }),
        FakeOpenAi.completion({ content: "done" }),
        FakeOpenAi.sseText("It worked.")
      ])
      const server = yield* startServer({ llmUrl: fake.url, tools: [work] })
      const run = yield* Effect.promise(() => openSse(`${server.url}/api/react`, { body: { query: "work", conversation_id: "p1" } }))
      const progress = run.events.filter((e) => e.event === "step" && e.data.status === "progress")
      assert.deepStrictEqual(progress.map((e) => [e.id, e.data.tool_call_id, e.data.message, e.data.progress]), [
        [undefined, "call_w", "step 1", 1 / 3],
        [undefined, "call_w", "step 2", 2 / 3],
        [undefined, "call_w", "step 3", 1]
      ])
      const kinds = run.events.map((e) => (e.event === "step" ? `${e.data.type}:${e.data.status}` : e.event))
      const start = kinds.indexOf("iteration:start")
      const done = kinds.indexOf("iteration:done")
      assert.isTrue(start < kinds.indexOf("iteration:progress") && kinds.lastIndexOf("iteration:progress") < done)
      // the stored events are numbered without gaps: progress took no number
      const stored = run.events.filter((e) => e.id !== undefined)
      assert.deepStrictEqual(stored.map((e) => Number(e.id)), stored.map((_, i) => i + 1))
      // a client reading the run from the log gets the same stored events, and no progress
      const replay = yield* Effect.promise(() => openSse(`${server.url}/api/react/events?conversation_id=p1`))
      assert.deepStrictEqual(replay.events.map((e) => [e.id, e.event]), stored.map((e) => [e.id, e.event]))
      assert.isFalse(replay.events.some((e) => e.data.status === "progress"))
    }), 60_000)
})
