import { assert, describe, it } from "@effect/vitest"
import * as fc from "effect/FastCheck"
import * as Message from "../src/Message.js"
import type { ChatMessage } from "../src/Message.js"
import { estimateMessage, estimateMessages, estimateText } from "../src/TokenEstimator.js"

describe("estimateText", () => {
  it("counts ASCII at 4 characters per token, rounding up", () => {
    assert.strictEqual(estimateText(""), 0)
    assert.strictEqual(estimateText("abcd"), 1)
    assert.strictEqual(estimateText("abcde"), 2)
    assert.strictEqual(estimateText("x".repeat(4000)), 1000)
  })

  it("counts other characters at 1.5 characters per token", () => {
    assert.strictEqual(estimateText("你好吗"), 2) // 3 / 1.5
    assert.strictEqual(estimateText("日本語のテキスト"), Math.ceil(8 / 1.5))
    // mixed: 8 ASCII (2 tokens) + 3 CJK (2 tokens)
    assert.strictEqual(estimateText("hello ab你好吗"), 4)
  })

  it("counts a surrogate pair (emoji) as one character", () => {
    assert.strictEqual(estimateText("😀😀😀"), 2)
  })
})

/** The rule, written the obvious way (code points). */
const reference = (text: string): number => {
  let ascii = 0
  let other = 0
  for (const ch of text) {
    if (ch.codePointAt(0)! < 128) ascii++
    else other++
  }
  return Math.ceil(ascii / 4 + other / 1.5)
}

describe("estimateText (property)", () => {
  it.prop(
    "matches the rule on any text",
    [fc.oneof(fc.string(), fc.fullUnicodeString(), fc.unicodeString())],
    ([text]) => {
      assert.strictEqual(estimateText(text), reference(text))
    }
  )
})

describe("estimateMessage", () => {
  it("adds 4 per message", () => {
    assert.strictEqual(estimateMessage(Message.user("abcd")), 5)
    assert.strictEqual(estimateMessage(Message.assistant(null)), 4)
  })

  it("counts 765 per image part plus the text parts", () => {
    const m = Message.user([
      { type: "text", text: "abcdefgh" },
      { type: "image_url", image_url: { url: "https://example.com/a.png" } },
      { type: "image_url", image_url: { url: "data:image/png;base64," + "A".repeat(100000) } }
    ])
    assert.strictEqual(estimateMessage(m), 4 + 2 + 765 * 2)
  })

  it("counts tool-call names and arguments", () => {
    const args = JSON.stringify({ path: "/var/log/" + "a".repeat(400) })
    const bare = estimateMessage(Message.assistant("ok"))
    const withCall = estimateMessage(
      Message.assistant("ok", { toolCalls: [Message.toolCall("c1", "read_file", args)] })
    )
    assert.isAtLeast(withCall - bare, estimateText(args) + estimateText("read_file"))
  })

  it("counts tool message content", () => {
    const m = Message.tool("call_1", "x".repeat(400), "read_file")
    assert.isAtLeast(estimateMessage(m), 104)
  })

  it("caches per message object", () => {
    const m = { role: "user", content: "x".repeat(400) } as { role: "user"; content: string }
    const first = estimateMessage(m)
    // messages are immutable by contract; mutating one shows the cached value is reused
    m.content = "y"
    assert.strictEqual(estimateMessage(m), first)
    assert.strictEqual(estimateMessage({ role: "user", content: "y" }), 5)
  })
})

describe("estimateMessages", () => {
  it("sums the per-message estimates", () => {
    const list: Array<ChatMessage> = [Message.system("abcd"), Message.user("你好吗"), Message.assistant("abcdefgh")]
    assert.strictEqual(estimateMessages(list), 5 + 6 + 6)
    assert.strictEqual(estimateMessages([]), 0)
  })
})
