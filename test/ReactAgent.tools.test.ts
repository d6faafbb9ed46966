import { assert, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as Hooks from "../src/Hooks.js"
import type { ChatMessage } from "../src/Message.js"
import { textOf } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import { allTools, jsonLlm, makeAgent, messagesOf } from "./utils/agentLayers.js"

const run = (query: string) => Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query }))
const toolMessages = (ms: ReadonlyArray<ChatMessage>) =>
  ms.flatMap((m) => (m.role === "tool" ? [[m.tool_call_id, m.content] as const] : []))

const hooks = Hooks.layer([
  Hooks.pre({
    name: "no-fail",
    matcher: "fail",
    run: () => Effect.succeed({ allow: false, reason: "not allowed here" })
  }),
  Hooks.pre({ name: "rewrite", matcher: "add", run: () => Effect.succeed({ allow: true, args: { a: 10, b: 20 } }) }),
  Hooks.post({
    name: "redact",
    matcher: "echo",
    run: (_ctx, outcome) =>
      Effect.succeed(outcome._tag === "Success" ? { _tag: "Success", output: "[redacted]" } : undefined)
  })
])

describe("ReactAgent tool calls", () => {
  it.live("native: every failing call is answered exactly once, in request order", () => {
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "unknown", name: "nope", arguments: {} },
        { id: "badjson", name: "add", arguments: "{not json" },
        { id: "notobj", name: "add", arguments: "[1,2]" },
        { id: "decode", name: "add", arguments: { a: "x", b: 1 } },
        { id: "toolerr", name: "fail", arguments: {} },
        { id: "defect", name: "crash", arguments: {} },
        { id: "timeout", name: "hang", arguments: {} },
        { id: "slow", name: "sleep", arguments: { ms: 5000 } },
        { id: "ok", name: "add", arguments: { a: 1, b: 2 } }
      ]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("done")
    ], { agent: { toolTimeout: "100 millis" } })
    return Effect.gen(function*() {
      const r = yield* run("q")
      const second = messagesOf(h, 1)
      const pairs = toolMessages(second)
      assert.deepStrictEqual(pairs.map(([id]) => id), [
        "unknown",
        "badjson",
        "notobj",
        "decode",
        "toolerr",
        "defect",
        "timeout",
        "slow",
        "ok"
      ])
      const byId = Object.fromEntries(pairs)
      assert.include(byId.unknown, "Error: Unknown tool \"nope\"")
      assert.include(byId.badjson, "Error: Invalid JSON in tool arguments")
      assert.include(byId.notobj, "Error: Tool arguments must be a JSON object")
      assert.include(byId.decode, "Error: Invalid arguments for add")
      assert.strictEqual(byId.toolerr, "Error: it broke")
      assert.include(byId.defect, "Error: Tool crash crashed: boom")
      assert.include(byId.timeout, "Error: Tool hang timed out after 50ms")
      assert.include(byId.slow, "Error: Tool sleep timed out after 100ms")
      assert.strictEqual(byId.ok, "3")
      assert.strictEqual(second[2].role, "assistant")
      assert.strictEqual(second.length, 3 + 9)
      assert.strictEqual(r.steps.filter((s) => s.error !== null).length, 8)
      const badjson = r.steps.find((s) => s.tool_call_id === "badjson")
      assert.strictEqual(badjson?.tool_args, "{not json")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("each call times out at its own deadline, on the test clock, whatever the order of the round", () => {
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "long", name: "sleep", arguments: { ms: 60_000 } },
        { id: "short", name: "hang", arguments: {} },
        { id: "quick", name: "sleep", arguments: { ms: 20 } },
        { id: "later", name: "sleep", arguments: { ms: 700 } }
      ]),
      ScriptedLlm.toolCall("hang", {}, { id: "again" }),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("done")
    ], { agent: { toolTimeout: "1 second" } })
    return Effect.gen(function*() {
      const fiber = yield* Effect.fork(run("q"))
      // "short" (its own 50 ms) comes due before "long" (the agent's 1 s), which the run's timer waits for
      for (let t = 0; t < 24; t++) yield* TestClock.adjust("50 millis")
      const r = yield* Fiber.join(fiber)
      const byId = Object.fromEntries(r.steps.map((s) => [s.tool_call_id, s]))
      assert.strictEqual(byId.long?.observation, "Error: Tool sleep timed out after 1s")
      assert.strictEqual(byId.long?.iter_elapsed, 1)
      assert.strictEqual(byId.short?.observation, "Error: Tool hang timed out after 50ms")
      assert.strictEqual(byId.short?.iter_elapsed, 0.05)
      assert.strictEqual(byId.quick?.observation, "slept 20")
      assert.strictEqual(byId.later?.observation, "slept 700")
      // the next round's call gets a deadline of its own again
      assert.strictEqual(byId.again?.observation, "Error: Tool hang timed out after 50ms")
      assert.strictEqual(r.answer, "done")
    }).pipe(Effect.provide(h.layer))
  })

  it.live("a tool's own shorter timeout fires even when the clock's sleep ends a little early (Node timers under load)", () => {
    // a clock whose sleeps end 10 ms before they should: the one-shot timer of a call whose deadline
    // is earlier than the run's timer wakes before its deadline and must sleep the rest, not give up
    const base = Clock.make()
    const early: Clock.Clock = {
      [Clock.ClockTypeId]: Clock.ClockTypeId,
      unsafeCurrentTimeMillis: () => base.unsafeCurrentTimeMillis(),
      unsafeCurrentTimeNanos: () => base.unsafeCurrentTimeNanos(),
      currentTimeMillis: base.currentTimeMillis,
      currentTimeNanos: base.currentTimeNanos,
      sleep: (d) => base.sleep(Duration.millis(Math.max(0, Duration.toMillis(d) - 10)))
    }
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "slow", name: "sleep", arguments: { ms: 200 } },
        { id: "timeout", name: "hang", arguments: {} }
      ]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("done")
    ], { agent: { toolTimeout: "60 seconds" } })
    return Effect.gen(function*() {
      yield* run("q").pipe(
        Effect.withClock(early),
        Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the 50 ms tool timeout never fired") })
      )
      const byId = Object.fromEntries(toolMessages(messagesOf(h, 1)))
      assert.include(byId.timeout, "Error: Tool hang timed out after 50ms")
      assert.strictEqual(byId.slow, "slept 200")
    }).pipe(Effect.provide(h.layer))
  })

  it.live("JSON mode: a ToolError, a defect and a timeout become error observations", () => {
    const h = makeAgent([
      ScriptedLlm.jsonToolCall("fail"),
      ScriptedLlm.jsonToolCall("crash"),
      ScriptedLlm.jsonToolCall("hang"),
      ScriptedLlm.jsonFinal("gave up"),
      ScriptedLlm.jsonFinal("gave up"),
      ScriptedLlm.text("gave up")
    ], { llm: jsonLlm })
    return Effect.gen(function*() {
      const r = yield* run("q")
      const obs = r.messages.filter((m) => m.role === "user" && textOf(m.content).startsWith("Observation:"))
      assert.deepStrictEqual(obs.map((m) => textOf(m.content)), [
        "Observation: Error: it broke",
        "Observation: Error: Tool crash crashed: boom",
        "Observation: Error: Tool hang timed out after 50ms"
      ])
      assert.strictEqual(r.answer, "gave up")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("native hooks: block, rewrite arguments, rewrite the result", () => {
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "f", name: "fail", arguments: {} },
        { id: "a", name: "add", arguments: { a: 1, b: 1 } },
        { id: "e", name: "echo", arguments: { text: "secret" } }
      ]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("done")
    ], { hooks })
    return Effect.gen(function*() {
      const r = yield* run("q")
      assert.deepStrictEqual(toolMessages(messagesOf(h, 1)), [
        ["f", "Error: Blocked by no-fail: not allowed here"],
        ["a", "30"],
        ["e", "[redacted]"]
      ])
      assert.deepStrictEqual(r.steps[1].tool_args, { a: 10, b: 20 })
      assert.strictEqual(r.steps[2].observation, "[redacted]")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("every call goes through the hooks service, Pre and Post", () => {
    const seen: Array<string> = []
    const service: Hooks.HooksService = {
      runPreToolUse: (context) =>
        Effect.sync(() => {
          seen.push(`pre ${context.toolName}`)
          return context.toolName === "echo"
            ? { allow: false, reason: "blocked", hook: "custom" }
            : { allow: true, args: context.args }
        }),
      runPostToolUse: (context) =>
        Effect.sync(() => {
          seen.push(`post ${context.toolName}`)
          return { _tag: "Success", output: "replaced" }
        })
    }
    const h = makeAgent([
      ScriptedLlm.toolCalls([{ id: "a", name: "add", arguments: { a: 1, b: 2 } }, {
        id: "e",
        name: "echo",
        arguments: { text: "hi" }
      }]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("done")
    ], { hooks: Layer.succeed(Hooks.Hooks, service) })
    return Effect.gen(function*() {
      const r = yield* run("q")
      assert.deepStrictEqual(r.steps.map((s) => s.observation), ["replaced", "Error: Blocked by custom: blocked"])
      // a blocked call never ran its tool: no Post hook for it
      assert.deepStrictEqual([...seen].sort(), ["post add", "pre add", "pre echo"])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("JSON hooks: block, rewrite arguments, rewrite the result", () => {
    const h = makeAgent([
      ScriptedLlm.jsonToolCall("fail"),
      ScriptedLlm.jsonToolCall("add", { a: 1, b: 1 }),
      ScriptedLlm.jsonToolCall("echo", { text: "secret" }),
      ScriptedLlm.jsonFinal("done"),
      ScriptedLlm.jsonFinal("done"),
      ScriptedLlm.text("done")
    ], { hooks, llm: jsonLlm })
    return Effect.gen(function*() {
      const r = yield* run("q")
      const obs = r.messages.filter((m) => m.role === "user" && textOf(m.content).startsWith("Observation:"))
      assert.deepStrictEqual(obs.map((m) => textOf(m.content)), [
        "Observation: Error: Blocked by no-fail: not allowed here",
        "Observation: 30",
        "Observation: [redacted]"
      ])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("hooks see the iteration, the tool call id and the conversation", () => {
    const seen: Array<unknown> = []
    const h = makeAgent([
      ScriptedLlm.toolCall("add", { a: 1, b: 1 }, { id: "x1" }),
      ScriptedLlm.text("2"),
      ScriptedLlm.text("2")
    ], {
      hooks: Hooks.layer([
        Hooks.pre({
          name: "spy",
          run: (ctx) =>
            Effect.sync(() => {
              seen.push([ctx.toolName, ctx.toolCallId, ctx.iteration, ctx.conversationId, ctx.tool?.name])
            })
        })
      ])
    })
    return Effect.gen(function*() {
      yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "q", conversationId: "conv-1" }))
      assert.deepStrictEqual(seen, [["add", "x1", 1, "conv-1", "add"]])
    }).pipe(Effect.provide(h.layer))
  })

  it.live("a dying hooks service, a tool returning garbage or interrupting itself: the call is still answered", () => {
    const dying = Layer.succeed(Hooks.Hooks, {
      runPreToolUse: (
        ctx
      ) => (ctx.toolName === "echo" ? Effect.die("pre exploded") : Effect.succeed({ allow: true, args: ctx.args })),
      runPostToolUse: () => Effect.die("post exploded")
    })
    const garbage = Tool.make({
      name: "garbage",
      description: "returns nonsense",
      parameters: Schema.Struct({}),
      handler: () => Effect.succeed(undefined as unknown as string)
    })
    const quitter = Tool.make({
      name: "quitter",
      description: "interrupts itself",
      parameters: Schema.Struct({}),
      handler: () => Effect.interrupt
    })
    const asyncQuitter = Tool.make({
      name: "async_quitter",
      description: "interrupts itself later",
      parameters: Schema.Struct({}),
      handler: () => Effect.zipRight(Effect.sleep("5 millis"), Effect.interrupt)
    })
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "e", name: "echo", arguments: { text: "x" } },
        { id: "a", name: "add", arguments: { a: 1, b: 1 } },
        { id: "g", name: "garbage", arguments: {} },
        { id: "q", name: "quitter", arguments: {} },
        { id: "aq", name: "async_quitter", arguments: {} }
      ]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("done")
    ], { hooks: dying, tools: [...allTools, garbage, quitter, asyncQuitter] })
    return Effect.gen(function*() {
      const r = yield* run("q")
      const pairs = toolMessages(messagesOf(h, 1))
      assert.deepStrictEqual(pairs.map(([id]) => id), ["e", "a", "g", "q", "aq"])
      assert.strictEqual(pairs[3][1], "Error: Tool quitter was interrupted")
      assert.strictEqual(pairs[4][1], "Error: Tool async_quitter was interrupted")
      assert.include(pairs[0][1], "Error: Blocked by PreToolUse: hook failed: pre exploded")
      assert.strictEqual(pairs[1][1], "2") // a failing Post hook keeps the observation
      assert.include(pairs[2][1], "Error: Tool garbage returned an invalid result")
      assert.isUndefined(r.error)
    }).pipe(Effect.provide(h.layer))
  })
})
