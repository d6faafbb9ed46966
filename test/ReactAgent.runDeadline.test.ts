/**
 * The run's deadline (`runTimeout`) counts working time: a person who answers an
 * approval long after the deadline would have passed still gets the call run;
 * work after the wait counts again, and past the deadline it ends the run with
 * `RunFailed`. In process over `ScriptedLlm`, on the test clock.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import { makeAgent, writer } from "./utils/agentLayers.js"

const CID = "conv"

/** Runs the agent; once the approval is requested the clock moves 10 s, then the person approves. */
const run = Effect.gen(function*() {
  const agent = yield* ReactAgent.ReactAgent
  const events: Array<RunEvent> = []
  const requested = yield* Deferred.make<string>()
  const fiber = yield* agent.run({ query: "q", conversationId: CID }).pipe(
    Stream.runForEach((event) =>
      Effect.sync(() => events.push(event)).pipe(
        Effect.zipRight(
          event._tag === "ApprovalRequested" ? Deferred.succeed(requested, event.approval_id) : Effect.void
        )
      )
    ),
    Effect.fork
  )
  const approvalId = yield* Deferred.await(requested)
  yield* TestClock.adjust("10 seconds")
  yield* agent.approve({ conversationId: CID, approvalId, decision: "approve" })
  // what runs after the approval may sleep: the clock moves on
  yield* TestClock.adjust("10 seconds")
  yield* Fiber.join(fiber)
  return events
})

const slow = Tool.make({
  name: "slow",
  description: "Works for 3 s",
  parameters: Schema.Struct({}),
  handler: () => Effect.as(Effect.sleep("3 seconds"), "slow done")
})

describe("the run's deadline counts working time", () => {
  it.effect("an approval answered 10 s into a 1 s deadline: the call runs, the run answers", () => {
    const w = writer()
    const h = makeAgent([
      ScriptedLlm.toolCall("write", { path: "a" }, { id: "c" }),
      ScriptedLlm.text("written"),
      ScriptedLlm.text("written")
    ], {
      tools: [w.tool],
      agent: { completionCheck: false, runTimeout: "1 second" }
    })
    return Effect.gen(function*() {
      const events = yield* run
      assert.deepStrictEqual(w.ran, ["a"])
      assert.deepStrictEqual(events.filter((e) => e._tag === "RunFailed"), [])
      const done = events[events.length - 1]
      assert.strictEqual(done._tag === "Done" ? done.answer : "", "written")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("work after the wait counts again: a 3 s tool outlasts what is left of a 1 s deadline", () => {
    const w = writer()
    const h = makeAgent([
      ScriptedLlm.toolCall("write", { path: "a" }, { id: "c" }),
      ScriptedLlm.toolCall("slow", {}, { id: "s" }),
      ScriptedLlm.text("never"),
      ScriptedLlm.text("never")
    ], { tools: [w.tool, slow], agent: { completionCheck: false, runTimeout: "1 second" } })
    return Effect.gen(function*() {
      const events = yield* run
      assert.deepStrictEqual(w.ran, ["a"])
      const failed = events.filter((e) => e._tag === "RunFailed")
      assert.deepStrictEqual(failed.map((e) => e._tag === "RunFailed" ? e.message : ""), ["The run timed out after 1s"])
      assert.isFalse(events.some((e) => e._tag === "ToolDone" && e.tool_name === "slow"))
      assert.strictEqual(events[events.length - 1]._tag, "Done")
    }).pipe(Effect.provide(h.layer))
  })
})
