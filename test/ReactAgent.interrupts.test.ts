import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { ChatMessage } from "../src/Message.js"
import { textOf } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import type { ScriptStep } from "../src/ScriptedLlm.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import { allTools, injectNow, jsonLlm, makeAgent, makeInterrupts } from "./utils/agentLayers.js"

const CID = "conv"
const runEvents = Effect.flatMap(
  ReactAgent.ReactAgent,
  (a) => Stream.runCollect(a.run({ query: "q", conversationId: CID }))
).pipe(
  Effect.map(Chunk.toArray)
)
const doneOf = (es: ReadonlyArray<RunEvent>) => {
  const done = es[es.length - 1]
  if (done._tag !== "Done") throw new Error("no Done")
  return done
}
const roles = (ms: ReadonlyArray<ChatMessage>) =>
  ms.map((m) => (m.role === "user" && textOf(m.content).startsWith("[USER INTERRUPT]") ? "interrupt" : m.role))

/** A script whose step `at` (0-based call index) injects `contents` while the model "thinks". */
const injecting = (script: ReadonlyArray<ScriptStep>, at: number, contents: ReadonlyArray<string>) => {
  const irq = makeInterrupts()
  const responder: ScriptedLlm.Responder = (_req, i) => {
    if (i === at) { for (const c of contents) injectNow(irq, CID, c) }
    return script[i] ?? ScriptedLlm.fail("Unknown", "script exhausted")
  }
  return { irq, responder }
}

describe("ReactAgent interrupts", () => {
  it.effect("JSON mode: drained right after the assistant message, before the observation", () => {
    const { irq, responder } = injecting(
      [
        ScriptedLlm.jsonToolCall("add", { a: 1, b: 2 }),
        ScriptedLlm.jsonFinal("3"),
        ScriptedLlm.text("3")
      ],
      0,
      ["also say hi"]
    )
    const h = makeAgent(responder, { llm: jsonLlm, interrupts: irq })
    return Effect.gen(function*() {
      const es = yield* runEvents
      const second = h.requests()[1].request.messages
      assert.deepStrictEqual(roles(second), ["system", "user", "assistant", "interrupt", "user"])
      assert.include(textOf(second[3].content), "also say hi")
      assert.isTrue(second[3].pinned === true)
      assert.include(textOf(second[4].content), "Observation: 3")
      const tags = es.map((e) => e._tag)
      assert.isBelow(tags.indexOf("Inject"), tags.indexOf("ToolStart"))
      const inject = es.find((e) => e._tag === "Inject")
      assert.deepStrictEqual(inject, { _tag: "Inject", content: "also say hi", id: "inj_1" })
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("JSON mode: an interrupt suppresses a pending final answer", () => {
    const { irq, responder } = injecting(
      [
        ScriptedLlm.jsonFinal("first"),
        ScriptedLlm.jsonFinal("second"),
        ScriptedLlm.text("synth")
      ],
      0,
      ["wait, one more thing"]
    )
    const h = makeAgent(responder, { llm: jsonLlm, interrupts: irq })
    return Effect.gen(function*() {
      const es = yield* runEvents
      assert.strictEqual(doneOf(es).iterations, 2)
      assert.deepStrictEqual(roles(h.requests()[1].request.messages), ["system", "user", "assistant", "interrupt"])
      assert.include(textOf(h.requests()[2].request.messages[1].content), "Draft answer:\nsecond")
      assert.include(textOf(h.requests()[2].request.messages[1].content), "wait, one more thing")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("native mode: drained after all tool messages (and after warnings), merged into one numbered message", () => {
    const same = ScriptedLlm.toolCalls([
      { id: "a", name: "add", arguments: { a: 1, b: 1 } },
      { id: "b", name: "echo", arguments: { text: "x" } }
    ])
    const { irq, responder } = injecting([same, same, same, ScriptedLlm.text("done"), ScriptedLlm.text("done")], 2, [
      "first",
      "second"
    ])
    const h = makeAgent(responder, { interrupts: irq, agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const es = yield* runEvents
      const fourth = h.requests()[3].request.messages
      const tail = roles(fourth).slice(-5)
      assert.deepStrictEqual(tail, ["tool", "tool", "user", "user", "interrupt"])
      const msg = textOf(fourth[fourth.length - 1].content)
      assert.isTrue(msg.startsWith("[USER INTERRUPT]"))
      assert.include(msg, "1. first\n2. second")
      assert.deepStrictEqual(es.filter((e) => e._tag === "Inject").map((e) => e._tag === "Inject" && e.content), [
        "first",
        "second"
      ])
      assert.strictEqual(fourth.filter((m) => textOf(m.content).startsWith("[USER INTERRUPT]")).length, 1)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("native mode: an interrupt suppresses a pending final answer", () => {
    const { irq, responder } = injecting(
      [ScriptedLlm.text("first"), ScriptedLlm.text("second"), ScriptedLlm.text("s")],
      0,
      [
        "more"
      ]
    )
    const h = makeAgent(responder, { interrupts: irq })
    return Effect.gen(function*() {
      const es = yield* runEvents
      assert.strictEqual(doneOf(es).iterations, 2)
      assert.deepStrictEqual(roles(h.requests()[1].request.messages), ["system", "user", "assistant", "interrupt"])
      assert.deepStrictEqual(doneOf(es).pending_injections, [])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a message injected during synthesis is reported in Done.pending_injections", () => {
    const { irq, responder } = injecting([ScriptedLlm.text("loop"), ScriptedLlm.text("answer")], 1, ["too late"])
    const h = makeAgent(responder, { interrupts: irq })
    return Effect.gen(function*() {
      const es = yield* runEvents
      assert.deepStrictEqual(doneOf(es).pending_injections, [{ id: "inj_1", content: "too late" }])
      assert.strictEqual(doneOf(es).conversation_id, CID)
      assert.isFalse(yield* irq.isActive(CID))
    }).pipe(Effect.provide(h.layer))
  })

  it.live("cancel: tools interrupted, every call answered in the trace, the stream ends with Done", () => {
    let interrupted = 0
    const slow = Tool.make({
      name: "slow",
      description: "slow",
      parameters: Schema.Struct({}),
      handler: () => Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => interrupted++)))
    })
    const h = makeAgent([
      ScriptedLlm.toolCalls([{ id: "s1", name: "slow", arguments: {} }, { id: "s2", name: "slow", arguments: {} }])
    ], { tools: [...allTools, slow] })
    return Effect.gen(function*() {
      const agent = yield* ReactAgent.ReactAgent
      const es = Chunk.toArray(yield* Stream.runCollect(agent.run({ query: "q", cancel: Effect.sleep("100 millis") })))
      const done = doneOf(es)
      assert.strictEqual(interrupted, 2)
      assert.isFalse(es.some((e) => e._tag === "RunFailed"))
      const tools = (done.messages ?? []).filter((m) => m.role === "tool")
      assert.deepStrictEqual(tools.map((m) => m.role === "tool" && [m.tool_call_id, m.content]), [
        ["s1", "Error: interrupted"],
        ["s2", "Error: interrupted"]
      ])
    }).pipe(Effect.provide(h.layer))
  })

  it.live("cancel mid-round: a call that finished has sent its ToolDone, the slow one is stopped; every call answered once, Done last", () => {
    let stopped = 0
    const slow = Tool.make({
      name: "slow",
      description: "slow",
      parameters: Schema.Struct({}),
      handler: () => Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => stopped++)))
    })
    const h = makeAgent([
      ScriptedLlm.toolCalls([{ id: "s1", name: "slow", arguments: {} }, {
        id: "a1",
        name: "add",
        arguments: { a: 1, b: 2 }
      }])
    ], { tools: [...allTools, slow] })
    return Effect.gen(function*() {
      const agent = yield* ReactAgent.ReactAgent
      const es = Chunk.toArray(yield* Stream.runCollect(agent.run({ query: "q", cancel: Effect.sleep("100 millis") })))
      const tags = es.map((e) =>
        e._tag === "ToolDone" || e._tag === "ToolStart" ? `${e._tag} ${e.tool_call_id}` : e._tag
      )
      // the fast call's ToolDone went out as it finished, while the slow one still ran
      assert.deepStrictEqual(tags.filter((t) => t.startsWith("Tool")), ["ToolStart s1", "ToolStart a1", "ToolDone a1"])
      assert.strictEqual(tags[tags.length - 1], "Done")
      assert.strictEqual(stopped, 1, "the slow tool was interrupted (and awaited) before Done")
      const tools = (doneOf(es).messages ?? []).filter((m) => m.role === "tool")
      assert.deepStrictEqual(tools.map((m) => m.role === "tool" && m.tool_call_id), ["s1", "a1"])
    }).pipe(Effect.provide(h.layer))
  })

  it.live("interrupting the consumer interrupts the loop (tools too) and releases the conversation", () => {
    let interrupted = false
    const started = Effect.runSync(Deferred.make<void>())
    const slow = Tool.make({
      name: "slow",
      description: "slow",
      parameters: Schema.Struct({}),
      handler: () =>
        Deferred.succeed(started, undefined).pipe(
          Effect.zipRight(Effect.never),
          Effect.onInterrupt(() => Effect.sync(() => (interrupted = true)))
        )
    })
    const irq = makeInterrupts()
    const h = makeAgent([ScriptedLlm.toolCall("slow", {})], { tools: [slow], interrupts: irq })
    return Effect.gen(function*() {
      const agent = yield* ReactAgent.ReactAgent
      const fiber = yield* Effect.fork(Stream.runDrain(agent.run({ query: "q", conversationId: "c2" })))
      yield* Deferred.await(started)
      assert.isTrue(yield* irq.isActive("c2"))
      yield* Fiber.interrupt(fiber)
      assert.isTrue(interrupted)
      assert.isFalse(yield* irq.isActive("c2"))
    }).pipe(Effect.provide(h.layer))
  })
})
