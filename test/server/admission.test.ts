/**
 * Admission control (`REACT_MAX_ACTIVE_RUNS`, `REACT_RUN_QUEUE`): a burst of run starts beyond
 * what may execute at once waits in a bounded queue, and every admitted run ends with `done`;
 * beyond the queue's bound a start is answered 503 with `Retry-After` (a response, never a reset
 * connection), on `/api/react` and `/api/chat` alike. The real server over a fake OpenAI server; the
 * tool counts how many runs execute it at the same time.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Tool from "../../src/Tool.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { openSse } from "../utils/sse.js"

const hasToolResult = (body: any) => (body?.messages ?? []).some((m: any) => m.role === "tool")

/** One `lookup` call per run (fresh call ids per request), then the answer. */
const responder: FakeOpenAi.FakeResponder = (body, index) => {
  if (body?.stream) {
    return FakeOpenAi.sse([
      FakeOpenAi.chunk.content("Done."),
      FakeOpenAi.chunk.finish("stop"),
      FakeOpenAi.chunk.usage(10, 3)
    ])
  }
  return hasToolResult(body)
    ? FakeOpenAi.completion({ content: "Done." })
    : FakeOpenAi.completion({
      toolCalls: [{ id: FakeOpenAi.freshCallId(index), name: "lookup", arguments: "{\"topic\":\"x\"}" }]
    })
}

describe("admission control", () => {
  it.scopedLive(
    "a burst beyond the bound: the queue's runs all end with done, at most REACT_MAX_ACTIVE_RUNS at once; the rest get 503 + Retry-After",
    () =>
      Effect.gen(function*() {
        let running = 0
        let most = 0
        const lookup = Tool.make({
          name: "lookup",
          description: "Looks a topic up, slowly",
          parameters: Schema.Struct({ topic: Schema.String }),
          handler: () =>
            Effect.acquireUseRelease(
              Effect.sync(() => {
                running++
                most = Math.max(most, running)
              }),
              () => Effect.as(Effect.sleep("1200 millis"), "facts"),
              () => Effect.sync(() => void running--)
            )
        })
        const fake = yield* FakeOpenAi.scoped(responder)
        const { url } = yield* startServer({
          llmUrl: fake.url,
          tools: [lookup],
          settings: { maxActiveRuns: 2, runQueue: 3 }
        })

        // 10 starts at once: 2 execute, 3 wait, 5 are refused
        const burst = yield* Effect.promise(() =>
          Promise.all(Array.from({ length: 10 }, (_, i) =>
            openSse(`${url}/api/react`, {
              body: { query: `burst ${i}`, conversation_id: `burst${i}` },
              timeoutMs: 30_000
            })))
        )
        const admitted = burst.filter((r) => r.status === 200)
        const refused = burst.filter((r) => r.status !== 200)
        assert.strictEqual(admitted.length, 5, `statuses: ${burst.map((r) => r.status).join(",")}`)
        for (const r of admitted) {
          const last = r.events[r.events.length - 1]
          assert.strictEqual(last?.event, "done")
          assert.strictEqual(last?.data.answer, "Done.")
        }
        for (const r of refused) {
          assert.strictEqual(r.status, 503)
          assert.strictEqual(r.headers.get("retry-after"), "2")
          assert.strictEqual(r.body.error, "overloaded")
        }
        assert.strictEqual(most, 2, "runs executing at once")

        // while the queue is full, the chat route is refused the same way
        const hold = Array.from({ length: 5 }, (_, i) =>
          openSse(`${url}/api/react`, { body: { query: `hold ${i}`, conversation_id: `hold${i}` }, timeoutMs: 30_000 }))
        yield* Effect.sleep("300 millis")
        const chat = yield* Effect.promise(() =>
          openSse(`${url}/api/chat`, {
            body: { id: "chat1", messages: [{ id: "m1", role: "user", parts: [{ type: "text", text: "hi" }] }] }
          })
        )
        assert.strictEqual(chat.status, 503)
        assert.strictEqual(chat.headers.get("retry-after"), "2")
        const held = yield* Effect.promise(() =>
          Promise.all(hold)
        )
        assert.deepStrictEqual(held.map((r) => r.events[r.events.length - 1]?.event), [
          "done",
          "done",
          "done",
          "done",
          "done"
        ])

        // every place is given back: a start after the burst is admitted
        const after = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, { body: { query: "after", conversation_id: "after" } })
        )
        assert.strictEqual(after.status, 200)
        assert.strictEqual(after.events[after.events.length - 1]?.event, "done")
      }),
    60_000
  )
})
