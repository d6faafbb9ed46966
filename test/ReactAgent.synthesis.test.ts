import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { buildMessages, FALLBACK_SEPARATOR } from "../src/AnswerSynthesis.js"
import * as Message from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { jsonLlm, makeAgent } from "./utils/agentLayers.js"

const runEvents = (query: string, history?: ReadonlyArray<Message.ChatMessage>) =>
  Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runCollect(a.run({ query, ...(history ? { history } : {}) })))
    .pipe(
      Effect.map(Chunk.toArray)
    )
const deltas = (es: ReadonlyArray<RunEvent>) => es.flatMap((e) => (e._tag === "AnswerDelta" ? [e.content] : []))
const answerOf = (es: ReadonlyArray<RunEvent>) => {
  const done = es[es.length - 1]
  return done._tag === "Done" ? done.answer : "(no done)"
}

describe("ReactAgent answer synthesis", () => {
  it.effect("the synthesis prompt has the question and the full trace, JSON observations cut at 2000 chars", () => {
    const h = makeAgent([
      ScriptedLlm.jsonToolCall("big", { size: 3000 }),
      ScriptedLlm.jsonToolCall("fail"),
      ScriptedLlm.jsonFinal("loop answer"),
      ScriptedLlm.text("final")
    ], { llm: jsonLlm })
    return Effect.gen(function*() {
      const es = yield* runEvents("how big?")
      const synth = h.requests()[3]
      assert.strictEqual(synth.method, "stream")
      const [system, user] = synth.request.messages
      assert.strictEqual(system.role, "system")
      assert.include(Message.textOf(system.content), "same language as the question")
      const text = Message.textOf(user.content)
      assert.include(text, "Question:\nhow big?")
      assert.include(text, "Step 1: big\nArguments: {\"size\":3000}")
      assert.include(text, "x".repeat(2000) + "… [truncated, 1000 more chars]")
      assert.notInclude(text, "x".repeat(2001))
      assert.include(text, "Step 2: fail")
      assert.include(text, "Error: it broke")
      assert.include(text, "Draft answer:\nloop answer")
      assert.strictEqual(answerOf(es), "final")
      // the loop's own message list is not what synthesis receives
      assert.isUndefined(synth.request.tools)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("toolObsTruncation option and history are honoured", () => {
    const h = makeAgent([ScriptedLlm.toolCall("big", { size: 500 }), ScriptedLlm.text("x"), ScriptedLlm.text("y")], {
      agent: { toolObsTruncation: 100 }
    })
    return Effect.gen(function*() {
      yield* runEvents("q2", [Message.user("earlier q"), Message.assistant("earlier a")])
      const messages = h.requests()[2].request.messages
      assert.deepStrictEqual(messages.slice(1, 3), [Message.user("earlier q"), Message.assistant("earlier a")])
      const text = Message.textOf(messages[3].content)
      assert.include(text, "x".repeat(100) + "… [truncated, 400 more chars]")
      assert.deepStrictEqual(h.requests()[0].request.messages.slice(1, 3), [
        Message.user("earlier q"),
        Message.assistant("earlier a")
      ])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("failure before the first token: the loop answer is emitted intact as deltas, no error event", () => {
    const loopAnswer = "  The answer:\n\n- one  two\tthree  "
    const h = makeAgent([ScriptedLlm.text(loopAnswer), ScriptedLlm.fail("Server")])
    return Effect.gen(function*() {
      const es = yield* runEvents("q")
      assert.strictEqual(deltas(es).join(""), loopAnswer)
      assert.isAbove(deltas(es).length, 1)
      assert.isFalse(es.some((e) => e._tag === "RunFailed"))
      assert.strictEqual(answerOf(es), loopAnswer)
      const tags = es.map((e) => e._tag)
      assert.deepStrictEqual(tags.slice(-3), ["AnswerDelta", "AnswerDone", "Done"])
      assert.strictEqual(tags.filter((t) => t === "AnswerStart").length, 1)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("an empty synthesis falls back to the loop answer", () => {
    const h = makeAgent([ScriptedLlm.text("loop says"), ScriptedLlm.text("")])
    return Effect.gen(function*() {
      const es = yield* runEvents("q")
      assert.strictEqual(deltas(es).join(""), "loop says")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("failure midway: completed from the loop answer without repeating what was sent", () => {
    const h = makeAgent([
      ScriptedLlm.text("The answer is 42."),
      ScriptedLlm.text("The answer is 42.", {
        chunks: ["The ", "answer ", "is ", "42."],
        failAfterChunks: { count: 2, reason: "Connection" }
      })
    ])
    return Effect.gen(function*() {
      const es = yield* runEvents("q")
      assert.strictEqual(deltas(es).join(""), "The answer is 42.")
      assert.deepStrictEqual(deltas(es).slice(0, 2), ["The ", "answer "])
      assert.strictEqual(answerOf(es), "The answer is 42.")
      assert.isFalse(es.some((e) => e._tag === "RunFailed"))
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("failure midway on a different text: separator + loop answer, what was sent is kept", () => {
    const h = makeAgent([
      ScriptedLlm.text("Loop: 42"),
      ScriptedLlm.text("Synth 42 is", {
        chunks: ["Synth ", "42 ", "is"],
        failAfterChunks: { count: 2, reason: "Timeout" }
      })
    ])
    return Effect.gen(function*() {
      const es = yield* runEvents("q")
      assert.strictEqual(deltas(es).join(""), "Synth 42 " + FALLBACK_SEPARATOR + "Loop: 42")
      assert.strictEqual(answerOf(es), "Synth 42 " + FALLBACK_SEPARATOR + "Loop: 42")
    }).pipe(Effect.provide(h.layer))
  })

  it.live("deltas are forwarded as they arrive (no buffering)", () => {
    const h = makeAgent([
      ScriptedLlm.text("loop"),
      ScriptedLlm.text("a b c", { chunks: ["a ", "b ", "c"], chunkDelay: "80 millis" })
    ])
    return Effect.gen(function*() {
      const stamps: Array<number> = []
      yield* Effect.flatMap(ReactAgent.ReactAgent, (a) =>
        Stream.runDrain(
          a.run({ query: "q" }).pipe(
            Stream.tap((e) => Effect.sync(() => e._tag === "AnswerDelta" && stamps.push(Date.now())))
          )
        ))
      assert.strictEqual(stamps.length, 3)
      assert.isAtLeast(stamps[2] - stamps[0], 120)
    }).pipe(Effect.provide(h.layer))
  })

  it("buildMessages keeps image parts of a multimodal question", () => {
    const messages = buildMessages({
      question: [{ type: "text", text: "what is this?" }, { type: "image_url", image_url: { url: "data:x" } }],
      steps: [],
      loopAnswer: ""
    })
    const last = messages[messages.length - 1]
    assert.isTrue(Array.isArray(last.content))
    assert.include(Message.textOf(last.content), "what is this?")
    assert.include(Message.textOf(last.content), "no tools were used")
  })
})
