/**
 * Attachment bytes reach the model and nothing else (docs/attachments.md): a run
 * given a PNG and a PDF, whose tool returns another image, sends all three to
 * the model (the real `openai` SDK against the fake), while its events, its
 * result and every span (with message content captured) carry the files only
 * by reference — their hashes, never their bytes. (The server's log:
 * test/durable/attachments.test.ts reads a real server process's output.)
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Attachments from "../../src/Attachments.js"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as Hooks from "../../src/Hooks.js"
import * as Interrupts from "../../src/Interrupts.js"
import * as Message from "../../src/Message.js"
import * as OpenAiLlm from "../../src/OpenAiLlm.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import * as Telemetry from "../../src/Telemetry.js"
import * as Tool from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"
import * as Files from "../utils/attachmentFiles.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { makeSpanRecorder } from "../utils/spans.js"

const PHOTO = Files.png(64, 48, [30, 160, 90])
const REPORT = Files.pdf(2, "Quarterly")
const SHOT = Files.png(32, 32, [220, 200, 10])

/** Three slices of a file's base64 (start, middle, end): any one of them in a text is its bytes leaking. */
const slices = (bytes: Uint8Array): ReadonlyArray<string> => {
  const b64 = Buffer.from(bytes).toString("base64")
  const at = (i: number) => b64.slice(i, i + 24)
  return [at(8), at(Math.floor(b64.length / 2)), at(b64.length - 32)]
}

const assertNoBytes = (where: string, text: string) => {
  for (const [name, bytes] of [["photo", PHOTO], ["report", REPORT], ["screenshot", SHOT]] as const) {
    for (const s of slices(bytes)) assert.notInclude(text, s, `the bytes of the ${name} in ${where}`)
  }
}

const screenshot = Tool.make({
  name: "screenshot",
  description: "Takes a screenshot",
  parameters: Schema.Struct({}),
  dependencies: [Attachments.Attachments],
  handler: () =>
    Effect.gen(function*() {
      const store = yield* Attachments.Attachments
      const ref = yield* Effect.orDie(store.put(SHOT, { name: "screen.png" }))
      return { content: "took it", contentType: "text" as const, files: [Message.file(ref)] }
    })
})

/** Calls the tool once (a fresh id per request), then answers. */
const respond: FakeOpenAi.FakeResponder = (body, index) =>
  body.messages.some((m: any) => m.role === "tool")
    ? FakeOpenAi.completion({ content: "A green photo, a two-page report and a yellow screen." })
    : FakeOpenAi.completion({
      content: null,
      toolCalls: [{ id: FakeOpenAi.freshCallId(index), name: "screenshot", arguments: "{}" }]
    })

describe("attachment bytes go to the model only", () => {
  it.scoped("not in events, the result or spans with content; the model gets all three files", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(respond)
      const store = Attachments.makeMemoryUnsafe()
      const recorder = makeSpanRecorder()
      const photo = yield* store.put(PHOTO, { name: "photo.png" })
      const report = yield* store.put(REPORT, { name: "report.pdf" })
      const agent = ReactAgent.layer({ synthesis: "auto", useNativeTools: true }).pipe(
        Layer.provide(Layer.mergeAll(
          OpenAiLlm.layer({
            baseURL: fake.url,
            apiKey: "k",
            model: "gpt-test",
            maxRetries: 0,
            abilities: { streaming: false }
          }),
          Toolkit.layer([screenshot]),
          Hooks.layerNoop,
          ContextGuard.layer(),
          Interrupts.layerMemory
        )),
        Layer.provide(Layer.succeed(Attachments.Attachments, store))
      )
      const events = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) =>
        Stream.runCollect(a.run({
          query: [
            { type: "text", text: "Describe these and take a screenshot." },
            Message.file(photo),
            Message.file(report)
          ]
        }))).pipe(
          Effect.provide(agent),
          Effect.provide(Telemetry.layerInstrumentation({ captureContent: true })),
          Effect.provide(recorder.layer)
        )
      const all = Chunk.toReadonlyArray(events)
      const done = all.at(-1)
      assert.strictEqual(done?._tag, "Done")
      assert.strictEqual(
        done?._tag === "Done" ? done.answer : "",
        "A green photo, a two-page report and a yellow screen."
      )

      // the model got every file's bytes
      assert.strictEqual(fake.requests.length, 2)
      const wire = JSON.stringify(fake.requests.map((r) => r.body))
      for (const bytes of [PHOTO, REPORT, SHOT]) for (const s of slices(bytes)) assert.include(wire, s)

      // the run's events (Done's steps and messages included) refer by hash
      const stream = JSON.stringify(all)
      assert.strictEqual(all[0]._tag, "AttachmentsReceived")
      assert.include(stream, photo.sha256!)
      assert.include(stream, Attachments.sha256(SHOT))
      assertNoBytes("the run's events", stream)

      // spans, with message content captured: the files by hash, never their bytes
      const spans = recorder.spans()
      assert.isAbove(spans.length, 2)
      const traced = JSON.stringify(spans.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events })))
      assert.include(traced, `"file_id\\":\\"${report.sha256}`)
      assertNoBytes("the spans", traced)
    }))
})
