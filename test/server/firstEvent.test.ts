/**
 * A conversation exists from its first run's first event (issue 46 item 3): at the first SSE
 * frame of a new conversation's first run, `GET /api/conversations/:id` answers (no turns yet,
 * `active: true`), the list has it, and a fork answers `409 run_in_progress` as docs/http-api.md
 * says — they answered `404 conversation_not_found` until the run's turn was stored.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { getJson, openSse, postJson } from "../utils/sse.js"

describe("a conversation from its first event", () => {
  it.scopedLive(
    "GET answers and a fork is 409 run_in_progress at the first frame of the first run",
    () =>
      Effect.gen(function*() {
        // the model takes a second: the run is still going on when the client reads its first frame
        const fake = yield* FakeOpenAi.scoped((body: { stream?: boolean }) =>
          body.stream === true
            ? FakeOpenAi.sseText("Forty-two.", { delayMs: 1000 })
            : FakeOpenAi.completion({ content: "Forty-two.", delayMs: 1000 })
        )
        const server = yield* startServer({ llmUrl: fake.url })
        const id = "first-event"
        const seen: Array<{ readonly get: number; readonly body: any; readonly list: any; readonly fork: any }> = []
        const stream = yield* Effect.promise(() =>
          openSse(`${server.url}/api/react`, {
            body: { query: "What is six times seven?", conversation_id: id },
            timeoutMs: 30_000,
            onEvent: async () => {
              if (seen.length > 0) return
              const got = await getJson(`${server.url}/api/conversations/${id}`)
              const list = await getJson(`${server.url}/api/conversations`)
              const fork = await postJson(`${server.url}/api/conversations/${id}/fork`, {})
              seen.push({ get: got.status, body: got.body, list: list.body, fork })
            }
          })
        )
        assert.strictEqual(stream.events.at(-1)?.event, "done")
        const first = seen[0]!
        assert.strictEqual(first.get, 200, JSON.stringify(first.body))
        assert.strictEqual(first.body.id, id)
        assert.strictEqual(first.body.title, "What is six times seven?")
        assert.strictEqual(first.body.turns, 0)
        assert.deepStrictEqual(first.body.messages, [])
        assert.strictEqual(first.body.active, true)
        assert.include(first.list.conversations.map((c: { id: string }) => c.id), id)
        assert.strictEqual(first.fork.status, 409, JSON.stringify(first.fork.body))
        assert.strictEqual(first.fork.body.error, "run_in_progress")
        // at its end the turn is there, under the title it had from the start
        const after = yield* Effect.promise(() => getJson(`${server.url}/api/conversations/${id}`))
        assert.strictEqual(after.body.turns, 1)
        assert.strictEqual(after.body.title, "What is six times seven?")
        assert.strictEqual(after.body.turn_details[0].answer, "Forty-two.")
      }),
    60_000
  )
})
