/**
 * What the compaction model reads (src/internal/contextGuard/prompts.ts): one
 * transcript entry per summarised message — user text with images marked,
 * tool results with their tool and call id, assistant text and tool calls,
 * very long entries clipped in the middle — and, when the transcript is over
 * its token allowance, the oldest entries left out with a note saying how
 * many. The mutation run found none of it checked.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as ContextGuardModule from "../src/ContextGuard.js"
import * as Message from "../src/Message.js"
import type { ChatMessage } from "../src/Message.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"

/** The transcript of the (only) compaction request, between the conversation tags. */
const transcriptOf = (llm: ScriptedLlm.ScriptedLlm): string => {
  const request = llm.requests[0]!.request
  assert.strictEqual(request.messages[0]!.role, "system")
  assert.strictEqual(request.messages[1]!.role, "user")
  const text = Message.textOf(request.messages[1]!.content)
  const match = /^Summarise this conversation:\n\n<conversation>\n([\s\S]*)\n<\/conversation>$/.exec(text)
  assert.isNotNull(match, text.slice(0, 200))
  return match![1]!
}

describe("ContextGuard: the compaction transcript", () => {
  it.effect("one entry per message: user text (an image already left out by the guard, its note), assistant text and calls, tool results, an empty assistant turn; a long entry clipped in the middle", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("summary")], { contextSize: 200_000 })
      const guard = ContextGuardModule.makeUnsafe({ llm: llm.service, budget: 500, keepRecent: 1 })
      const long = "H".repeat(6000) + "M".repeat(3000) + "T".repeat(2000)
      const input: Array<ChatMessage> = [
        Message.system("You are an agent."),
        Message.user([{ type: "text", text: "Look at " }, {
          type: "image_url",
          image_url: { url: "data:image/png;base64,AAAA" }
        }, { type: "text", text: "this." }]),
        Message.assistant("Let me check.", {
          toolCalls: [Message.toolCall("c1", "search", "{\"q\":\"paris\"}"), Message.toolCall("c2", "clock", "{}")]
        }),
        Message.tool("c1", "18°C in Paris", "search"),
        Message.tool("c2", "noon"),
        Message.assistant(null),
        Message.user(long),
        Message.user("And now?")
      ]
      const result = yield* guard.checkAndCompact(input)
      assert.isTrue(result.compacted)
      const entries = transcriptOf(llm).split("\n\n")
      assert.deepStrictEqual(entries.slice(0, 5), [
        "User: Look at [An image was left out to fit the context.]this.",
        "Assistant: Let me check.\nAssistant called search [c1] with {\"q\":\"paris\"}\nAssistant called clock [c2] with {}",
        "Tool result (search) [c1]: 18°C in Paris",
        "Tool result [c2]: noon", // no tool name recorded
        "Assistant: (no content)"
      ])
      assert.strictEqual(entries[5], `User: ${"H".repeat(6000)}\n…[3000 characters omitted]…\n${"T".repeat(2000)}`)
      assert.strictEqual(entries.length, 6, "the recent message is not in the transcript")
    }))

  it.effect("an entry just over the clip limit is kept whole up to 8,100 characters", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("summary")], { contextSize: 200_000 })
      const guard = ContextGuardModule.makeUnsafe({ llm: llm.service, budget: 3000, keepRecent: 1 })
      const whole = "w".repeat(8100)
      yield* guard.checkAndCompact([Message.user(whole), Message.user("x".repeat(8101)), Message.user("And now?")])
      const entries = transcriptOf(llm).split("\n\n")
      assert.strictEqual(entries[0], `User: ${whole}`)
      assert.include(entries[1], "…[101 characters omitted]…")
    }))

  it.effect("over its allowance, the oldest entries are left out with a note saying how many; the newest are kept", () =>
    Effect.gen(function*() {
      // a small model: the transcript gets its floor of 1000 tokens
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("summary")], { contextSize: 4000 })
      const guard = ContextGuardModule.makeUnsafe({ llm: llm.service, budget: 3000, keepRecent: 1 })
      const old = Array.from({ length: 40 }, (_, i) => Message.user(`message ${i} ` + "word ".repeat(60)))
      yield* guard.checkAndCompact([...old, Message.user("And now?")])
      const entries = transcriptOf(llm).split("\n\n")
      const note = /^\[(\d+) earlier message\(s\) omitted\]$/.exec(entries[0]!)
      assert.isNotNull(note, entries[0])
      const omitted = Number(note![1])
      assert.isAbove(omitted, 0)
      assert.strictEqual(omitted + entries.length - 1, old.length, "every message is either omitted or kept")
      assert.isTrue(entries[1]!.startsWith(`User: message ${omitted} `), "the kept ones follow the omitted ones")
      assert.isTrue(entries[entries.length - 1]!.startsWith("User: message 39 "))
      // about 1000 tokens kept, not far fewer
      assert.isAbove(entries.length - 1, 10)
    }))

  it.effect("the newest entry is kept even when it alone is over the allowance", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("summary")], { contextSize: 4000 })
      const guard = ContextGuardModule.makeUnsafe({ llm: llm.service, budget: 1500, keepRecent: 1 })
      const huge = "数据".repeat(4000) // about a token a character: over the allowance alone
      yield* guard.checkAndCompact([Message.user("first"), Message.user(huge), Message.user("And now?")])
      assert.deepStrictEqual(transcriptOf(llm).split("\n\n"), ["[1 earlier message(s) omitted]", `User: ${huge}`])
    }))
})
