/**
 * Time bounds of the OpenAI-compatible LLM, against a real HTTP fake: every
 * attempt is bounded as a whole (a reply that stalls after its headers included),
 * a stalled attempt is retried like any timeout, the whole call is capped across
 * retries, streams are bounded between chunks, and a 429's `Retry-After` is
 * honoured also inside a span.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import type { ChatRequest, LlmError, LlmService } from "../src/Llm.js"
import * as Message from "../src/Message.js"
import * as OpenAiLlm from "../src/OpenAiLlm.js"
import * as FakeOpenAi from "./utils/fakeOpenAiServer.js"

const request: ChatRequest = { messages: [Message.system("You are terse."), Message.user("Hi")] }

const llmFor = (server: FakeOpenAi.FakeOpenAiServer, options?: Partial<OpenAiLlm.OpenAiLlmOptions>): LlmService =>
  OpenAiLlm.makeUnsafe({
    model: "fake-model",
    baseURL: server.url,
    apiKey: "sk-test",
    retryBaseDelay: "5 millis",
    ...options
  })

const failure = <A>(effect: Effect.Effect<A, LlmError>) =>
  Effect.flatMap(
    Effect.either(effect),
    (e) => Either.isLeft(e) ? Effect.succeed(e.left) : Effect.dieMessage("expected an LlmError")
  )

const elapsed = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.gen(function*() {
    const start = Date.now()
    const value = yield* effect
    return { value, ms: Date.now() - start }
  })

describe("OpenAiLlm time bounds", () => {
  it.live(
    "a reply that stalls after its headers is a Timeout of the attempt, and is retried",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FakeOpenAi.scoped([FakeOpenAi.stall(), FakeOpenAi.completion({ content: "second try" })])
        const llm = llmFor(server, { timeout: "400 millis", maxRetries: 1 })
        const { ms, value } = yield* elapsed(llm.chat(request).pipe(Effect.timeout("10 seconds")))
        assert.strictEqual(value.content, "second try")
        assert.strictEqual(server.requests.length, 2)
        assert.isTrue(server.requests[0].abortedByClient, "the stalled request was aborted")
        assert.isAtLeast(ms, 380)
      })),
    20_000
  )

  it.live("stalls on every attempt: Timeout after maxRetries + 1 attempts", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped(() => FakeOpenAi.stall())
      const llm = llmFor(server, { timeout: "300 millis", maxRetries: 2 })
      const error = yield* failure(llm.chat(request)).pipe(Effect.timeout("10 seconds"))
      assert.strictEqual(error.reason, "Timeout")
      assert.include(error.message, "300 ms")
      assert.strictEqual(server.requests.length, 3)
    })), 20_000)

  it.live("the total time of a call across retries is capped", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped(() => FakeOpenAi.stall())
      const llm = llmFor(server, { timeout: "400 millis", maxRetries: 10, totalTimeout: "1 second" })
      const { ms, value: error } = yield* elapsed(failure(llm.chat(request)).pipe(Effect.timeout("10 seconds")))
      assert.strictEqual(error.reason, "Timeout")
      assert.include(error.message, "1000 ms")
      assert.isAtLeast(ms, 950)
      assert.isBelow(ms, 4000)
      assert.isAtMost(server.requests.length, 3)
      // every attempt's request was released
      assert.isTrue(yield* Effect.promise(() => server.waitForClosedSockets(server.requests.length, 3000)))
    })), 20_000)

  it.live(
    "a stream that stalls between chunks fails with Timeout (idle bound per chunk)",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FakeOpenAi.scoped([
          FakeOpenAi.sse([FakeOpenAi.chunk.content("Hello"), FakeOpenAi.chunk.content(" there")], { done: false })
        ])
        const llm = llmFor(server, { timeout: "400 millis", maxRetries: 0 })
        const seen: Array<string> = []
        const result = yield* Stream.runForEach(
          llm.streamChat(request),
          (d) => Effect.sync(() => d._tag === "Content" && seen.push(d.text))
        ).pipe(Effect.either, Effect.timeout("10 seconds"))
        assert.deepStrictEqual(seen, ["Hello", " there"])
        assert.isTrue(Either.isLeft(result))
        if (Either.isLeft(result)) assert.strictEqual(result.left.reason, "Timeout")
      })),
    20_000
  )

  it.live(
    "a stream whose first chunk never comes is retried like a timeout",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FakeOpenAi.scoped([FakeOpenAi.sse([], { done: false }), FakeOpenAi.sseText("ok now")])
        const llm = llmFor(server, { timeout: "300 millis", maxRetries: 1 })
        const deltas = yield* Stream.runCollect(llm.streamChat(request)).pipe(Effect.timeout("10 seconds"))
        const text = Chunk.toReadonlyArray(deltas).flatMap((d) => (d._tag === "Content" ? [d.text] : [])).join("")
        assert.strictEqual(text, "ok now")
        assert.strictEqual(server.requests.length, 2)
      })),
    20_000
  )

  it.live(
    "Retry-After is honoured inside a span (the schedule sees the delay on the error itself)",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* FakeOpenAi.scoped([
          FakeOpenAi.error(429, "Rate limit reached", { headers: { "retry-after": "1" } }),
          FakeOpenAi.completion({ content: "waited" })
        ])
        const response = yield* llmFor(server).chat(request).pipe(Effect.withSpan("test.span"))
        assert.strictEqual(response.content, "waited")
        assert.isAtLeast(server.requests[1].receivedAt - server.requests[0].receivedAt, 950)
      })),
    20_000
  )

  it.live("the error carries the provider's delay (retryAfterMs)", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped(() =>
        FakeOpenAi.error(429, "slow down", { headers: { "retry-after-ms": "20" } })
      )
      const error = yield* failure(llmFor(server, { maxRetries: 0 }).chat(request))
      assert.strictEqual(error.reason, "RateLimited")
      assert.strictEqual(error.retryAfterMs, 20)
    })), 20_000)

  it.effect("LLM_TOTAL_TIMEOUT_MS is read with the other settings (default 300000)", () =>
    Effect.gen(function*() {
      const read = (env: Record<string, string>) =>
        Effect.withConfigProvider(OpenAiLlm.settingsConfig, ConfigProvider.fromMap(new Map(Object.entries(env))))
      const set = yield* read({ LLM_TOTAL_TIMEOUT_MS: "4500", LLM_TIMEOUT_MS: "1500" })
      assert.strictEqual(Duration.toMillis(set.totalTimeout!), 4500)
      assert.strictEqual(Duration.toMillis(set.timeout!), 1500)
      assert.strictEqual(Duration.toMillis((yield* read({})).totalTimeout!), 300_000)
      assert.isTrue((yield* Effect.either(read({ LLM_TOTAL_TIMEOUT_MS: "0" })))._tag === "Left")
    }))
})
