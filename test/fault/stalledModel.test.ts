/**
 * A misbehaving model through the REAL server (routes, registry, SQLite, the
 * openai-SDK `OpenAiLlm` against a fake HTTP provider):
 *
 * - a reply that sends its headers and half its body, then nothing: each attempt
 *   is cut by `LLM_TIMEOUT_MS`, retried, the call is capped, the client gets
 *   `error` then `done`, and the conversation takes a new run at once;
 * - a 429 with `Retry-After` is waited out (the run's LLM calls happen inside the
 *   request's span, where the delay used to be lost).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { openSse } from "../utils/sse.js"

describe("a stalled or rate-limiting model, through the server", () => {
  it.scopedLive(
    "a reply stalled mid-body ends the run with error then done; the conversation is free again",
    () =>
      Effect.gen(function*() {
        let stalling = true
        const fake = yield* FakeOpenAi.scoped((body) =>
          stalling
            ? FakeOpenAi.stall()
            : body?.stream
            ? FakeOpenAi.sseText("fine now")
            : FakeOpenAi.completion({ content: "fine now" })
        )
        const server = yield* startServer({
          llmUrl: fake.url,
          llm: { timeout: "400 millis", maxRetries: 1, retryBaseDelay: "10 millis", totalTimeout: "5 seconds" }
        })
        const started = Date.now()
        const first = yield* Effect.promise(() =>
          openSse(`${server.url}/api/react`, {
            body: { query: "hello", conversation_id: "stalled" },
            timeoutMs: 20_000
          })
        )
        const tookMs = Date.now() - started
        const names = first.events.map((e) => e.event)
        assert.strictEqual(names[names.length - 1], "done")
        assert.strictEqual(names[names.length - 2], "error")
        const error = first.events[names.length - 2].data
        assert.include(error.message, "timed out")
        assert.isTrue(error.retryable)
        assert.strictEqual(fake.requests.length, 2, "one attempt and one retry")
        // the client side of an aborted request closes asynchronously
        for (let i = 0; i < 40 && !fake.requests.every((r) => r.abortedByClient); i++) yield* Effect.sleep("50 millis")
        assert.isTrue(fake.requests.every((r) => r.abortedByClient), "every stalled request was aborted")
        assert.isBelow(tookMs, 10_000)

        stalling = false
        const second = yield* Effect.promise(() =>
          openSse(`${server.url}/api/react`, { body: { query: "again", conversation_id: "stalled" } })
        )
        assert.strictEqual(second.status, 200, "no 409: the stalled run is over")
        const done = second.events[second.events.length - 1]
        assert.strictEqual(done.event, "done")
        assert.strictEqual(done.data.answer, "fine now")
      }),
    30_000
  )

  it.scopedLive("a 429 with Retry-After is waited out before the retry", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped((body, index) =>
        index === 0
          ? FakeOpenAi.error(429, "Rate limit reached", { headers: { "retry-after": "1" } })
          : body?.stream
          ? FakeOpenAi.sseText("after the wait")
          : FakeOpenAi.completion({ content: "after the wait" })
      )
      const server = yield* startServer({ llmUrl: fake.url, llm: { maxRetries: 2, retryBaseDelay: "10 millis" } })
      const run = yield* Effect.promise(() => openSse(`${server.url}/api/react`, { body: { query: "hello" } }))
      assert.strictEqual(run.events[run.events.length - 1].data.answer, "after the wait")
      assert.isAtLeast(fake.requests[1].receivedAt - fake.requests[0].receivedAt, 950)
    }), 30_000)
})
