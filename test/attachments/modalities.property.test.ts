/**
 * Property (docs/attachments.md): for any mix of attachments — images, PDFs,
 * text files, caller URLs, the same bytes given several times, files in the
 * query and returned by tools — and any modalities a model takes, no request on
 * the wire carries a part its model does not take (a note in its place names
 * the file), every file the model takes is there with its bytes (a text file
 * with its text), and each distinct content is stored once. Both wire shapes:
 * the `openai` SDK (OpenAI-compatible chat) and `@effect/ai-anthropic`, each
 * against a fake that refuses what its real API refuses.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "effect/FastCheck"
import * as Attachments from "../../src/Attachments.js"
import type { LlmService } from "../../src/Llm.js"
import * as Message from "../../src/Message.js"
import * as OpenAiLlm from "../../src/OpenAiLlm.js"
import { anthropicLlm } from "../utils/anthropicLlm.js"
import * as Files from "../utils/attachmentFiles.js"
import * as FakeAnthropic from "../utils/fakeAnthropicServer.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"

type Kind = "png" | "gif" | "pdf" | "md" | "url"
interface FileCase {
  readonly kind: Kind
  readonly seed: number
}

const mdText = (seed: number) => `# note ${seed}`

/** The bytes of a file: the same (kind, seed) gives the same bytes, any other pair different ones. */
const bytesOf = (kind: Exclude<Kind, "url">, seed: number): Uint8Array =>
  kind === "png"
    ? Files.png(4 + seed, 3, [seed * 20, 10, 10])
    : kind === "gif"
    ? Files.gifHeader(10 + seed, 5)
    : kind === "pdf"
    ? Files.pdf(1 + seed)
    : Buffer.from(mdText(seed))

const fileArb: fc.Arbitrary<FileCase> = fc.record({
  kind: fc.constantFrom<Kind>("png", "gif", "pdf", "md", "url"),
  seed: fc.integer({ min: 0, max: 2 })
})
const modalitiesArb = fc.subarray(["image", "file"] as const).map((m) => ["text", ...m] as Array<Attachments.Modality>)
const caseArb = fc.record({
  query: fc.array(fileArb, { maxLength: 4 }),
  tools: fc.array(fc.array(fileArb, { maxLength: 2 }), { minLength: 1, maxLength: 3 }),
  modalities: modalitiesArb
})
type Case = typeof caseArb extends fc.Arbitrary<infer A> ? A : never

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")
/** A string as it appears inside a JSON body. */
const inJson = (s: string) => JSON.stringify(s).slice(1, -1)
/**
 * True when a JSON body holds the text: as a string of its own, or inside a
 * JSON-encoded string (`@effect/ai-anthropic` sends a `tool_result`'s content
 * as `JSON.stringify(result)`).
 */
const holds = (body: string, text: string) => body.includes(inJson(text)) || body.includes(inJson(inJson(text)))
const CANNOT = { image: "images", file: "PDF documents" } as const

/** Stores a case's files: the messages referring to them, and the distinct contents given (counted by the test). */
const build = (store: Attachments.AttachmentsService, c: Case) =>
  Effect.gen(function*() {
    const distinct = new Set<string>()
    const given: Array<{ readonly part: Message.FilePart; readonly seed: number }> = []
    const part = (f: FileCase, i: number): Effect.Effect<Message.FilePart, Attachments.AttachmentError> => {
      if (f.kind === "url") {
        const name = `u${f.seed}.png`
        return Effect.succeed(Message.file({ name, media_type: "image/png", url: `https://example.com/${name}` }))
      }
      distinct.add(`${f.kind}:${f.seed}`)
      const options = { name: `f${i}.${f.kind}`, ...(f.kind === "md" ? { mediaType: "text/markdown" } : {}) }
      return Effect.map(store.put(bytesOf(f.kind, f.seed), options), Message.file)
    }
    const record = (f: FileCase, i: number) =>
      Effect.tap(part(f, i), (p) => {
        given.push({ part: p, seed: f.seed })
      })
    const query = yield* Effect.forEach(c.query, record)
    const rounds = yield* Effect.forEach(c.tools, (files, r) =>
      Effect.map(Effect.forEach(files, record), (parts) => ({ id: `call_${r}`, parts })))
    const messages: Array<Message.ChatMessage> = [
      Message.system("Test."),
      Message.user([{ type: "text", text: "Look." }, ...query]),
      Message.assistant(null, {
        toolCalls: rounds.map((r) =>
          Message.toolCall(r.id, "shot", "{}")
        )
      }),
      ...rounds.map((r) => Message.tool(r.id, "done", "shot", r.parts))
    ]
    return { messages, distinct, given }
  })

const WIRE = {
  openai: { image: "\"image_url\"", file: "\"type\":\"file\"" },
  anthropic: { image: "\"type\":\"image\"", file: "\"type\":\"document\"" }
} as const

describe("attachments × modalities (property)", () => {
  it.live(
    "no request carries a part its model does not take; each content is stored once",
    () =>
      Effect.gen(function*() {
        const openAi = yield* Effect.acquireRelease(
          Effect.promise(() => FakeOpenAi.start(() => FakeOpenAi.completion({ content: "ok" }))),
          (s) => Effect.promise(() => s.close())
        )
        const anthropic = yield* Effect.acquireRelease(
          Effect.promise(() => FakeAnthropic.start(() => FakeAnthropic.text("ok"))),
          (s) => Effect.promise(() => s.close())
        )
        const check = (c: Case) =>
          Effect.gen(function*() {
            const store = Attachments.makeMemoryUnsafe()
            const { distinct, given, messages } = yield* build(store, c)
            assert.strictEqual(store.count(), distinct.size, "each content stored once")
            const inputModalities = c.modalities
            const models: ReadonlyArray<readonly ["openai" | "anthropic", LlmService]> = [
              [
                "openai",
                OpenAiLlm.makeUnsafe({
                  baseURL: openAi.url,
                  apiKey: "k",
                  model: "m",
                  maxRetries: 0,
                  attachments: store,
                  inputModalities
                })
              ],
              ["anthropic", yield* anthropicLlm(anthropic.url, { attachments: store, inputModalities, maxRetries: 0 })]
            ]
            for (const [name, llm] of models) {
              const fake = name === "openai" ? openAi : anthropic
              const before = fake.requests.length
              yield* llm.chat({ messages })
              assert.strictEqual(fake.requests.length, before + 1, `${name}: one request`)
              const body = JSON.stringify(fake.requests[before].body)
              // a part of a modality the model does not take never appears
              for (const modality of ["image", "file"] as const) {
                if (!c.modalities.includes(modality)) {
                  assert.notInclude(body, WIRE[name][modality], `${name}: ${modality} part sent`)
                }
              }
              for (const { part, seed } of given) {
                const ref = part.file
                const modality = Attachments.modalityOf(ref)
                if (!c.modalities.includes(modality)) {
                  // not taken: a note naming the file in its place
                  const note = `[Attachment ${Attachments.describe(ref)} not shown: this model cannot read ${
                    CANNOT[modality as "image" | "file"]
                  }.]`
                  assert.isTrue(holds(body, note), `${name}: no note "${note}" in ${body}`)
                } else if (ref.url !== undefined) {
                  assert.include(body, ref.url, `${name}: the caller's URL of ${ref.name} missing`)
                } else if (modality === "text") {
                  const text = `Attachment ${Attachments.describe(ref)}:\n\n${mdText(seed)}`
                  assert.isTrue(holds(body, text), `${name}: the text of ${ref.name} missing`)
                } else {
                  const stored = yield* store.get(ref.sha256!)
                  assert.include(body, b64(stored.bytes), `${name}: the bytes of ${ref.name} missing`)
                }
              }
            }
          })
        yield* Effect.promise(() =>
          fc.assert(fc.asyncProperty(caseArb, (c) => Effect.runPromise(Effect.scoped(check(c)))), { numRuns: 30 })
        )
      }).pipe(Effect.scoped),
    300_000
  )
})
