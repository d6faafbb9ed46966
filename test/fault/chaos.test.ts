/**
 * Fault tests: the agent under a seeded chaos LLM (429/500/timeouts/connection
 * errors, garbage replies, unknown tools, invalid arguments, truncated and failing
 * synthesis streams). Whatever happens, every run ends with exactly one `Done` as
 * its last event, never dies, never sends a provider an unpaired tool call, and
 * answers every tool call it started.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as Hooks from "../../src/Hooks.js"
import * as Interrupts from "../../src/Interrupts.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import type { RunEvent } from "../../src/RunEvent.js"
import * as Tool from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"
import * as Chaos from "../utils/chaosLlm.js"

const tools: ReadonlyArray<Tool.Tool> = [
  Tool.make({
    name: "lookup",
    description: "Looks up a record.",
    parameters: Schema.Struct({ index: Schema.Number }),
    handler: ({ index }) => Effect.succeed(`record ${index}`)
  }),
  Tool.make({
    name: "flaky",
    description: "Fails on odd input.",
    parameters: Schema.Struct({ index: Schema.Number }),
    handler: ({ index }) =>
      index % 2 === 1 ? Effect.fail(new Tool.ToolError({ message: "odd index" })) : Effect.succeed("even")
  }),
  Tool.make({
    name: "crash",
    description: "Dies on index 3.",
    parameters: Schema.Struct({ index: Schema.Number }),
    handler: ({ index }) => (index === 3 ? Effect.die(new Error("boom")) : Effect.succeed("fine"))
  })
]

const argsFor = (_tool: string, random: () => number) => ({ index: Math.floor(random() * 6) })

const runOnce = (seed: number, mode: "native" | "json", synthesis: "always" | "auto" = "always") =>
  Effect.gen(function*() {
    const chaos = Chaos.make({ seed, tools: tools.map((t) => t.name), mode, argsFor })
    const layer = ReactAgent.layer({ maxIterations: 8, synthesis }).pipe(
      Layer.provide(Layer.mergeAll(
        chaos.layer,
        Toolkit.layer(tools),
        Hooks.layerNoop,
        ContextGuard.layer({ budget: 2000 }),
        Interrupts.layerMemory
      ))
    )
    const exit = yield* Effect.gen(function*() {
      const agent = yield* ReactAgent.ReactAgent
      return yield* Stream.runCollect(agent.run({ query: `chaos run ${seed}` }))
    }).pipe(Effect.provide(layer), Effect.exit)
    return { chaos, exit }
  })

const checkRun = (seed: number, events: ReadonlyArray<RunEvent>, chaos: Chaos.ChaosLlm) => {
  const where = `seed ${seed}`
  assert.isAbove(events.length, 0, `${where}: no events`)
  assert.strictEqual(
    events[events.length - 1]._tag,
    "Done",
    `${where}: last event is ${events[events.length - 1]?._tag}`
  )
  assert.strictEqual(events.filter((e) => e._tag === "Done").length, 1, `${where}: more than one Done`)
  assert.deepStrictEqual(chaos.violations, [], `${where}: protocol violations`)
  const started = new Map<string, number>()
  const finished = new Map<string, number>()
  for (const e of events) {
    if (e._tag === "ToolStart" && e.tool_call_id) started.set(e.tool_call_id, (started.get(e.tool_call_id) ?? 0) + 1)
    if (e._tag === "ToolDone" && e.tool_call_id) finished.set(e.tool_call_id, (finished.get(e.tool_call_id) ?? 0) + 1)
  }
  for (const [id, n] of started) {
    assert.strictEqual(finished.get(id), n, `${where}: tool call ${id} started but not answered once`)
  }
  const done = events[events.length - 1]
  if (done._tag === "Done") {
    for (const v of Chaos.protocolViolations(done.messages ?? [])) assert.fail(`${where}: final transcript: ${v}`)
    // what a client is left showing (the deltas after the last reset) is the answer Done reports
    if (!events.some((e) => e._tag === "RunFailed")) {
      let shown = ""
      for (const e of events) {
        if (e._tag === "AnswerDelta") shown += e.content
        else if (e._tag === "AnswerReset") shown = ""
      }
      assert.strictEqual(shown, done.answer, `${where}: the answer shown is not the answer`)
    }
  }
}

describe("chaos LLM", () => {
  it("protocolViolations spots unpaired, misplaced and orphan tool messages", () => {
    const call = { id: "a", type: "function" as const, function: { name: "t", arguments: "{}" } }
    assert.deepStrictEqual(
      Chaos.protocolViolations([
        { role: "user", content: "q" },
        { role: "assistant", content: null, tool_calls: [call] },
        { role: "tool", tool_call_id: "a", content: "ok" }
      ]),
      []
    )
    assert.lengthOf(
      Chaos.protocolViolations([{ role: "assistant", content: null, tool_calls: [call] }, {
        role: "user",
        content: "x"
      }]),
      1
    )
    assert.lengthOf(Chaos.protocolViolations([{ role: "tool", tool_call_id: "z", content: "orphan" }]), 1)
  })

  it("is deterministic for a seed", () => {
    const a = Chaos.prng(42)
    const b = Chaos.prng(42)
    for (let i = 0; i < 100; i++) assert.strictEqual(a(), b())
  })

  it.live(
    "native mode: 120 seeded runs all end with Done, no defect, no unpaired tool call",
    () =>
      Effect.gen(function*() {
        const totals = { failures: 0, garbage: 0, toolCalls: 0, truncated: 0 }
        for (let seed = 1; seed <= 120; seed++) {
          const { chaos, exit } = yield* runOnce(seed, "native")
          if (Exit.isFailure(exit)) assert.fail(`seed ${seed}: the run died: ${Cause.pretty(exit.cause)}`)
          checkRun(seed, Chunk.toReadonlyArray(exit.value), chaos)
          totals.failures += chaos.stats.failures
          totals.garbage += chaos.stats.garbage
          totals.toolCalls += chaos.stats.toolCalls
          totals.truncated += chaos.stats.truncatedStreams
        }
        // the chaos really happened (all kinds exercised)
        assert.isAbove(totals.failures, 20)
        assert.isAbove(totals.garbage, 20)
        assert.isAbove(totals.toolCalls, 50)
        assert.isAbove(totals.truncated, 5)
      }),
    60_000
  )

  it.live(
    "native mode, synthesis auto (streamed loop calls): 120 seeded runs all end with Done, no defect, no unpaired tool call",
    () =>
      Effect.gen(function*() {
        const totals = { failures: 0, toolCalls: 0, truncated: 0, resets: 0 }
        for (let seed = 2001; seed <= 2120; seed++) {
          const { chaos, exit } = yield* runOnce(seed, "native", "auto")
          if (Exit.isFailure(exit)) assert.fail(`seed ${seed}: the run died: ${Cause.pretty(exit.cause)}`)
          const events = Chunk.toReadonlyArray(exit.value)
          checkRun(seed, events, chaos)
          totals.failures += chaos.stats.failures
          totals.toolCalls += chaos.stats.toolCalls
          totals.truncated += chaos.stats.truncatedStreams
          totals.resets += events.filter((e) => e._tag === "AnswerReset").length
        }
        // the chaos reached the streamed loop calls: failures, cut streams, retracted answers
        assert.isAbove(totals.failures, 20)
        assert.isAbove(totals.toolCalls, 30)
        assert.isAbove(totals.truncated, 10)
        assert.isAbove(totals.resets, 10)
      }),
    60_000
  )

  it.live("JSON mode: 60 seeded runs all end with Done, no defect", () =>
    Effect.gen(function*() {
      for (let seed = 1000; seed < 1060; seed++) {
        const { chaos, exit } = yield* runOnce(seed, "json")
        if (Exit.isFailure(exit)) assert.fail(`seed ${seed}: the run died: ${Cause.pretty(exit.cause)}`)
        checkRun(seed, Chunk.toReadonlyArray(exit.value), chaos)
      }
    }), 60_000)
})
