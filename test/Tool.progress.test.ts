/**
 * `Tool.progress`: a handler reports how far its call is; the run emits
 * `ToolProgress` events (ephemeral: `RunEvent.isEphemeral`), at most 10 per
 * second per call (a report of 1 always passes), each naming its call. Outside
 * a run it does nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import { isEphemeral } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { fromWire, toWire } from "../src/server/EventWire.js"
import * as Tool from "../src/Tool.js"
import { makeAgent } from "./utils/agentLayers.js"

type Progress = Extract<RunEvent, { _tag: "ToolProgress" }>
const progressOf = (events: ReadonlyArray<RunEvent>): Array<Progress> =>
  events.filter((e): e is Progress => e._tag === "ToolProgress")

/** Reports `steps` times, `pause` ms apart (real time), then answers. */
const worker = (name: string, steps: number, pause: number) => {
  const executions: Array<number> = []
  const tool = Tool.make({
    name,
    description: "Works in steps",
    parameters: Schema.Struct({ n: Schema.Number }),
    handler: ({ n }) =>
      Effect.gen(function*() {
        executions.push(n)
        for (let i = 1; i <= steps; i++) {
          yield* Tool.progress(`step ${i} of ${steps}`, i / steps)
          if (pause > 0) yield* Effect.sleep(pause)
        }
        return `worked ${n}`
      })
  })
  return { tool, executions }
}

const runEvents = (input: ReactAgent.RunInput) =>
  Effect.flatMap(ReactAgent.ReactAgent, (agent) => Effect.map(Stream.runCollect(agent.run(input)), Chunk.toArray))

describe("Tool.progress", () => {
  it.effect("is a no-op outside a run", () => Tool.progress("nobody listens", 0.5))

  it.effect("emits ToolProgress for the call that reports, throttled per call: only the first and the final report at one instant", () => {
    const a = worker("work_a", 20, 0)
    const b = worker("work_b", 3, 0)
    const h = makeAgent([
      ScriptedLlm.toolCalls([{ id: "call_a", name: "work_a", arguments: { n: 1 } }, {
        id: "call_b",
        name: "work_b",
        arguments: { n: 2 }
      }]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("answer")
    ], { tools: [a.tool, b.tool], agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const events = yield* runEvents({ query: "work" })
      assert.deepStrictEqual(a.executions, [1])
      const progress = progressOf(events)
      // the test clock does not move: of 20 reports of call_a only the first and the one of 1 pass; same for call_b
      assert.deepStrictEqual(
        progress.filter((p) => p.tool_call_id === "call_a").map((p) => [p.message, p.progress]),
        [["step 1 of 20", 0.05], ["step 20 of 20", 1]]
      )
      assert.deepStrictEqual(
        progress.filter((p) => p.tool_call_id === "call_b").map((p) => [p.tool_name, p.iteration, p.message]),
        [["work_b", 1, "step 1 of 3"], ["work_b", 1, "step 3 of 3"]]
      )
      // between the call's start and its end
      const startA = events.findIndex((e) => e._tag === "ToolStart" && e.tool_call_id === "call_a")
      const doneA = events.findIndex((e) => e._tag === "ToolDone" && e.tool_call_id === "call_a")
      const firstA = events.findIndex((e) => e._tag === "ToolProgress" && e.tool_call_id === "call_a")
      assert.isTrue(startA < firstA && firstA < doneA)
      assert.isTrue(progress.every(isEphemeral))
      assert.isFalse(events.filter((e) => e._tag !== "ToolProgress" && e._tag !== "OutputPartial").some(isEphemeral))
    }).pipe(Effect.provide(h.layer))
  })

  it.live("lets reports through at most every 100 ms of real time", () => {
    const w = worker("slow", 6, 60)
    const h = makeAgent([
      ScriptedLlm.toolCalls([{ id: "c1", name: "slow", arguments: { n: 1 } }]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("answer")
    ], { tools: [w.tool], agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const progress = progressOf(yield* runEvents({ query: "work" }))
      // 6 reports 60 ms apart: 1, 3, 5 pass (≥ 100 ms after the last one that passed), and 6 (it is 1)
      const steps = progress.map((p) => p.message)
      assert.strictEqual(steps[0], "step 1 of 6")
      assert.strictEqual(steps.at(-1), "step 6 of 6")
      assert.isAtMost(steps.length, 4)
      assert.isAtLeast(steps.length, 3)
    }).pipe(Effect.provide(h.layer))
  })

  it("the wire: step channel, status progress, no id of its own; read back as the same event", () => {
    const event: RunEvent = {
      _tag: "ToolProgress",
      iteration: 2,
      tool_name: "t",
      tool_call_id: "c",
      message: "half",
      progress: 0.5
    }
    const wire = toWire(event)
    assert.deepStrictEqual(wire, {
      channel: "step",
      data: {
        type: "iteration",
        status: "progress",
        iteration: 2,
        tool_name: "t",
        tool_call_id: "c",
        message: "half",
        progress: 0.5
      }
    })
    assert.deepStrictEqual(fromWire(wire.channel, wire.data), event)
    const partial: RunEvent = { _tag: "OutputPartial", value: { a: [1, "x"] } }
    assert.deepStrictEqual(toWire(partial), {
      channel: "answer",
      data: { type: "output_partial", value: { a: [1, "x"] } }
    })
    assert.deepStrictEqual(fromWire("answer", { type: "output_partial", value: { a: [1, "x"] } }), partial)
    const failed: RunEvent = { _tag: "RunFailed", message: "bad", retryable: false, code: "output_invalid" }
    assert.deepStrictEqual(toWire(failed), {
      channel: "error",
      data: { message: "bad", retryable: false, code: "output_invalid" }
    })
    assert.deepStrictEqual(fromWire("error", { message: "bad", retryable: false, code: "output_invalid" }), failed)
  })

  it("clamps the fraction to 0..1 and leaves out a fraction that is not a number", () =>
    Effect.runPromise(Effect.gen(function*() {
      const seen: Array<RunEvent> = []
      const call: Tool.CallContext = {
        toolName: "t",
        iteration: 1,
        conversationId: "c",
        emit: (e) => Effect.sync(() => void seen.push(e))
      }
      yield* Tool.withCall(call)(
        Effect.all([Tool.progress("over", 7), Tool.progress("under", -1), Tool.progress("nan", NaN)])
      )
      assert.deepStrictEqual(seen, [
        { _tag: "ToolProgress", iteration: 1, tool_name: "t", message: "over", progress: 1 },
        { _tag: "ToolProgress", iteration: 1, tool_name: "t", message: "under", progress: 0 },
        { _tag: "ToolProgress", iteration: 1, tool_name: "t", message: "nan" }
      ])
    })))
})
