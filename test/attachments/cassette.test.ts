/**
 * A run with a PDF and an image, exported as a cassette (SPEC §22, §24): the
 * requests refer to the attachments by hash, the cassette embeds each one once
 * with its bytes, and it replays offline with the same events (no model call).
 * A fork of the run takes the stored steps with the same attachments (no new
 * model call when forked at its end); in process, `Recorder.record` embeds them
 * too.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Attachments from "../../src/Attachments.js"
import * as Cassette from "../../src/Cassette.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import * as Replay from "../../src/Replay.js"
import * as EventWire from "../../src/server/EventWire.js"
import * as Files from "../utils/attachmentFiles.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { getJson, openSse, postJson } from "../utils/sse.js"

const PNG = Files.png(16, 16, [9, 9, 9])
const PDF = Files.pdf(5, "Cassette")
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

const model: FakeOpenAi.FakeResponder = (body, index) => {
  if (body?.stream) return FakeOpenAi.sseText("Five pages and a grey square.")
  return body.messages.some((m: any) => m.role === "tool")
    ? FakeOpenAi.completion({ content: "Counted." })
    : FakeOpenAi.completion({
      toolCalls: [{
        id: FakeOpenAi.freshCallId(index),
        name: "calculator",
        arguments: JSON.stringify({ expression: "2+3" })
      }]
    })
}

describe("cassettes of runs with attachments", () => {
  it.scopedLive("embed each attachment once, replay offline with the same events, and fork with the same attachments", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(model)
      const server = yield* startServer({ llmUrl: fake.url })
      const run = yield* Effect.promise(() =>
        openSse(`${server.url}/api/react`, {
          body: {
            query: "How many pages, and what colour?",
            attachments: [{ media_type: "application/pdf", data: b64(PDF), name: "doc.pdf" }, {
              media_type: "image/png",
              data: b64(PNG),
              name: "sq.png"
            }]
          }
        })
      )
      const conversationId = run.headers.get("x-conversation-id")!
      assert.strictEqual(run.events.at(-1)?.event, "done")
      const asked = fake.requests.length
      const response = yield* Effect.promise(() =>
        fetch(`${server.url}/api/conversations/${conversationId}/runs/latest/cassette`)
      )
      const json = yield* Effect.promise(() => response.json() as Promise<any>)
      // the bytes once each, in `attachments`; nowhere else
      assert.deepStrictEqual(json.attachments.map((a: any) => [a.name, a.media_type, a.data]), [
        ["doc.pdf", "application/pdf", b64(PDF)],
        ["sq.png", "image/png", b64(PNG)]
      ])
      const { attachments: _embedded, ...rest } = json
      assert.notInclude(JSON.stringify(rest), b64(PDF).slice(0, 60))
      const cassette = yield* Cassette.decodeEffect(json)
      assert.deepStrictEqual(cassette.input.query, [
        { type: "text", text: "How many pages, and what colour?" },
        {
          type: "file",
          file: {
            name: "doc.pdf",
            media_type: "application/pdf",
            size: PDF.length,
            sha256: Attachments.sha256(PDF),
            pages: 5
          }
        },
        {
          type: "file",
          file: {
            name: "sq.png",
            media_type: "image/png",
            size: PNG.length,
            sha256: Attachments.sha256(PNG),
            width: 16,
            height: 16
          }
        }
      ])
      // offline: the recorded replies, no model; the same events
      const replayed = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) => Replay.run(agent)).pipe(
        Effect.provide(Replay.layerAgent(cassette, { agent: { synthesis: "always" } }).pipe(Layer.orDie))
      )
      const received = run.events.map((e) => EventWire.fromWire(e.event, e.data)!)
      assert.deepStrictEqual(Cassette.normalizeEvents(replayed.events), Cassette.normalizeEvents(received))
      assert.strictEqual(fake.requests.length, asked)
      // the embedded bytes make a store again (what a live re-run reads)
      const store = yield* Effect.flatMap(Attachments.Attachments, (s) => s.get(Attachments.sha256(PDF))).pipe(
        Effect.provide(Attachments.layerFromEmbedded(cassette.attachments ?? []))
      )
      assert.deepStrictEqual(store.bytes, PDF)

      // a fork at the run's end takes every step from storage: it needs the same attachments, and asks the model nothing
      const fork = yield* Effect.promise(() => postJson(`${server.url}/api/conversations/${conversationId}/fork`, {}))
      assert.strictEqual(fork.status, 201)
      const forked = yield* Effect.promise(() =>
        openSse(`${server.url}/api/react/events?conversation_id=${fork.body.conversation_id}`, { timeoutMs: 30_000 })
      )
      assert.strictEqual(forked.events.at(-1)?.event, "done")
      assert.strictEqual(forked.events.at(-1)?.data.answer, "Five pages and a grey square.")
      assert.strictEqual(fake.requests.length, asked)
      const detail = yield* Effect.promise(() =>
        getJson(`${server.url}/api/conversations/${fork.body.conversation_id}`)
      )
      assert.deepStrictEqual(detail.body.turn_details.at(-1).attachments.map((a: any) => a.name), ["doc.pdf", "sq.png"])
    }))
})
