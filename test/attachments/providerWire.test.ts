/**
 * Attachments reach each provider in its native shape (SPEC §24 "To the
 * model"), through the real clients against fakes that refuse what the real
 * APIs refuse (test/utils/wireParts.ts): the `openai` SDK (`OpenAiLlm`) and
 * `@effect/ai-anthropic` (`EffectAiLlm`). The bytes come from the store at the
 * moment the request is built; a model that does not take a part gets a note.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as Attachments from "../../src/Attachments.js"
import type { LlmService } from "../../src/Llm.js"
import * as Message from "../../src/Message.js"
import * as OpenAiLlm from "../../src/OpenAiLlm.js"
import { anthropicLlm } from "../utils/anthropicLlm.js"
import * as Files from "../utils/attachmentFiles.js"
import * as FakeAnthropic from "../utils/fakeAnthropicServer.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"

const PNG = Files.png(64, 48)
const PDF = Files.pdf(2)
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

/** A store holding a PNG, a PDF and a Markdown file; their parts. */
const fixture = Effect.gen(function*() {
  const store = Attachments.makeMemoryUnsafe()
  const png = yield* store.put(PNG, { name: "chart.png" })
  const pdf = yield* store.put(PDF, { name: "report.pdf" })
  const md = yield* store.put(Buffer.from("# Notes\nbuy milk"), { mediaType: "text/markdown", name: "notes.md" })
  return { store, png, pdf, md }
})

/** A conversation: the query with its attachments and a caller's URL, then a round of two tool calls that returned files. */
const conversation = (f: Effect.Effect.Success<typeof fixture>): ReadonlyArray<Message.ChatMessage> => [
  Message.system("You are a test."),
  Message.user([
    { type: "text", text: "What is in these?" },
    Message.file(f.png),
    Message.file(f.pdf),
    Message.file(f.md),
    Message.file({ name: "cat.jpg", media_type: "image/jpeg", url: "https://example.com/cat.jpg" })
  ]),
  Message.assistant(null, {
    toolCalls: [Message.toolCall("call_a", "screenshot", "{}"), Message.toolCall("call_b", "fetch_pdf", "{}")]
  }),
  Message.tool("call_a", "took a screenshot", "screenshot", [Message.file(f.png)]),
  Message.tool("call_b", "fetched it", "fetch_pdf", [Message.file(f.pdf)])
]

const openAi = (url: string, options: Partial<OpenAiLlm.OpenAiLlmOptions> = {}): LlmService =>
  OpenAiLlm.makeUnsafe({ baseURL: url, apiKey: "test", model: "gpt-test", maxRetries: 0, ...options })

describe("OpenAI-compatible chat (the openai SDK)", () => {
  it.scoped("query parts: text, image_url data URLs and the caller's URL, a PDF file part, a text file inlined", () =>
    Effect.gen(function*() {
      const f = yield* fixture
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.completion({ content: "ok" }), FakeOpenAi.sseText("ok")])
      const llm = openAi(server.url, { attachments: f.store })
      const messages = conversation(f)
      yield* llm.chat({ messages })
      const body = server.requests[0].body
      assert.deepStrictEqual(body.messages[1].content, [
        { type: "text", text: "What is in these?" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${b64(PNG)}` } },
        { type: "file", file: { filename: "report.pdf", file_data: `data:application/pdf;base64,${b64(PDF)}` } },
        { type: "text", text: "Attachment \"notes.md\" (text/markdown, 16 B):\n\n# Notes\nbuy milk" },
        { type: "image_url", image_url: { url: "https://example.com/cat.jpg" } }
      ])
      // the tool messages stay text; ONE user message after the round carries their files, each call named
      assert.deepStrictEqual(body.messages.slice(3).map((m: any) => m.role), ["tool", "tool", "user"])
      assert.deepStrictEqual(body.messages[3], { role: "tool", tool_call_id: "call_a", content: "took a screenshot" })
      assert.deepStrictEqual(body.messages[5].content, [
        { type: "text", text: "The tool call call_a (screenshot) returned:" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${b64(PNG)}` } },
        { type: "text", text: "The tool call call_b (fetch_pdf) returned:" },
        { type: "file", file: { filename: "report.pdf", file_data: `data:application/pdf;base64,${b64(PDF)}` } }
      ])
      // the stream builds the same body
      yield* Stream.runDrain(llm.streamChat({ messages }))
      assert.deepStrictEqual(server.requests[1].body.messages, body.messages)
    }))

  it.scoped("a text-only model gets notes naming each file, never a part it cannot take", () =>
    Effect.gen(function*() {
      const f = yield* fixture
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.completion({ content: "ok" })])
      yield* openAi(server.url, { attachments: f.store, inputModalities: ["text"] }).chat({ messages: conversation(f) })
      const body = server.requests[0].body
      const parts = body.messages.flatMap((m: any) => (Array.isArray(m.content) ? m.content : []))
      assert.deepStrictEqual([...new Set(parts.map((p: any) => p.type))], ["text"])
      assert.include(parts[1].text, "[Attachment \"chart.png\" (image/png, 64×48")
      assert.include(parts[1].text, "not shown: this model cannot read images.]")
      assert.include(parts[2].text, "\"report.pdf\" (application/pdf, 2 pages")
      assert.include(parts[2].text, "cannot read PDF documents")
      // the text file is text: it is still sent
      assert.include(parts[3].text, "buy milk")
      // no user message after the round: the notes are in the tool messages
      assert.deepStrictEqual(body.messages.map((m: any) => m.role), ["system", "user", "assistant", "tool", "tool"])
      assert.include(body.messages[3].content, "took a screenshot\n[Attachment \"chart.png\"")
    }))

  it.scoped("images but no PDFs: the PDF is a note, the images are sent", () =>
    Effect.gen(function*() {
      const f = yield* fixture
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.completion({ content: "ok" })])
      yield* openAi(server.url, { attachments: f.store, inputModalities: ["text", "image"] }).chat({
        messages: conversation(f)
      })
      const types = server.requests[0].body.messages[1].content.map((p: any) => p.type)
      assert.deepStrictEqual(types, ["text", "image_url", "text", "text", "image_url"])
    }))

  it.scoped("without a store, or with bytes it does not have, the call fails naming the file, and nothing is sent", () =>
    Effect.gen(function*() {
      const f = yield* fixture
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.completion({ content: "ok" })])
      const noStore = yield* Effect.flip(openAi(server.url).chat({ messages: conversation(f) }))
      assert.strictEqual(noStore.reason, "BadRequest")
      assert.include(noStore.message, "\"chart.png\"")
      const other = yield* Effect.flip(
        openAi(server.url, { attachments: Attachments.makeMemoryUnsafe() }).chat({ messages: conversation(f) })
      )
      assert.include(other.message, `no attachment ${f.png.sha256}`)
      assert.strictEqual(server.requests.length, 0)
    }))

  it.scoped("OpenAiLlm.make takes the store from the context", () =>
    Effect.gen(function*() {
      const f = yield* fixture
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.completion({ content: "ok" })])
      const llm = yield* OpenAiLlm.make({ baseURL: server.url, apiKey: "k", model: "m", maxRetries: 0 }).pipe(
        Effect.provideService(Attachments.Attachments, f.store)
      )
      yield* llm.chat({ messages: [Message.user([{ type: "text", text: "hi" }, Message.file(f.png)])] })
      assert.strictEqual(server.requests[0].body.messages[0].content[1].type, "image_url")
    }))
})

describe("Anthropic (@effect/ai-anthropic)", () => {
  it.scoped("image and document blocks with base64 sources; tool files after the tool_result blocks", () =>
    Effect.gen(function*() {
      const f = yield* fixture
      const server = yield* FakeAnthropic.scoped([FakeAnthropic.text("ok"), FakeAnthropic.text("ok")])
      const llm = yield* anthropicLlm(server.url, { attachments: f.store })
      yield* llm.chat({ messages: conversation(f) })
      const body = server.requests[0].body
      const query = body.messages[0].content
      assert.deepStrictEqual(query.map((b: any) => b.type), ["text", "image", "document", "text", "image"])
      assert.deepStrictEqual(query[1].source, { type: "base64", media_type: "image/png", data: b64(PNG) })
      assert.deepInclude(query[2], { type: "document", title: "report.pdf" })
      assert.deepStrictEqual(query[2].source, { type: "base64", media_type: "application/pdf", data: b64(PDF) })
      assert.include(query[3].text, "buy milk")
      assert.deepStrictEqual(query[4].source, { type: "url", url: "https://example.com/cat.jpg" })
      // the turn answering the tools: both tool_results first, then each call's files
      const answer = body.messages[2].content
      assert.deepStrictEqual(answer.map((b: any) => b.type), [
        "tool_result",
        "tool_result",
        "text",
        "image",
        "text",
        "document"
      ])
      assert.strictEqual(answer[2].text, "The tool call call_a (screenshot) returned:")
      assert.strictEqual(answer[3].source.data, b64(PNG))
    }))

  it.scoped("a text-only Claude gets notes", () =>
    Effect.gen(function*() {
      const f = yield* fixture
      const server = yield* FakeAnthropic.scoped([FakeAnthropic.text("ok")])
      const llm = yield* anthropicLlm(server.url, { attachments: f.store, inputModalities: ["text"] })
      yield* llm.chat({ messages: conversation(f) })
      const blocks = server.requests[0].body.messages.flatMap((m: any) => m.content)
      assert.notInclude(blocks.map((b: any) => b.type), "image")
      assert.notInclude(blocks.map((b: any) => b.type), "document")
      assert.include(JSON.stringify(blocks), "cannot read images")
    }))
})
