/**
 * What the run guarantees whatever its services do: a defect from any custom
 * layer still ends the stream with `Done` (after `RunFailed` when the run
 * cannot go on); stopping the consumer interrupts the run; the effects of a
 * parallel round are applied in request order whatever order the calls finish
 * in; FiberRefs reach tools; a tool that fails oddly fails alone.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Hooks from "../src/Hooks.js"
import * as Interrupts from "../src/Interrupts.js"
import type { LlmService } from "../src/Llm.js"
import { Llm } from "../src/Llm.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as Recorder from "../src/Recorder.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import * as Toolkit from "../src/Toolkit.js"
import { addTool, makeAgent, messagesOf, noHooks, recordingGuard } from "./utils/agentLayers.js"
import { recordingAgent } from "./utils/replayLayers.js"

const events = (input: ReactAgent.RunInput = { query: "q" }) =>
  Effect.flatMap(ReactAgent.ReactAgent, (agent) => Stream.runCollect(agent.run(input))).pipe(
    Effect.map(Chunk.toReadonlyArray)
  )

const tags = (es: ReadonlyArray<RunEvent>) => es.map((e) => e._tag)

const boom = () => new Error("boom from a custom layer")

/** An agent whose services are the real ones except `custom`. */
const agentWith = (custom: {
  readonly llm?: LlmService
  readonly hooks?: Hooks.HooksService
  readonly guard?: ContextGuard.ContextGuardService
  readonly interrupts?: Interrupts.InterruptsService
  readonly tools?: ReadonlyArray<Tool.Tool>
}) => {
  const llm = custom.llm ??
    ScriptedLlm.makeUnsafe([ScriptedLlm.toolCall("add", { a: 1, b: 2 }), ScriptedLlm.text("3"), ScriptedLlm.text("3")])
      .service
  return ReactAgent.layer().pipe(
    Layer.provide(Layer.mergeAll(
      Layer.succeed(Llm, llm),
      Toolkit.layer(custom.tools ?? [addTool]),
      custom.hooks ? Layer.succeed(Hooks.Hooks, custom.hooks) : noHooks,
      custom.guard ? Layer.succeed(ContextGuard.ContextGuard, custom.guard) : recordingGuard().layer,
      custom.interrupts ? Layer.succeed(Interrupts.Interrupts, custom.interrupts) : Interrupts.layerMemory
    )),
    Layer.orDie
  )
}

const realInterrupts = Effect.runSync(Interrupts.make)
const realGuard = ContextGuard.makeUnsafe()

describe("ReactAgent: a defect from any custom layer still ends with Done", () => {
  const fatal: ReadonlyArray<readonly [string, Parameters<typeof agentWith>[0]]> = [
    ["the LLM (chat dies)", { llm: { ...ScriptedLlm.makeUnsafe([]).service, chat: () => Effect.die(boom()) } }],
    ["the LLM (chat throws)", {
      llm: {
        ...ScriptedLlm.makeUnsafe([]).service,
        chat: () => {
          throw boom()
        }
      }
    }],
    ["the ContextGuard", { guard: { ...realGuard, fits: () => false, checkAndCompact: () => Effect.die(boom()) } }],
    ["the Interrupts (drain)", { interrupts: { ...realInterrupts, drain: () => Effect.die(boom()) } }],
    ["the Interrupts (register)", { interrupts: { ...realInterrupts, register: () => Effect.die(boom()) } }],
    ["the Interrupts (unregister)", { interrupts: { ...realInterrupts, unregister: () => Effect.die(boom()) } }]
  ]
  for (const [name, custom] of fatal) {
    it.effect(`${name}: RunFailed then Done, the stream does not fail`, () =>
      Effect.gen(function*() {
        const es = yield* events()
        const last = es[es.length - 1]
        assert.strictEqual(last._tag, "Done")
        const failed = es.find((e) => e._tag === "RunFailed")
        assert.isDefined(failed, tags(es).join(","))
        assert.strictEqual(es.indexOf(failed!), es.length - 2)
        if (failed?._tag === "RunFailed") assert.include(failed.message, "boom from a custom layer")
        assert.strictEqual(es.filter((e) => e._tag === "Done").length, 1)
      }).pipe(Effect.provide(agentWith(custom))))
  }

  const contained: ReadonlyArray<readonly [string, Parameters<typeof agentWith>[0], string]> = [
    ["a tool", {
      tools: [Tool.make({
        name: "add",
        description: "dies",
        parameters: Schema.Struct({ a: Schema.Number, b: Schema.Number }),
        handler: () => Effect.die(boom())
      })]
    }, "Error: Tool add crashed: boom from a custom layer"],
    ["the Hooks (Pre dies)", {
      hooks: { runPreToolUse: () => Effect.die(boom()), runPostToolUse: (_c, o) => Effect.succeed(o) }
    }, "Error: Blocked by PreToolUse: hook failed: boom from a custom layer"],
    ["the Hooks (Post dies)", {
      hooks: {
        runPreToolUse: (c) => Effect.succeed({ allow: true, args: c.args }),
        runPostToolUse: () => Effect.die(boom())
      }
    }, "3"]
  ]
  it.effect("a PreToolUse hook that interrupts itself in a parallel round: RunFailed then Done, every call still answered", () =>
    Effect.gen(function*() {
      const es = yield* events()
      assert.deepStrictEqual(tags(es).slice(-2), ["RunFailed", "Done"])
      const done = es[es.length - 1]
      assert.isTrue(
        done._tag === "Done" && (done.messages ?? []).filter((m) => m.role === "tool").length === 2,
        JSON.stringify(done)
      )
    }).pipe(Effect.provide(agentWith({
      llm: ScriptedLlm.makeUnsafe([
        ScriptedLlm.toolCalls([{ id: "a", name: "add", arguments: { a: 1, b: 2 } }, {
          id: "b",
          name: "add",
          arguments: { a: 3, b: 4 }
        }]),
        ScriptedLlm.text("done"),
        ScriptedLlm.text("done")
      ]).service,
      hooks: {
        runPreToolUse: (c) => c.toolCallId === "b" ? Effect.interrupt : Effect.succeed({ allow: true, args: c.args }),
        runPostToolUse: (_c, o) => Effect.succeed(o)
      }
    }))))

  for (const [name, custom, observation] of contained) {
    it.effect(`${name}: the call's observation says so, the run goes on to Done`, () =>
      Effect.gen(function*() {
        const es = yield* events()
        assert.strictEqual(es[es.length - 1]._tag, "Done")
        assert.isFalse(es.some((e) => e._tag === "RunFailed"))
        const done = es.find((e) => e._tag === "ToolDone")
        assert.isTrue(done?._tag === "ToolDone" && done.observation === observation, JSON.stringify(done))
      }).pipe(Effect.provide(agentWith(custom))))
  }

  it.effect("stopping the consumer interrupts the run (the LLM call and the tools)", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const interrupted = yield* Deferred.make<void>()
      const hang = Tool.make({
        name: "hang",
        description: "waits",
        parameters: Schema.Struct({}),
        handler: () =>
          Deferred.succeed(started, undefined).pipe(
            Effect.zipRight(Effect.never),
            Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
          )
      })
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.toolCall("hang", {}), ScriptedLlm.text("never")])
      const agent = yield* ReactAgent.ReactAgent.pipe(Effect.provide(agentWith({ llm: llm.service, tools: [hang] })))
      const fiber = yield* agent.run({ query: "q" }).pipe(Stream.runDrain, Effect.fork)
      yield* Deferred.await(started)
      yield* Fiber.interrupt(fiber)
      yield* Deferred.await(interrupted)
      assert.strictEqual(llm.calls, 1)
    }))

  /** Runs the script, takes the first event only; how many LLM calls the run made before it stopped. */
  const callsAfterFirstEvent = (script: ReadonlyArray<ScriptedLlm.ScriptStep>) =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe(script)
      const agent = yield* ReactAgent.ReactAgent.pipe(Effect.provide(agentWith({ llm: llm.service })))
      const first = yield* agent.run({ query: "q" }).pipe(Stream.take(1), Stream.runCollect)
      assert.deepStrictEqual(tags(Chunk.toReadonlyArray(first)), ["ThinkingStart"])
      return llm.calls
    })

  it.effect("taking the first events only ends a run whose model and tools are instant within an iteration", () =>
    Effect.gen(function*() {
      // nothing here waits, so the run learns that its consumer left at its next suspension (awaiting its tool)
      const calls = yield* callsAfterFirstEvent([
        ScriptedLlm.toolCall("add", { a: 1, b: 2 }),
        ScriptedLlm.toolCall("add", { a: 3, b: 4 }),
        ScriptedLlm.text("10"),
        ScriptedLlm.text("10")
      ])
      assert.isAtMost(calls, 2)
    }))

  it.effect("taking the first events only (Stream.take) ends the run", () =>
    Effect.gen(function*() {
      // the model takes its time, as a real one does: the run is interrupted while it waits
      const calls = yield* callsAfterFirstEvent([
        ScriptedLlm.toolCall("add", { a: 1, b: 2 }, { delay: "1 second" }),
        ScriptedLlm.text("3"),
        ScriptedLlm.text("3")
      ])
      assert.isAtMost(calls, 1)
    }))
})

describe("ReactAgent: a parallel round is applied in request order", () => {
  const sized = (name: string, delay: number) =>
    Tool.make({
      name,
      description: "a large result, after a delay",
      parameters: Schema.Struct({}),
      handler: () => Effect.as(Effect.sleep(delay), `${name}:${"x".repeat(400)}`)
    })

  for (const order of [["slow", "fast"], ["fast", "slow"]] as const) {
    it.effect(`the tool-result budget goes to the first call in the request (${order.join(" before ")})`, () => {
      const h = makeAgent([
        ScriptedLlm.toolCalls(order.map((name) => ({ id: name, name, arguments: {} }))),
        ScriptedLlm.text("done"),
        ScriptedLlm.text("done")
      ], {
        tools: [sized("slow", 300), sized("fast", 10)],
        // room for one whole result (≈ 101 tokens) and a little of the next
        agent: { toolResultBudget: 120, completionCheck: false }
      })
      return Effect.gen(function*() {
        const fiber = yield* Effect.fork(Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "q" })))
        yield* TestClock.adjust(1000)
        const result = yield* Fiber.join(fiber)
        const tool = messagesOf(h, 1).filter((m) => m.role === "tool")
        assert.deepStrictEqual(tool.map((m) => m.role === "tool" && m.tool_call_id), [...order])
        const [first, second] = tool.map((m) => String(m.content))
        assert.isTrue(first.startsWith(`${order[0]}:xxx`) && !first.includes("[Truncated"), first)
        assert.include(second, "[Truncated: the tool-result budget of 120 tokens")
        // steps in request order too, whichever finished first
        assert.deepStrictEqual(result.steps.map((s) => s.tool_name), [...order])
      }).pipe(Effect.provide(h.layer))
    })
  }
})

describe("ReactAgent: tools run inside the run's fiber tree", () => {
  const Tenant = FiberRef.unsafeMake("none")
  it.effect("a FiberRef set around the run reaches the tool, in both round shapes", () => {
    const seen: Array<string> = []
    const whoami = Tool.make({
      name: "whoami",
      description: "reads the tenant",
      parameters: Schema.Struct({}),
      handler: () => Effect.map(FiberRef.get(Tenant), (t) => (seen.push(t), t))
    })
    const h = makeAgent([
      ScriptedLlm.toolCall("whoami", {}),
      ScriptedLlm.toolCalls([{ name: "whoami", arguments: {} }, { name: "whoami", arguments: {} }]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("done")
    ], { tools: [whoami], agent: { completionCheck: false } })
    return Effect.gen(function*() {
      yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runDrain(a.run({ query: "q" }))).pipe(
        Effect.locally(Tenant, "acme")
      )
      assert.deepStrictEqual(seen, ["acme", "acme", "acme"])
    }).pipe(Effect.provide(h.layer))
  })
})

describe("ReactAgent: a tool that fails oddly fails alone", () => {
  const odd = (name: string, handler: () => unknown) =>
    Tool.make({ name, description: name, parameters: Schema.Struct({}), handler: handler as never })
  const tools = [
    // a failure whose message is not a string
    odd("weird_error", () => Effect.fail({ _tag: "ToolError", message: { code: 42 } })),
    // a result that cannot be serialised
    odd("bigint", () =>
      Effect.succeed({
        content: "chart",
        contentType: "html",
        artifacts: [{ name: "a.png", mimeType: "image/png", size: 10n }]
      })),
    // an async handler (a Promise, not an Effect) that rejects
    odd("rejects", () => Promise.reject(new Error("nope"))),
    // an async handler that resolves
    odd("resolves", () => Promise.resolve("fine")),
    // not an Effect at all
    odd("number", () => 42)
  ]
  it.live("each becomes that call's error observation; the run and its synthesis go on", () => {
    const h = makeAgent([
      ScriptedLlm.toolCalls(tools.map((t) => ({ id: t.name, name: t.name, arguments: {} }))),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("summary")
    ], { tools, agent: { completionCheck: false } })
    // a rejection nobody handles would reach the process
    const unhandled: Array<unknown> = []
    const onUnhandled = (reason: unknown) => void unhandled.push(reason)
    return Effect.gen(function*() {
      process.on("unhandledRejection", onUnhandled)
      const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "q" }))
      // the event loop turns over once: an unhandled rejection is reported by then
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
      assert.deepStrictEqual(unhandled, [], "no unhandled rejection")
      assert.isUndefined(result.error)
      assert.strictEqual(result.answer, "summary")
      const byName = Object.fromEntries(result.steps.map((s) => [s.tool_name, s]))
      assert.include(byName.weird_error.error, "42")
      assert.include(byName.bigint.error, "Tool bigint returned an invalid result")
      assert.include(byName.rejects.error, "Tool rejects failed: nope")
      assert.isNull(byName.resolves.error)
      assert.strictEqual(byName.resolves.observation, "fine")
      assert.include(byName.number.error, "not an Effect")
      for (const s of result.steps) assert.isString(s.observation)
    }).pipe(Effect.provide(h.layer), Effect.ensuring(Effect.sync(() => process.off("unhandledRejection", onUnhandled))))
  })

  it.live("recorded, each ends the same way, and the cassette stores how (one rule for a handler's result)", () => {
    const h = recordingAgent([
      ScriptedLlm.toolCalls(tools.map((t) => ({ id: t.name, name: t.name, arguments: {} }))),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("summary")
    ], { tools, agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const { cassette, result } = yield* Effect.flatMap(
        ReactAgent.ReactAgent,
        (agent) => Recorder.record(agent, { query: "q" })
      )
      const byName = Object.fromEntries(result.steps.map((s) => [s.tool_name, s]))
      assert.include(byName.rejects.error, "Tool rejects failed: nope")
      assert.strictEqual(byName.resolves.observation, "fine")
      assert.strictEqual(byName.number.error, "Tool number's handler returned number, not an Effect")
      const stored = Object.fromEntries(cassette.tool_calls.map((t) => [t.tool_name, t.outcome]))
      assert.deepStrictEqual(stored.number, {
        _tag: "Failure",
        message: "Tool number's handler returned number, not an Effect"
      })
      assert.deepStrictEqual(stored.resolves, { _tag: "Success", output: "fine" })
      assert.deepStrictEqual(stored.rejects, { _tag: "Failure", message: "Tool rejects failed: nope" })
    }).pipe(Effect.provide(h.layer))
  })
})
