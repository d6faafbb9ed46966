/**
 * Attachments on the other surfaces (SPEC §24 "In"): `/v1/chat/completions`
 * through the real `openai` SDK (`image_url` data URLs, `file` parts), `/api/chat`
 * (the AI SDK's `file` parts), and the server on Anthropic (`@effect/ai-anthropic`
 * against its fake): an image and a PDF reach each model in its native shape,
 * a text-only model gets notes.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import OpenAI from "openai"
import * as Attachments from "../../src/Attachments.js"
import { Llm } from "../../src/Llm.js"
import { anthropicLlm } from "../utils/anthropicLlm.js"
import * as Files from "../utils/attachmentFiles.js"
import { rows } from "../utils/attachmentRows.js"
import * as FakeAnthropic from "../utils/fakeAnthropicServer.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { openSse, postJson } from "../utils/sse.js"

const PNG = Files.png(20, 10)
const PDF = Files.pdf(3)
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")
const answer: FakeOpenAi.FakeResponder = (
  body
) => (body?.stream ? FakeOpenAi.sseText("Seen.") : FakeOpenAi.completion({ content: "Seen." }))

describe("/v1/chat/completions", () => {
  it.scopedLive("image_url and file parts from the openai SDK are stored once and reach the model; a refusal is OpenAI-shaped", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(answer)
      const server = yield* startServer({ llmUrl: fake.url })
      const client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: "none", maxRetries: 0 })
      const completion = yield* Effect.promise(() =>
        client.chat.completions.create({
          model: "react-agent",
          messages: [{
            role: "user",
            content: [
              { type: "text", text: "Describe both." },
              { type: "image_url", image_url: { url: `data:image/png;base64,${b64(PNG)}` } },
              { type: "file", file: { filename: "report.pdf", file_data: `data:application/pdf;base64,${b64(PDF)}` } }
            ]
          }]
        })
      )
      assert.strictEqual(completion.choices[0].message.content, "Seen.")
      const query = fake.requests[0].body.messages[1].content
      assert.deepStrictEqual(query.map((p: any) => p.type), ["text", "image_url", "file"])
      assert.strictEqual(query[1].image_url.url, `data:image/png;base64,${b64(PNG)}`)
      assert.deepStrictEqual(query[2].file, {
        filename: "report.pdf",
        file_data: `data:application/pdf;base64,${b64(PDF)}`
      })
      assert.strictEqual(yield* rows(server.databasePath), 2)
      const asked = fake.requests.length
      const refused = yield* Effect.flip(Effect.tryPromise(() =>
        client.chat.completions.create({
          model: "react-agent",
          messages: [{
            role: "user",
            content: [{ type: "text", text: "x" }, {
              type: "image_url",
              image_url: { url: `data:image/gif;base64,${b64(PNG)}` }
            }]
          }]
        })
      ))
      const error = refused.error as InstanceType<typeof OpenAI.APIError>
      assert.strictEqual(error.status, 415)
      assert.include(
        error.message,
        "messages.0.content.1.media_type: declared image/gif, but the bytes are a PNG image"
      )
      assert.strictEqual(fake.requests.length, asked)
      assert.strictEqual(yield* rows(server.databasePath), 2)
      // a stored file by its id (file_id = attachment_id); an unknown id is a 404 naming file_id
      const pdfId = Attachments.sha256(PDF)
      yield* Effect.promise(() =>
        client.chat.completions.create({
          model: "react-agent",
          messages: [{
            role: "user",
            content: [{ type: "text", text: "Again." }, { type: "file", file: { file_id: pdfId } }]
          }]
        })
      )
      assert.deepStrictEqual(fake.requests[asked].body.messages[1].content[1].file, {
        filename: "report.pdf",
        file_data: `data:application/pdf;base64,${b64(PDF)}`
      })
      const before = fake.requests.length
      const unknown = yield* Effect.flip(Effect.tryPromise(() =>
        client.chat.completions.create({
          model: "react-agent",
          messages: [{ role: "user", content: [{ type: "file", file: { file_id: "0".repeat(64) } }] }]
        })
      ))
      const notFound = unknown.error as InstanceType<typeof OpenAI.APIError>
      assert.strictEqual(notFound.status, 404)
      assert.deepInclude(notFound.error as object, {
        code: "attachment_not_found",
        param: "messages.0.content.0.file.file_id"
      })
      assert.strictEqual(fake.requests.length, before, "no model call for an unknown id")
      assert.strictEqual(yield* rows(server.databasePath), 2)
    }))
})

describe("/api/chat (AI SDK file parts)", () => {
  it.scopedLive("a data-URL file part of the last message reaches the model", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(answer)
      const server = yield* startServer({ llmUrl: fake.url })
      const response = yield* Effect.promise(() =>
        fetch(`${server.url}/api/chat`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            id: "chat-files",
            messages: [{
              id: "m1",
              role: "user",
              parts: [{ type: "text", text: "What is it?" }, {
                type: "file",
                mediaType: "image/png",
                filename: "dot.png",
                url: `data:image/png;base64,${b64(PNG)}`
              }]
            }]
          })
        }).then(async (r) => ({ status: r.status, text: await r.text() }))
      )
      assert.strictEqual(response.status, 200)
      assert.include(response.text, "Seen.")
      const query = fake.requests[0].body.messages[1].content
      assert.deepStrictEqual(query.map((p: any) => p.type), ["text", "image_url"])
      const refused = yield* Effect.promise(() =>
        postJson(`${server.url}/api/chat`, {
          id: "chat-files-2",
          messages: [{
            id: "m1",
            role: "user",
            parts: [{ type: "text", text: "x" }, { type: "file", url: `data:;base64,${b64(PNG)}` }]
          }]
        })
      )
      assert.strictEqual(refused.status, 400)
      assert.strictEqual(
        refused.body.message,
        "messages.0.parts.1.media_type: missing: the media type of the data is required"
      )
    }))
})

describe("the server on Anthropic", () => {
  it.scopedLive("an image and a PDF sent to POST /api/react become image and document blocks", () =>
    Effect.gen(function*() {
      const fake = yield* FakeAnthropic.scoped([FakeAnthropic.text("Seen."), FakeAnthropic.text("Seen.")])
      const llmLayer = Layer.scoped(
        Llm,
        Effect.flatMap(Attachments.Attachments, (store) => anthropicLlm(fake.url, { attachments: store }))
      )
      const server = yield* startServer({ llmUrl: "http://127.0.0.1:9", llmLayer, synthesis: "auto" })
      const result = yield* Effect.promise(() =>
        openSse(`${server.url}/api/react`, {
          body: {
            query: "Describe both.",
            attachments: [
              { media_type: "image/png", data: b64(PNG), name: "dot.png" },
              { media_type: "application/pdf", data: b64(PDF), name: "report.pdf" }
            ]
          }
        })
      )
      assert.strictEqual(result.events.at(-1)?.event, "done")
      const blocks = fake.requests[0].body.messages[0].content
      assert.deepStrictEqual(blocks.map((b: any) => b.type), ["text", "image", "document"])
      assert.deepStrictEqual(blocks[1].source, { type: "base64", media_type: "image/png", data: b64(PNG) })
      assert.deepStrictEqual(blocks[2].source, { type: "base64", media_type: "application/pdf", data: b64(PDF) })
      assert.strictEqual(blocks[2].title, "report.pdf")
    }))
})

describe("a text-only model behind the server", () => {
  it.scopedLive("gets a note naming each file, never a part", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(answer)
      const server = yield* startServer({ llmUrl: fake.url, llm: { inputModalities: ["text"] } })
      yield* Effect.promise(() =>
        openSse(`${server.url}/api/react`, {
          body: {
            query: "Describe.",
            attachments: [{ media_type: "image/png", data: b64(PNG), name: "dot.png" }, {
              media_type: "application/pdf",
              data: b64(PDF),
              name: "r.pdf"
            }]
          }
        })
      )
      const query = fake.requests[0].body.messages[1].content
      assert.deepStrictEqual(query.map((p: any) => p.type), ["text", "text", "text"])
      assert.strictEqual(
        query[1].text,
        "[Attachment \"dot.png\" (image/png, 20×10, " + `${PNG.length} B) not shown: this model cannot read images.]`
      )
      assert.include(query[2].text, "\"r.pdf\" (application/pdf, 3 pages")
    }))
})
