/**
 * Synthesis policy `auto` (the default) beside `always`: who writes the answer,
 * which calls stream, what is retracted, and that every harness guarantee
 * (checklist, interrupts, fallbacks, usage, `Done` last) holds under both.
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Stream from "effect/Stream"
import * as AgentConfig from "../src/AgentConfig.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import { settledAnswers } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { injectNow, jsonLlm, makeAgent, makeInterrupts } from "./utils/agentLayers.js"

const auto = { synthesis: "auto" } as const

const runEvents = (query = "q", conversationId?: string) =>
  Effect.flatMap(
    ReactAgent.ReactAgent,
    (a) => Stream.runCollect(a.run({ query, ...(conversationId ? { conversationId } : {}) }))
  ).pipe(
    Effect.map(Chunk.toArray)
  )

const tags = (es: ReadonlyArray<RunEvent>) => es.map((e) => e._tag)
const doneOf = (es: ReadonlyArray<RunEvent>) => {
  const done = es[es.length - 1]
  if (done._tag !== "Done") throw new Error(`last event is ${done._tag}`)
  return done
}
/** What a client shows as the answer: the deltas after the last reset. */
const shownAnswer = (es: ReadonlyArray<RunEvent>) => {
  let text = ""
  for (const e of es) {
    if (e._tag === "AnswerDelta") text += e.content
    else if (e._tag === "AnswerReset") text = ""
  }
  return text
}
/** Text before a tool call (retracted under `auto`), then the answer. */
const preambleThenAnswer = [
  ScriptedLlm.toolCall("add", { a: 2, b: 2 }, { content: "Let me compute that." }),
  ScriptedLlm.text("2 + 2 = 4")
]
const methods = (h: { requests: () => ReadonlyArray<{ method: string }> }) => h.requests().map((r) => r.method)

describe("synthesis policy auto", () => {
  it.effect("no tools: one streamed call is the answer, shown before the loop ends; no synthesis call", () => {
    const h = makeAgent([ScriptedLlm.text("The answer is **4**.")], { agent: auto })
    return Effect.gen(function*() {
      const es = yield* runEvents()
      assert.deepStrictEqual(methods(h), ["stream"])
      const t = tags(es)
      // the answer streams inside iteration 1, before its ThinkingDone
      assert.isBelow(t.indexOf("AnswerStart"), t.indexOf("ThinkingDone"))
      assert.deepStrictEqual(t.slice(t.indexOf("ThinkingDone")), ["ThinkingDone", "AnswerSignal", "AnswerDone", "Done"])
      const done = doneOf(es)
      assert.strictEqual(done.answer, "The answer is **4**.")
      assert.strictEqual(shownAnswer(es), done.answer)
      assert.strictEqual(done.usage.llm_calls, 1)
      assert.deepStrictEqual(Object.keys(done.usage.by_phase), ["loop"])
      assert.notInclude(t, "AnswerReset")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("always: the same question costs a second, synthesis call that writes the answer", () => {
    const h = makeAgent([ScriptedLlm.text("loop"), ScriptedLlm.text("synthesized")], { agent: { synthesis: "always" } })
    return Effect.gen(function*() {
      const es = yield* runEvents()
      assert.deepStrictEqual(methods(h), ["chat", "stream"])
      assert.strictEqual(doneOf(es).answer, "synthesized")
      assert.strictEqual(doneOf(es).usage.llm_calls, 2)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("text before a tool call is retracted; the answer after the tools streams and is not synthesized again", () => {
    const h = makeAgent(preambleThenAnswer, { agent: auto })
    return Effect.gen(function*() {
      const es = yield* runEvents()
      assert.deepStrictEqual(methods(h), ["stream", "stream"])
      const t = tags(es)
      const reset = t.indexOf("AnswerReset")
      assert.isAbove(reset, t.indexOf("AnswerDelta"))
      assert.isBelow(reset, t.indexOf("ToolStart"))
      // the retracted text is the step's reasoning
      const thought = es.find((e) => e._tag === "ThinkingDone")
      assert.strictEqual(thought?._tag === "ThinkingDone" ? thought.reasoning : "", "Let me compute that.")
      const done = doneOf(es)
      assert.strictEqual(done.answer, "2 + 2 = 4")
      assert.strictEqual(shownAnswer(es), "2 + 2 = 4")
      assert.strictEqual(done.usage.llm_calls, 2)
      // the tool call and its result are paired in the second request
      const second = h.requests()[1].request.messages
      assert.deepStrictEqual(second.slice(-2).map((m) => m.role), ["assistant", "tool"])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("an interrupt that arrives while the answer streams suppresses and retracts it; the next answer stands", () => {
    const interrupts = makeInterrupts()
    const h = makeAgent((_request, i) => {
      if (i === 0) injectNow(interrupts, "c1", "also in French")
      return ScriptedLlm.text(i === 0 ? "Four." : "Four. Quatre.")
    }, { agent: auto, interrupts })
    return Effect.gen(function*() {
      const es = yield* runEvents("2+2?", "c1")
      const t = tags(es)
      assert.deepStrictEqual(methods(h), ["stream", "stream"])
      assert.isBelow(t.indexOf("Inject"), t.indexOf("AnswerReset"))
      assert.strictEqual(t.filter((x) => x === "AnswerReset").length, 1)
      assert.strictEqual(doneOf(es).answer, "Four. Quatre.")
      assert.strictEqual(shownAnswer(es), "Four. Quatre.")
      assert.include(JSON.stringify(h.requests()[1].request.messages), "[USER INTERRUPT]")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("completion checklist: the reply it would hold back is not streamed; the answer after it is", () => {
    const h = makeAgent([
      ScriptedLlm.toolCall("add", { a: 1, b: 1 }),
      ScriptedLlm.toolCall("add", { a: 2, b: 2 }),
      ScriptedLlm.toolCall("add", { a: 3, b: 3 }),
      ScriptedLlm.text("draft"),
      ScriptedLlm.text("checked answer")
    ], { agent: auto })
    return Effect.gen(function*() {
      const es = yield* runEvents()
      // the first three stream (the checklist is not due before three tool calls), the fourth is the checklist's
      assert.deepStrictEqual(methods(h), ["stream", "stream", "stream", "chat", "stream"])
      assert.include(JSON.stringify(h.requests()[4].request.messages), "fully address")
      assert.notInclude(tags(es), "AnswerReset")
      assert.strictEqual(doneOf(es).answer, "checked answer")
      assert.strictEqual(shownAnswer(es), "checked answer")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a stream that breaks midway is retracted and the call made again without streaming; the run still answers", () => {
    const h = makeAgent([
      ScriptedLlm.text("half of an answer that", { failAfterChunks: { count: 2, reason: "Server" } }),
      ScriptedLlm.text("the whole answer")
    ], { agent: auto })
    return Effect.gen(function*() {
      const es = yield* runEvents()
      assert.deepStrictEqual(methods(h), ["stream", "chat"])
      const t = tags(es)
      assert.strictEqual(t.filter((x) => x === "AnswerReset").length, 1)
      assert.notInclude(t, "RunFailed")
      assert.strictEqual(doneOf(es).answer, "the whole answer")
      assert.strictEqual(shownAnswer(es), "the whole answer")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a stream that fails before any text goes to a plain call, nothing retracted", () => {
    const h = makeAgent([ScriptedLlm.fail("Server"), ScriptedLlm.text("fine")], { agent: auto })
    return Effect.gen(function*() {
      const es = yield* runEvents()
      assert.deepStrictEqual(methods(h), ["stream", "chat"])
      assert.notInclude(tags(es), "AnswerReset")
      assert.strictEqual(doneOf(es).answer, "fine")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a loop that ends without the model's answer (iteration cap) is still synthesized", () => {
    const h = makeAgent([
      ScriptedLlm.toolCall("add", { a: 1, b: 1 }),
      ScriptedLlm.toolCall("add", { a: 1, b: 1 }),
      ScriptedLlm.text("synthesized summary")
    ], { agent: auto })
    return Effect.gen(function*() {
      const es = yield* Effect.flatMap(
        ReactAgent.ReactAgent,
        (a) => Stream.runCollect(a.run({ query: "q", maxIterations: 2 }))
      )
        .pipe(Effect.map(Chunk.toArray))
      assert.deepStrictEqual(methods(h), ["stream", "stream", "stream"])
      const done = doneOf(es)
      assert.strictEqual(done.answer, "synthesized summary")
      assert.strictEqual(done.usage.by_phase.synthesis?.llm_calls, 1)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("JSON mode: no call streams; the model's final answer is emitted as the answer without a synthesis call", () => {
    const h = makeAgent([ScriptedLlm.jsonToolCall("add", { a: 1, b: 2 }), ScriptedLlm.jsonFinal("1 + 2 = 3")], {
      agent: auto,
      llm: jsonLlm
    })
    return Effect.gen(function*() {
      const es = yield* runEvents()
      assert.deepStrictEqual(methods(h), ["chat", "chat"])
      assert.strictEqual(doneOf(es).answer, "1 + 2 = 3")
      assert.strictEqual(shownAnswer(es), "1 + 2 = 3")
      const t = tags(es)
      assert.deepStrictEqual(t.slice(t.indexOf("AnswerSignal"), t.indexOf("AnswerDelta")), [
        "AnswerSignal",
        "AnswerStart"
      ])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("JSON mode: a reply that never parses is synthesized (its raw text is no answer to show)", () => {
    const h = makeAgent([ScriptedLlm.text("not json"), ScriptedLlm.text("still not json"), ScriptedLlm.text("clean")], {
      agent: auto,
      llm: jsonLlm
    })
    return Effect.gen(function*() {
      const es = yield* runEvents()
      assert.deepStrictEqual(methods(h), ["chat", "chat", "stream"])
      assert.strictEqual(doneOf(es).answer, "clean")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("the usage of every call is counted under both policies", () => {
    const script = [ScriptedLlm.toolCall("add", { a: 1, b: 1 }), ScriptedLlm.text("2"), ScriptedLlm.text("two")]
    return Effect.gen(function*() {
      for (const synthesis of ["auto", "always"] as const) {
        const h = makeAgent(script, { agent: { synthesis } })
        const done = doneOf(yield* runEvents().pipe(Effect.provide(h.layer)))
        assert.strictEqual(done.usage.llm_calls, h.requests().length, synthesis)
        const sum = Object.values(done.usage.by_phase).reduce((n, u) => n + (u?.total_tokens ?? 0), 0)
        assert.strictEqual(done.usage.total_tokens, sum, synthesis)
      }
    })
  })

  it.effect("settledAnswers: what an append-only consumer sees holds no retracted text", () => {
    const h = makeAgent(preambleThenAnswer, { agent: auto })
    return Effect.gen(function*() {
      const settle = settledAnswers()
      const es = (yield* runEvents()).flatMap(settle)
      const t = tags(es)
      assert.notInclude(t, "AnswerReset")
      assert.strictEqual(
        es.filter((e) => e._tag === "AnswerDelta").map((e) => e._tag === "AnswerDelta" ? e.content : "").join(""),
        "2 + 2 = 4"
      )
      assert.deepStrictEqual(t.slice(t.indexOf("AnswerSignal"), t.indexOf("AnswerSignal") + 2), [
        "AnswerSignal",
        "AnswerStart"
      ])
      assert.strictEqual(t[t.length - 1], "Done")
    }).pipe(Effect.provide(h.layer))
  })
})

describe("synthesis policy configuration", () => {
  it.effect("auto by default; REACT_SYNTHESIS=always from the environment; an explicit option wins", () =>
    Effect.gen(function*() {
      assert.strictEqual((yield* AgentConfig.resolve()).synthesis, "auto")
      const env = ConfigProvider.fromMap(new Map([["REACT_SYNTHESIS", "always"]]))
      assert.strictEqual((yield* Effect.withConfigProvider(AgentConfig.load(), env)).synthesis, "always")
      assert.strictEqual(
        (yield* Effect.withConfigProvider(AgentConfig.load({ synthesis: "auto" }), env)).synthesis,
        "auto"
      )
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.effect("an invalid value is a ConfigError naming the variable", () =>
    Effect.gen(function*() {
      const env = ConfigProvider.fromMap(new Map([["REACT_SYNTHESIS", "sometimes"]]))
      const exit = yield* Effect.exit(Effect.withConfigProvider(AgentConfig.load(), env))
      assert.isTrue(Exit.isFailure(exit))
      assert.include(String(Exit.isFailure(exit) ? exit.cause : ""), "REACT_SYNTHESIS")
      const bad = yield* Effect.exit(AgentConfig.resolve({ synthesis: "never" as never }))
      assert.include(String(Exit.isFailure(bad) ? bad.cause : ""), "synthesis")
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})
