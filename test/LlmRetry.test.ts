/**
 * The retry notification (`Llm.withRetryObserver` / `notifyRetry`): OpenAiLlm
 * announces each retry with its number, reason and delay, on the fiber that
 * runs the call and the fibers it forks; non-retryable errors announce nothing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Fiber, Stream } from "effect"
import * as Llm from "../src/Llm.js"
import * as OpenAiLlm from "../src/OpenAiLlm.js"
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
      const llm = OpenAiLlm.make({ model: "m", baseURL: server.url, apiKey: "k", retryBaseDelay: "5 millis", maxRetries: 3 })
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
      const llm = OpenAiLlm.make({ model: "m", baseURL: server.url, apiKey: "k", retryBaseDelay: "5 millis" })
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
      const llm = OpenAiLlm.make({ model: "m", baseURL: server.url, apiKey: "k", retryBaseDelay: "5 millis" })
      const notices: Array<Llm.RetryNotice> = []
      const text = yield* llm.streamChat({ messages: message }).pipe(
        Stream.runFold("", (acc, d) => (d._tag === "Content" ? acc + d.text : acc)),
        Llm.withRetryObserver((n) => Effect.sync(() => notices.push(n)))
      )
      assert.strictEqual(text, "hello")
      assert.deepStrictEqual(notices.map((n) => [n.attempt, n.reason]), [[1, "Server"]])
    }))
})
