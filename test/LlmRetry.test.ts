/**
 * The retry notification (`Llm.withRetryObserver` / `notifyRetry`): OpenAiLlm
 * announces each retry with its number, reason and delay, on the fiber that
 * runs the call and the fibers it forks; non-retryable errors announce nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Chunk, Duration, Effect, Fiber, Layer, Stream } from "effect"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Hooks from "../src/Hooks.js"
import * as Interrupts from "../src/Interrupts.js"
import * as Llm from "../src/Llm.js"
import * as OpenAiLlm from "../src/OpenAiLlm.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as Toolkit from "../src/Toolkit.js"
import * as FakeOpenAi from "./utils/fakeOpenAiServer.js"

const message = [{ role: "user" as const, content: "hi" }]

describe("retry notification", () => {
  it.scopedLive("OpenAiLlm announces each retry (attempt, reason, delay) to the observer set around the call", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.error(429, "Rate limit reached", { type: "rate_limit_error", headers: { "retry-after-ms": "120" } }),
        FakeOpenAi.error(503, "overloaded"),
        FakeOpenAi.completion({ content: "after retries" })
      ])
      const llm = OpenAiLlm.makeUnsafe({
        model: "m",
        baseURL: server.url,
        apiKey: "k",
        retryBaseDelay: "5 millis",
        maxRetries: 3
      })
      const notices: Array<Llm.RetryNotice> = []
      // forked inside the observed region: the observer is inherited
      const response = yield* Effect.fork(llm.chat({ messages: message })).pipe(
        Effect.flatMap(Fiber.join),
        Llm.withRetryObserver((n) => Effect.sync(() => notices.push(n)))
      )
      assert.strictEqual(response.content, "after retries")
      assert.deepStrictEqual(notices.map((n) => [n.attempt, n.reason]), [[1, "RateLimited"], [2, "Server"]])
      assert.isAtLeast(notices[0].delayMs, 120, "the Retry-After wait is the announced delay")
      assert.isBelow(notices[1].delayMs, 120)
    }))

  it.scopedLive("no observer: retries happen silently; non-retryable errors announce nothing", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.error(503, "overloaded"),
        FakeOpenAi.completion({ content: "ok" }),
        FakeOpenAi.error(401, "bad key")
      ])
      const llm = OpenAiLlm.makeUnsafe({ model: "m", baseURL: server.url, apiKey: "k", retryBaseDelay: "5 millis" })
      assert.strictEqual((yield* llm.chat({ messages: message })).content, "ok")
      const notices: Array<Llm.RetryNotice> = []
      const failed = yield* llm.chat({ messages: message }).pipe(
        Llm.withRetryObserver((n) => Effect.sync(() => notices.push(n))),
        Effect.flip
      )
      assert.strictEqual(failed.reason, "Auth")
      assert.deepStrictEqual(notices, [])
    }))

  it.scopedLive("streamChat announces retries before its first chunk", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.error(503, "overloaded"),
        FakeOpenAi.sseText("hello")
      ])
      const llm = OpenAiLlm.makeUnsafe({ model: "m", baseURL: server.url, apiKey: "k", retryBaseDelay: "5 millis" })
      const notices: Array<Llm.RetryNotice> = []
      const text = yield* llm.streamChat({ messages: message }).pipe(
        Stream.runFold("", (acc, d) => (d._tag === "Content" ? acc + d.text : acc)),
        Llm.withRetryObserver((n) => Effect.sync(() => notices.push(n)))
      )
      assert.strictEqual(text, "hello")
      assert.deepStrictEqual(notices.map((n) => [n.attempt, n.reason]), [[1, "Server"]])
    }))
})

/**
 * A streamed loop call that fails is made again without streaming: one logical
 * model call, so the stream's retries and the fallback share one retry budget
 * (`LLM_MAX_RETRIES`) and one deadline (`LLM_TOTAL_TIMEOUT_MS`). Real agent,
 * real `openai` SDK, a local fake server that counts the requests.
 */
describe("one retry budget and one deadline per model call (stream-to-plain fallback)", () => {
  const agentOver = (llm: Llm.LlmService) =>
    ReactAgent.layer({ synthesis: "auto" }).pipe(
      Layer.provideMerge(Layer.mergeAll(
        Layer.succeed(Llm.Llm, llm),
        Toolkit.layer([]),
        Hooks.layerNoop,
        ContextGuard.layer(),
        Interrupts.layerMemory
      )),
      Layer.orDie
    )
  const run = (llm: Llm.LlmService) =>
    Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runCollect(a.run({ query: "hi" }))).pipe(
      Effect.map(Chunk.toArray),
      Effect.provide(agentOver(llm))
    )
  const retries = (es: ReadonlyArray<RunEvent>) =>
    es.flatMap((e) => (e._tag === "LlmRetry" ? [[e.attempt, e.reason] as const] : []))

  it.scopedLive("a refusing model with maxRetries 1: 2 requests in all (the streamed attempt and 1 retry), then the run fails", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped(() => FakeOpenAi.error(503, "overloaded"))
      const llm = OpenAiLlm.makeUnsafe({
        model: "m",
        baseURL: server.url,
        apiKey: "k",
        retryBaseDelay: "5 millis",
        maxRetries: 1
      })
      const es = yield* run(llm)
      assert.strictEqual(server.requests.length, 2, "1 + LLM_MAX_RETRIES requests, the fallback included")
      assert.strictEqual(server.requests[0].body.stream, true, "the loop call streams")
      assert.deepStrictEqual(retries(es), [[1, "Server"]])
      const failed = es.find((e) => e._tag === "RunFailed")
      assert.include(failed?._tag === "RunFailed" ? failed.message : "", "overloaded")
    }))

  it.scopedLive("a stream broken midway falls back as the call's next retry, numbered after the stream's own", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.error(503, "overloaded"),
        FakeOpenAi.sse([FakeOpenAi.chunk.role(), FakeOpenAi.chunk.content("partial "), FakeOpenAi.chunk.error("boom")]),
        FakeOpenAi.completion({ content: "the whole answer" })
      ])
      const llm = OpenAiLlm.makeUnsafe({
        model: "m",
        baseURL: server.url,
        apiKey: "k",
        retryBaseDelay: "5 millis",
        maxRetries: 2
      })
      const es = yield* run(llm)
      assert.deepStrictEqual(server.requests.map((r) => r.body.stream === true), [true, true, false])
      assert.deepStrictEqual(retries(es).map(([attempt]) => attempt), [1, 2], "numbered across the fallback")
      assert.isTrue(es.some((e) => e._tag === "AnswerReset"), "the partial answer is retracted")
      const done = es[es.length - 1]
      assert.strictEqual(done._tag === "Done" ? done.answer : undefined, "the whole answer")
    }))

  it.scopedLive("the same broken stream with its retries spent: no fallback, the run fails after 2 requests", () =>
    Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.error(503, "overloaded"),
        FakeOpenAi.sse([FakeOpenAi.chunk.role(), FakeOpenAi.chunk.content("partial "), FakeOpenAi.chunk.error("boom")]),
        FakeOpenAi.completion({ content: "never asked" })
      ])
      const llm = OpenAiLlm.makeUnsafe({
        model: "m",
        baseURL: server.url,
        apiKey: "k",
        retryBaseDelay: "5 millis",
        maxRetries: 1
      })
      const es = yield* run(llm)
      assert.strictEqual(server.requests.length, 2)
      assert.isTrue(es.some((e) => e._tag === "AnswerReset"), "the partial answer is retracted")
      assert.isTrue(es.some((e) => e._tag === "RunFailed"))
    }))

  it.scopedLive("a stalled model: the call fails with Timeout within LLM_TOTAL_TIMEOUT_MS, the fallback included", () =>
    Effect.gen(function*() {
      // accepts every request and never answers (no headers, no first chunk)
      const server = yield* FakeOpenAi.scoped(() => FakeOpenAi.hang)
      const capMs = 1500
      const llm = OpenAiLlm.makeUnsafe({
        model: "m",
        baseURL: server.url,
        apiKey: "k",
        retryBaseDelay: "5 millis",
        maxRetries: 3,
        timeout: "1 second",
        totalTimeout: Duration.millis(capMs)
      })
      const started = Date.now()
      const es = yield* run(llm)
      const elapsed = Date.now() - started
      const failed = es.find((e) => e._tag === "RunFailed")
      assert.include(failed?._tag === "RunFailed" ? failed.message : "", "timed out")
      assert.isAtLeast(elapsed, capMs - 50)
      assert.isBelow(elapsed, capMs * 1.5, `failed after ${elapsed} ms, cap ${capMs} ms`)
      assert.isTrue(server.requests.every((r) => r.body.stream === true), "no fallback request after the deadline")
    }))
})
