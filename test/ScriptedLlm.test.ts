import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import type { ChatDelta, ChatRequest } from "../src/Llm.js"
import { Llm, LlmError } from "../src/Llm.js"
import * as Message from "../src/Message.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"

const req = (text: string): ChatRequest => ({ messages: [Message.user(text)] })
const contentOf = (deltas: ReadonlyArray<ChatDelta>) =>
  deltas.flatMap((d) => (d._tag === "Content" ? [d.text] : [])).join("")
const collect = (s: Stream.Stream<ChatDelta, LlmError>) => Effect.map(Stream.runCollect(s), Chunk.toReadonlyArray)
const failure = <A>(effect: Effect.Effect<A, LlmError>) =>
  Effect.flatMap(
    Effect.either(effect),
    (e) => (Either.isLeft(e) ? Effect.succeed(e.left) : Effect.dieMessage("expected failure"))
  )

describe("ScriptedLlm", () => {
  it.effect("replays the script in order across chat and streamChat, recording requests", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([
        ScriptedLlm.toolCall("calculator", { expression: "2+2" }, { id: "c1" }),
        ScriptedLlm.text("The answer is 4."),
        ScriptedLlm.text("**4** it is")
      ], { model: "test-model" })
      const service = yield* Effect.provide(Llm, llm.layer)
      assert.strictEqual(service.model, "test-model")
      const first = yield* service.chat(req("2+2?"))
      assert.deepStrictEqual(first.toolCalls.map((c) => [c.id, c.name, c.arguments]), [[
        "c1",
        "calculator",
        "{\"expression\":\"2+2\"}"
      ]])
      assert.deepStrictEqual(first.toolCalls[0].parsed, Either.right({ expression: "2+2" }))
      assert.strictEqual(first.finishReason, "tool_calls")
      const second = yield* service.chat(req("again"))
      assert.strictEqual(second.content, "The answer is 4.")
      assert.strictEqual(second.finishReason, "stop")
      const deltas = yield* collect(service.streamChat(req("synth")))
      assert.strictEqual(contentOf(deltas), "**4** it is")
      assert.isAbove(deltas.filter((d) => d._tag === "Content").length, 1)
      assert.deepStrictEqual(deltas[deltas.length - 1], { _tag: "Finish", reason: "stop" })
      assert.deepStrictEqual(llm.requests.map((r) => [r.method, Message.textOf(r.request.messages[0].content)]), [
        ["chat", "2+2?"],
        ["chat", "again"],
        ["stream", "synth"]
      ])
      assert.strictEqual(llm.calls, 3)
    }))

  it.effect("invalid tool-call arguments are a recoverable Left", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([
        ScriptedLlm.toolCalls([{ name: "a", arguments: "{oops" }, { name: "b", arguments: "[1]" }, { name: "c" }])
      ])
      const response = yield* llm.service.chat(req("x"))
      assert.isTrue(Either.isLeft(response.toolCalls[0].parsed))
      assert.isTrue(Either.isLeft(response.toolCalls[1].parsed))
      assert.deepStrictEqual(response.toolCalls[2].parsed, Either.right({}))
      assert.strictEqual(new Set(response.toolCalls.map((c) => c.id)).size, 3)
    }))

  it.effect("failure steps fail with the scripted reason; the script goes on after them", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([
        ScriptedLlm.fail("RateLimited", "slow down"),
        ScriptedLlm.fail("ContextOverflow"),
        ScriptedLlm.text("ok")
      ])
      const a = yield* failure(llm.service.chat(req("1")))
      assert.instanceOf(a, LlmError)
      assert.strictEqual(a.reason, "RateLimited")
      assert.strictEqual(a.message, "slow down")
      assert.isTrue(a.retryable)
      const b = yield* failure(Stream.runDrain(llm.service.streamChat(req("2"))))
      assert.strictEqual(b.reason, "ContextOverflow")
      assert.strictEqual((yield* llm.service.chat(req("3"))).content, "ok")
    }))

  it.effect("an exhausted script fails clearly; repeatLast repeats", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("only")])
      yield* llm.service.chat(req("1"))
      const error = yield* failure(llm.service.chat(req("2")))
      assert.include(error.message, "script exhausted")
      assert.include(error.message, "call 2")
      assert.isFalse(error.retryable)
      const repeating = ScriptedLlm.makeUnsafe([ScriptedLlm.text("again")], { onExhausted: "repeatLast" })
      for (let i = 0; i < 3; i++) assert.strictEqual((yield* repeating.service.chat(req("x"))).content, "again")
    }))

  it.effect("explicit chunks, reasoning, tool calls and usage in a stream", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([
        ScriptedLlm.toolCall("search", { q: "x" }, {
          chunks: ["Look", "ing"],
          reasoning: "need data",
          usage: { prompt: 10, completion: 2 }
        })
      ])
      const deltas = yield* collect(llm.service.streamChat(req("x")))
      assert.deepStrictEqual(deltas[0], { _tag: "Reasoning", text: "need data" })
      assert.deepStrictEqual(deltas.slice(1, 3), [{ _tag: "Content", text: "Look" }, { _tag: "Content", text: "ing" }])
      const call = deltas.find((d) => d._tag === "ToolCall")
      assert.deepInclude(call, { index: 0, name: "search", arguments: "{\"q\":\"x\"}" })
      assert.deepInclude(deltas.find((d) => d._tag === "Usage"), {
        usage: { prompt_tokens: 10, completion_tokens: 2, total_tokens: 12, llm_calls: 1 }
      })
    }))

  it.effect("<think> blocks: reasoning in chat replies, Reasoning deltas in streams (not content)", () =>
    Effect.gen(function*() {
      const step = ScriptedLlm.text("<think>plan it</think> Final words here")
      const llm = ScriptedLlm.makeUnsafe([step, step])
      const reply = yield* llm.service.chat(req("x"))
      assert.strictEqual(reply.content, "Final words here")
      assert.strictEqual(reply.reasoning, "plan it")
      const deltas = yield* collect(llm.service.streamChat(req("x")))
      assert.strictEqual(contentOf(deltas), "Final words here")
      assert.strictEqual(deltas.flatMap((d) => (d._tag === "Reasoning" ? [d.text] : [])).join(""), "plan it")
    }))

  it.effect("failAfterChunks emits that many chunks, then fails", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([
        ScriptedLlm.text("", {
          chunks: ["a", "b", "c", "d"],
          failAfterChunks: { count: 2, reason: "Server", message: "cut" }
        })
      ])
      const seen: Array<ChatDelta> = []
      const error = yield* failure(
        Stream.runForEach(llm.service.streamChat(req("x")), (d) => Effect.sync(() => seen.push(d)))
      )
      assert.strictEqual(contentOf(seen), "ab")
      assert.strictEqual(error.reason, "Server")
      assert.strictEqual(error.message, "cut")
      assert.isUndefined(seen.find((d) => d._tag === "Finish"))
    }))

  it.effect("a responder computes replies from the request", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe((request, index, method) =>
        ScriptedLlm.text(
          `${method} #${index}: ${Message.textOf(request.messages[request.messages.length - 1].content).toUpperCase()}`
        )
      )
      assert.strictEqual((yield* llm.service.chat(req("hi"))).content, "chat #0: HI")
      assert.strictEqual(contentOf(yield* collect(llm.service.streamChat(req("yo")))), "stream #1: YO")
      assert.strictEqual(llm.requests.length, 2)
    }))

  it.effect("delays run on the clock (TestClock here)", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("late", { delay: "10 seconds" })])
      const fiber = yield* Effect.fork(llm.service.chat(req("x")))
      yield* TestClock.adjust("5 seconds")
      assert.isNull(yield* Fiber.poll(fiber).pipe(Effect.map((o) => (o._tag === "Some" ? "done" : null))))
      yield* TestClock.adjust("5 seconds")
      assert.strictEqual((yield* Fiber.join(fiber)).content, "late")
    }))

  it.effect("abilities and sizes are configurable; record: false records nothing", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("x")], {
        abilities: { toolCall: false },
        contextSize: 8000,
        maxOutputTokens: 1000,
        record: false
      })
      assert.isFalse(llm.service.abilities.toolCall)
      assert.isTrue(llm.service.abilities.jsonMode)
      assert.strictEqual(llm.service.contextSize, 8000)
      assert.strictEqual(llm.service.maxOutputTokens, 1000)
      yield* llm.service.chat(req("x"))
      assert.strictEqual(llm.requests.length, 0)
      assert.strictEqual(llm.calls, 1)
    }))

  it.effect("layer also provides the handle: the recorded requests inside Effect code", () =>
    Effect.gen(function*() {
      const program = Effect.gen(function*() {
        const llm = yield* Llm
        yield* llm.chat(req("q"))
        const handle = yield* ScriptedLlm.ScriptedLlmHandle
        return handle.requests.length
      })
      assert.strictEqual(yield* Effect.provide(program, ScriptedLlm.layer([ScriptedLlm.jsonFinal("done")])), 1)
    }))

  it.effect("each build of layer starts the script afresh (no state shared between builds)", () =>
    Effect.gen(function*() {
      const layer = ScriptedLlm.layer([ScriptedLlm.text("first"), ScriptedLlm.text("second")])
      const firstReply = Effect.flatMap(Llm, (llm) => llm.chat(req("q"))).pipe(Effect.map((r) => r.content))
      assert.strictEqual(yield* Effect.provide(firstReply, layer), "first")
      assert.strictEqual(yield* Effect.provide(firstReply, layer), "first")
    }))

  it.effect("JSON-mode helpers produce the protocol objects", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([
        ScriptedLlm.jsonToolCall("calc", { e: "1" }, "why"),
        ScriptedLlm.jsonFinal("42")
      ])
      assert.deepStrictEqual(JSON.parse((yield* llm.service.chat(req("x"))).content), {
        type: "tool_call",
        reasoning: "why",
        tool_name: "calc",
        tool_args: { e: "1" }
      })
      assert.deepStrictEqual(JSON.parse((yield* llm.service.chat(req("x"))).content), {
        type: "final_answer",
        reasoning: "",
        answer: "42"
      })
    }))

  it.effect("each build of ScriptedLlm.layer is a model of its own (with its own handle), at the start of the script", () =>
    Effect.gen(function*() {
      const layer = ScriptedLlm.layer([ScriptedLlm.text("first"), ScriptedLlm.text("second")])
      const reply = Effect.flatMap(Llm, (llm) => llm.chat(req("q")))
      // two programs given the same layer: each reads the script from its first step
      assert.strictEqual((yield* Effect.provide(reply, layer)).content, "first")
      assert.strictEqual((yield* Effect.provide(reply, layer)).content, "first")
      const both = Effect.zip(reply, reply)
      const [a, b] = yield* Effect.provide(both, layer)
      assert.deepStrictEqual([a.content, b.content], ["first", "second"], "within one build the position advances")
      const withHandle = ScriptedLlm.layer([ScriptedLlm.text("only")])
      const counted = Effect.zipRight(reply, Effect.map(ScriptedLlm.ScriptedLlmHandle, (h) => h.calls))
      assert.strictEqual(yield* Effect.provide(counted, withHandle), 1)
      assert.strictEqual(
        yield* Effect.provide(counted, withHandle),
        1,
        "a second build has its own handle and position"
      )
    }))
})
