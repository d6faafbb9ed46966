/**
 * The context guard's per-message hard cut (SPEC §7) on the content the other
 * tests do not give it: multipart messages (text parts around images) and
 * text whose cut falls inside a surrogate pair. A cut message is at most
 * `maxMsgChars` characters of text including the `[Truncated]` suffix, keeps
 * its images, and never ends in half a character.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Message from "../src/Message.js"
import type { ChatMessage, ContentPart } from "../src/Message.js"

const SUFFIX = "\n[Truncated]"
const image = (n: number): ContentPart => ({ type: "image_url", image_url: { url: `data:image/png;base64,${n}` } })
const text = (t: string): ContentPart => ({ type: "text", text: t })

/** The guard's answer for `[system, pinned query, message]` with a 1,000-character limit. */
const cutOf = (message: ChatMessage) =>
  Effect.gen(function*() {
    const guard = ContextGuard.makeUnsafe({ budget: 1_000_000, maxMsgChars: 1000 })
    const list = [Message.system("sys"), Message.user("q", { pinned: true }), Message.assistant("ok"), message]
    const result = yield* guard.checkAndCompact(list)
    assert.isTrue(result.compacted)
    assert.deepStrictEqual(result.messages.slice(0, 3), list.slice(0, 3), "only the oversized message is replaced")
    return result.messages[3]
  })

describe("ContextGuard: the per-message cut", () => {
  it.effect("multipart: text parts kept while they fit, the part that does not is cut and marked, later text dropped, every image kept", () =>
    Effect.gen(function*() {
      const message = Message.user([
        text("a".repeat(600)),
        image(1),
        text("b".repeat(600)),
        text("c".repeat(100)),
        image(2)
      ])
      const cut = yield* cutOf(message)
      assert.strictEqual(cut.role, "user")
      const parts = cut.content as ReadonlyArray<ContentPart>
      assert.deepStrictEqual(parts.map((p) => p.type), ["text", "image_url", "text", "image_url"])
      assert.deepStrictEqual(parts[0], text("a".repeat(600)), "a part that fits is kept whole")
      assert.deepStrictEqual(parts[1], image(1))
      assert.deepStrictEqual(parts[2], text("b".repeat(1000 - 600 - SUFFIX.length) + SUFFIX))
      assert.deepStrictEqual(parts[3], image(2), "an image after the cut is kept")
      assert.strictEqual(Message.textOf(cut.content).length, 1000)
    }))

  it.effect("multipart: a part that fits exactly is kept whole and the next one is cut to nothing but the mark", () =>
    Effect.gen(function*() {
      const room = 1000 - SUFFIX.length
      const cut = yield* cutOf(Message.user([text("a".repeat(room)), text("b".repeat(50))]))
      assert.deepStrictEqual(cut.content, [text("a".repeat(room)), text(SUFFIX)])
    }))

  it.effect("a cut never splits a surrogate pair: the character goes whole or not at all", () =>
    Effect.gen(function*() {
      const room = 1000 - SUFFIX.length
      // one ASCII character first, so the room (988) ends between the two halves of an emoji
      const cut = yield* cutOf(Message.user("x" + "😀".repeat(700)))
      const content = Message.textOf(cut.content)
      assert.isTrue(content.endsWith(SUFFIX))
      const kept = content.slice(0, -SUFFIX.length)
      assert.strictEqual(kept.length, room - 1, "the half emoji is left out")
      assert.strictEqual(kept, "x" + "😀".repeat((room - 2) / 2))
      assert.isFalse(/[\uD800-\uDBFF]$/.test(kept))
    }))

  it.effect("the half left out is the one before the boundary: what follows the cut does not matter", () =>
    Effect.gen(function*() {
      const room = 1000 - SUFFIX.length
      // the emoji's high half is the last character that fits; ASCII text after it
      const cut = yield* cutOf(Message.user("x".repeat(room - 1) + "😀" + "y".repeat(100)))
      assert.strictEqual(Message.textOf(cut.content), "x".repeat(room - 1) + SUFFIX)
    }))

  it.effect("a cut at an even boundary keeps every character (nothing left out needlessly)", () =>
    Effect.gen(function*() {
      const room = 1000 - SUFFIX.length
      const cut = yield* cutOf(Message.user("😀".repeat(700)))
      assert.strictEqual(Message.textOf(cut.content), "😀".repeat(room / 2) + SUFFIX)
    }))
})
