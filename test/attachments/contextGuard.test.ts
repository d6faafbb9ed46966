/**
 * The context guard and attachments (docs/attachments.md): images count by
 * their dimensions, and over budget the oldest attachments give way — each
 * replaced by a note naming it — before any text is compacted: no compaction
 * call when that suffices, the text and the tool-call pairs untouched. When it
 * does not suffice, every file gives way before the text is summarised.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as Message from "../../src/Message.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import * as TokenEstimator from "../../src/TokenEstimator.js"

const image = (name: string): Message.FileRef => ({
  name,
  media_type: "image/png",
  size: 90_000,
  sha256: name.padEnd(64, "0").replace(/[^0-9a-f]/g, "0"),
  width: 2000,
  height: 2000
})

const OLD = image("a-old.png")
const MID = image("b-mid.png")
const NEW = image("c-new.png")

const conversation: ReadonlyArray<Message.ChatMessage> = [
  Message.system("You compare pictures."),
  Message.user([{ type: "text", text: "Compare these two." }, Message.file(OLD), Message.file(MID)]),
  Message.assistant(null, { toolCalls: [Message.toolCall("call_1", "camera", "{}")] }),
  Message.tool("call_1", "took a third", "camera", [Message.file(NEW)]),
  Message.user("And the third?")
]

const files = (messages: ReadonlyArray<Message.ChatMessage>) =>
  messages.flatMap((
    m
  ) => [...Message.filesOf(m.role === "user" ? m.content : null), ...(m.role === "tool" ? m.files ?? [] : [])])
    .map((f) => f.file.name)

describe("the context guard with attachments", () => {
  const perImage = TokenEstimator.estimateFile(OLD)

  it.effect("counts an image by its dimensions", () =>
    Effect.sync(() => {
      // 2000×2000: OpenAI 4 tiles (765), Anthropic ≈ 1072² / 750 (1533): the larger
      assert.strictEqual(
        perImage,
        Math.max(TokenEstimator.imageTokensOpenAi(2000, 2000), TokenEstimator.imageTokensAnthropic(2000, 2000))
      )
      assert.isAbove(TokenEstimator.estimateMessages(conversation), 3 * perImage)
    }))

  it.effect("over budget, the oldest attachments give way to notes; no compaction call, text and pairs kept", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("a summary")])
      const guard = ContextGuard.makeUnsafe({ llm: llm.service, keepRecent: 1 })
      const total = TokenEstimator.estimateMessages(conversation)
      // room for everything but two images
      const budget = total - 2 * perImage + 200
      const checked = yield* guard.checkAndCompact(conversation, { budget })
      assert.isTrue(checked.compacted)
      assert.isAtMost(TokenEstimator.estimateMessages(checked.messages), budget)
      assert.strictEqual(llm.requests.length, 0, "no compaction call")
      // the oldest two gave way, the tool's newest image stays
      assert.deepStrictEqual(files(checked.messages), ["c-new.png"])
      const query = checked.messages[1]
      assert.deepStrictEqual(
        query.role === "user" && typeof query.content !== "string" ? query.content.map((p) => p.type) : [],
        [
          "text",
          "text",
          "text"
        ]
      )
      const text = Message.textOf(query.content)
      assert.include(text, "Compare these two.")
      assert.include(text, "[Attachment \"a-old.png\" (image/png, 2000×2000")
      assert.include(text, "was left out to fit the context.]")
      assert.include(text, "\"b-mid.png\"")
      // roles, the call and its result, the last question: as they were
      assert.deepStrictEqual(checked.messages.map((m) => m.role), conversation.map((m) => m.role))
      assert.deepStrictEqual(checked.messages.slice(2), conversation.slice(2))
    }))

  it.effect("when notes are not enough, every file gives way before the text is summarised", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("a summary")])
      // the last three messages (the call, its result with the newest image, the question) are kept as they are
      const guard = ContextGuard.makeUnsafe({ llm: llm.service, keepRecent: 3 })
      // earlier turns of long text before the pictures: notes alone cannot make it fit
      const earlier = Array.from({ length: 6 }, (_, i) => [
        Message.user(`Question ${i}: ${"words ".repeat(300)}`),
        Message.assistant(`Answer ${i}: ${"more ".repeat(300)}`)
      ]).flat()
      const long = [conversation[0], ...earlier, ...conversation.slice(1)]
      const text = TokenEstimator.estimateMessages(long) - 3 * perImage
      const checked = yield* guard.checkAndCompact(long, { budget: Math.floor(text / 2) })
      assert.strictEqual(llm.requests.length, 1, "one compaction call")
      assert.include(JSON.stringify(checked.messages), "a summary")
      // every file gave way before the text was summarised, the newest too: a note in the kept tool message
      assert.deepStrictEqual(files(checked.messages), [])
      const result = checked.messages.find((m) => m.role === "tool")
      assert.include(result?.content, "took a third\n[Attachment \"c-new.png\"")
      assert.isAtMost(TokenEstimator.estimateMessages(checked.messages), Math.floor(text / 2))
    }))

  it.effect("JSON mode: an action and its Observation with files are one unit, also once a note took a file's place", () =>
    Effect.gen(function*() {
      const system = Message.system("sys")
      const query = Message.user("What happened?", { pinned: true })
      const action = Message.assistant("a".repeat(8000))
      const observation = Message.user([
        { type: "text", text: "Observation: the chart" },
        Message.file({ ...image("d-chart.png"), width: 64, height: 64 })
      ])
      const reply = Message.user("Thanks, noted.")
      // room for the Observation and the reply (truncation aims at 75% of the budget), not for the action
      const budget = Math.ceil(TokenEstimator.estimateMessages([system, query, observation, reply]) / 0.75)
      const checked = yield* ContextGuard.makeUnsafe({ budget }).checkAndCompact([
        system,
        query,
        action,
        observation,
        reply
      ])
      // the file gave way first (a note), then the Observation went with its action: never one without the other
      assert.deepStrictEqual(checked.messages, [system, query, reply])
    }))
})
