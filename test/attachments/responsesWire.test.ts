/**
 * `@effect/ai` `Prompt` file parts on a provider other than Anthropic: the
 * OpenAI Responses API through the real `@effect/ai-openai` client (the
 * `openai` provider) against its fake. The query's image and PDF reach the
 * request as the Responses API's input parts, with the stored bytes; a model
 * that cannot read them gets notes.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import * as Attachments from "../../src/Attachments.js"
import type { Modality } from "../../src/Attachments.js"
import { make as makeOpenAi } from "../../src/internal/llmProviders/openai.js"
import * as Message from "../../src/Message.js"
import * as Files from "../utils/attachmentFiles.js"
import * as FakeResponses from "../utils/fakeOpenAiResponsesServer.js"

const PNG = Files.png(16, 8, [40, 80, 160])
const PDF = Files.pdf(2)
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

const ask = (modalities?: ReadonlyArray<Modality>) =>
  Effect.gen(function*() {
    const server = yield* FakeResponses.scoped(() => ({ _tag: "Text", text: "ok" }))
    const store = Attachments.makeMemoryUnsafe()
    const image = yield* store.put(PNG, { name: "plot.png" })
    const report = yield* store.put(PDF, { name: "report.pdf" })
    const llm = yield* makeOpenAi({
      model: "gpt-test",
      baseURL: server.url,
      apiKey: Redacted.make("sk-test"),
      abilities: {},
      retryBaseDelay: "5 millis",
      promptCache: "off",
      maxRetries: 0,
      attachments: store,
      ...(modalities !== undefined ? { inputModalities: modalities } : {})
    })
    yield* llm.chat({
      messages: [Message.user([{ type: "text", text: "Compare them." }, Message.file(image), Message.file(report)])]
    })
    assert.strictEqual(server.requests.length, 1)
    const user = (server.requests[0].body.input as Array<any>).find((m) => m.role === "user")
    return user.content as Array<any>
  })

describe("@effect/ai Prompt file parts on the Responses API (@effect/ai-openai)", () => {
  it.scoped("an image and a PDF become input_image and input_file parts with the stored bytes", () =>
    Effect.gen(function*() {
      const parts = yield* ask()
      assert.deepStrictEqual(parts.map((p) => p.type), ["input_text", "input_image", "input_file"])
      assert.strictEqual(parts[1].image_url, `data:image/png;base64,${b64(PNG)}`)
      assert.strictEqual(parts[2].filename, "report.pdf")
      assert.strictEqual(parts[2].file_data, `data:application/pdf;base64,${b64(PDF)}`)
    }))

  it.scoped("a text-only model gets notes naming the files", () =>
    Effect.gen(function*() {
      const parts = yield* ask(["text"])
      assert.deepStrictEqual(parts.map((p) => p.type), ["input_text", "input_text", "input_text"])
      assert.match(
        parts[1].text,
        /^\[Attachment "plot\.png" \(image\/png, 16×8, .*\) not shown: this model cannot read images\.\]$/
      )
      assert.include(parts[2].text, "\"report.pdf\" (application/pdf, 2 pages")
    }))
})
