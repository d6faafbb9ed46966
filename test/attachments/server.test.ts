/**
 * Attachments over HTTP (SPEC §24): uploads stored once by hash, `POST
 * /api/react` with inline / URL / uploaded attachments reaching the model in its
 * shape, the run's first event, every refusal a 4xx naming the problem with
 * nothing stored and no model call. The real server on SQLite, the real
 * `openai` SDK against the fake (which refuses parts the real API refuses).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Files from "../utils/attachmentFiles.js"
import { rows } from "../utils/attachmentRows.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { getJson, openSse, postJson } from "../utils/sse.js"

const PNG = Files.png(40, 30)
const PDF = Files.pdf(2)
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

const answer: FakeOpenAi.FakeResponder = (body) =>
  body?.stream
    ? FakeOpenAi.sseText("It shows a red square.")
    : FakeOpenAi.completion({ content: "It shows a red square." })

const upload = (url: string, bytes: Uint8Array, contentType: string, name?: string) =>
  fetch(`${url}/api/attachments${name !== undefined ? `?name=${encodeURIComponent(name)}` : ""}`, {
    method: "POST",
    headers: { "content-type": contentType },
    body: Buffer.from(bytes)
  }).then(async (r) => ({ status: r.status, body: await r.json() as any }))

describe("POST /api/attachments", () => {
  it.scopedLive("raw bytes and multipart: 201 with the hash as id; the same bytes are one row", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(answer)
      const server = yield* startServer({ llmUrl: fake.url })
      const first = yield* Effect.promise(() => upload(server.url, PNG, "image/png", "red.png"))
      assert.strictEqual(first.status, 201)
      assert.deepStrictEqual(first.body, {
        attachment_id: first.body.sha256,
        media_type: "image/png",
        size: PNG.length,
        sha256: first.body.sha256,
        name: "red.png",
        width: 40,
        height: 30
      })
      const again = yield* Effect.promise(() => upload(server.url, PNG, "image/png", "again.png"))
      assert.strictEqual(again.body.attachment_id, first.body.attachment_id)
      const form = new FormData()
      form.append("file", new Blob([Buffer.from(PDF)], { type: "application/pdf" }), "report.pdf")
      const multipart = yield* Effect.promise(() =>
        fetch(`${server.url}/api/attachments`, { method: "POST", body: form }).then(async (r) => ({
          status: r.status,
          body: await r.json() as any
        }))
      )
      assert.strictEqual(multipart.status, 201)
      assert.deepInclude(multipart.body, {
        media_type: "application/pdf",
        name: "report.pdf",
        pages: 2,
        size: PDF.length
      })
      assert.strictEqual(yield* rows(server.databasePath), 2)
      // the bytes come back, sandboxed
      const served = yield* Effect.promise(() => fetch(`${server.url}/api/attachments/${first.body.attachment_id}`))
      assert.strictEqual(served.headers.get("content-type"), "image/png")
      assert.strictEqual(served.headers.get("x-content-type-options"), "nosniff")
      assert.deepStrictEqual(new Uint8Array(yield* Effect.promise(() => served.arrayBuffer())), PNG)
      assert.strictEqual(fake.requests.length, 0)
    }))

  it.scopedLive("refusals name the problem and store nothing", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(answer)
      const server = yield* startServer({ llmUrl: fake.url, settings: { maxAttachmentBytes: 1000 } })
      const contradicted = yield* Effect.promise(() => upload(server.url, PNG, "image/jpeg"))
      assert.strictEqual(contradicted.status, 415)
      assert.deepInclude(contradicted.body, {
        error: "unsupported_media_type",
        field: "Content-Type",
        message: "Content-Type: declared image/jpeg, but the bytes are a PNG image"
      })
      const html = yield* Effect.promise(() => upload(server.url, Buffer.from("<b>hi</b>"), "text/html"))
      assert.strictEqual(html.status, 415)
      const big = yield* Effect.promise(() => upload(server.url, Buffer.alloc(1001, "a"), "text/plain"))
      assert.strictEqual(big.status, 413)
      assert.deepInclude(big.body, { error: "attachment_too_large", limit: 1000 })
      assert.include(big.body.message, "REACT_MAX_ATTACHMENT_BYTES")
      const empty = yield* Effect.promise(() => upload(server.url, new Uint8Array(), "image/png"))
      assert.strictEqual(empty.status, 400)
      assert.strictEqual(empty.body.error, "invalid_attachment")
      const missing = yield* Effect.promise(() => getJson(`${server.url}/api/attachments/${"a".repeat(64)}`))
      assert.strictEqual(missing.status, 404)
      assert.strictEqual(missing.body.error, "attachment_not_found")
      assert.strictEqual(yield* rows(server.databasePath), 0)
    }))
})

describe("POST /api/react with attachments", () => {
  it.scopedLive("inline, uploaded and URL attachments reach the model as parts; the first event lists them by hash", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(answer)
      const server = yield* startServer({ llmUrl: fake.url })
      const uploaded = yield* Effect.promise(() => upload(server.url, PNG, "image/png", "red.png"))
      const result = yield* Effect.promise(() =>
        openSse(`${server.url}/api/react`, {
          body: {
            query: "What do these show?",
            attachments: [
              { attachment_id: uploaded.body.attachment_id },
              { media_type: "application/pdf", data: b64(PDF), name: "report.pdf" },
              { url: "https://example.com/cat.png" }
            ]
          }
        })
      )
      assert.strictEqual(result.status, 200)
      const first = result.events[0]
      assert.strictEqual(first.event, "input")
      assert.deepStrictEqual(first.data, {
        type: "attachments",
        attachments: [
          { name: "red.png", media_type: "image/png", size: PNG.length, sha256: uploaded.body.sha256 },
          {
            name: "report.pdf",
            media_type: "application/pdf",
            size: PDF.length,
            sha256: first.data.attachments[1].sha256
          },
          { name: "cat.png", media_type: "image/png", url: "https://example.com/cat.png" }
        ]
      })
      // bytes never in the stream
      assert.notInclude(JSON.stringify(result.events), b64(PNG).slice(0, 40))
      const query = fake.requests[0].body.messages[1].content
      assert.deepStrictEqual(query.map((p: any) => p.type), ["text", "image_url", "file", "image_url"])
      assert.strictEqual(query[1].image_url.url, `data:image/png;base64,${b64(PNG)}`)
      assert.deepStrictEqual(query[2].file, {
        filename: "report.pdf",
        file_data: `data:application/pdf;base64,${b64(PDF)}`
      })
      assert.strictEqual(query[3].image_url.url, "https://example.com/cat.png")
      assert.strictEqual(yield* rows(server.databasePath), 2)
      // the conversation refers to them by hash
      const conversation = yield* Effect.promise(() =>
        getJson(`${server.url}/api/conversations/${result.headers.get("x-conversation-id")}`)
      )
      assert.deepStrictEqual(conversation.body.messages[0].content.map((p: any) => p.type), [
        "text",
        "file",
        "file",
        "file"
      ])
      assert.strictEqual(conversation.body.messages[0].content[1].file.sha256, uploaded.body.sha256)
      assert.notInclude(JSON.stringify(conversation.body), b64(PNG).slice(0, 40))
    }))

  it.scopedLive("MAX_BODY_BYTES bounds the body apart from its inline files", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(answer)
      const server = yield* startServer({ llmUrl: fake.url, settings: { maxBodyBytes: 1000 } })
      const big = Buffer.from("a line of notes\n".repeat(200))
      assert.isAbove(b64(big).length, 3000)
      // a file larger than the body limit, inline: taken
      const taken = yield* Effect.promise(() =>
        openSse(`${server.url}/api/react`, {
          body: { query: "look", attachments: [{ media_type: "text/plain", data: b64(big), name: "notes.txt" }] }
        })
      )
      assert.strictEqual(taken.status, 200)
      assert.strictEqual(taken.events[0].event, "input")
      // the rest of the body over the limit: 413, with or without a file, nothing stored, no model call
      const asked = fake.requests.length
      for (const attachments of [undefined, [{ media_type: "image/png", data: b64(PNG) }]]) {
        const refused = yield* Effect.promise(() =>
          postJson(`${server.url}/api/react`, { query: "x".repeat(1200), ...(attachments ? { attachments } : {}) })
        )
        assert.strictEqual(refused.status, 413)
        assert.deepInclude(refused.body, { error: "payload_too_large" })
      }
      assert.strictEqual(fake.requests.length, asked)
      assert.strictEqual(yield* rows(server.databasePath), 1)
    }))

  it.scopedLive("every refusal is a 4xx naming the field, with nothing stored and no model call", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(answer)
      const server = yield* startServer({ llmUrl: fake.url, settings: { maxAttachments: 2 } })
      const react = (attachments: unknown) =>
        Effect.promise(() => postJson(`${server.url}/api/react`, { query: "look", attachments }))
      const cases: ReadonlyArray<readonly [unknown, number, string, string]> = [
        [
          [{ media_type: "image/jpeg", data: b64(PNG) }],
          415,
          "unsupported_media_type",
          "attachments.0.media_type: declared image/jpeg, but the bytes are a PNG image"
        ],
        [
          [{ data: b64(PNG) }],
          400,
          "invalid_attachment",
          "attachments.0.media_type: missing: the media type of the data is required"
        ],
        [
          [{ media_type: "image/png", data: "not base64!" }],
          400,
          "invalid_attachment",
          "attachments.0.data: not valid base64"
        ],
        [
          [{ attachment_id: "f".repeat(64) }],
          404,
          "attachment_not_found",
          `attachments.0.attachment_id: no attachment ${"f".repeat(64)}`
        ],
        [
          [{ url: "http://example.com/a.png" }],
          400,
          "invalid_attachment",
          "attachments.0.url: must be an https URL (or send the bytes)"
        ],
        [
          [{ url: "https://example.com/a.pdf" }],
          415,
          "unsupported_media_type",
          "attachments.0.url: a URL attachment must be an image (image/png, image/jpeg, image/gif, image/webp); got .pdf"
        ],
        [
          [{ media_type: "image/png", data: b64(PNG) }, { media_type: "image/png", data: b64(PNG) }, {
            url: "https://x.io/a.png"
          }],
          400,
          "too_many_attachments",
          "attachments: 3 attachments; at most 2 per request"
        ],
        // a good one first: still nothing stored
        [
          [{ media_type: "image/png", data: b64(PNG) }, { media_type: "text/html", data: b64(Buffer.from("<p>")) }],
          415,
          "unsupported_media_type",
          "attachments.1.media_type: text/html is not a supported type (supported: image/png, image/jpeg, image/gif, image/webp, application/pdf, text/plain, text/markdown, text/csv, application/json)"
        ]
      ]
      for (const [attachments, status, error, message] of cases) {
        const response = yield* react(attachments)
        assert.strictEqual(response.status, status, JSON.stringify(attachments).slice(0, 80))
        assert.strictEqual(response.body.error, error)
        assert.strictEqual(response.body.message, message)
      }
      assert.strictEqual(fake.requests.length, 0)
      assert.strictEqual(yield* rows(server.databasePath), 0)
      const conversations = yield* Effect.promise(() => getJson(`${server.url}/api/conversations`))
      assert.deepStrictEqual(conversations.body.conversations, [])
    }))
})
