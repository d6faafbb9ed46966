/**
 * Which messages the context guard's LLM compaction summarises and which it
 * keeps verbatim (SPEC §7): the recent window is the newest units that fit
 * in the budget beside the system messages, the pinned units and the room
 * reserved for the summary (a pinned unit inside it costs the window
 * nothing; a unit that takes exactly the room left fits); when that room is
 * negative the model is not asked and the guard truncates instead, when it
 * is zero everything unpinned is summarised.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Message from "../src/Message.js"
import type { ChatMessage } from "../src/Message.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { estimateMessages } from "../src/TokenEstimator.js"

const system = Message.system("You are a helpful agent.")
const query = Message.user("What is the weather in Paris?", { pinned: true })

/** One tool round (an assistant call and its result) of about `size` characters. */
const round = (i: number, size = 800): Array<ChatMessage> => [
  Message.assistant(`Step ${i}: calling a tool`, {
    toolCalls: [Message.toolCall(`c${i}`, "search", `{"q":"paris ${i}"}`)]
  }),
  Message.tool(`c${i}`, `result ${i}: ` + "r".repeat(size), "search")
]

/** The room the guard reserves for the summary under `budget` (a fifth, 256 to 4000 tokens). */
const summaryRoom = (budget: number) => Math.min(4000, Math.max(256, Math.floor(budget / 5)))

describe("ContextGuard: what LLM compaction keeps", () => {
  it.effect("the recent window is the newest units that fit beside the summary's room; a pinned unit in it costs nothing", () =>
    Effect.gen(function*() {
      // larger than a round: were it to cost the window room, a round fewer would fit
      const pinnedNote = Message.user("Remember: metric units. " + "m".repeat(1000), { pinned: true })
      const units: Array<ReadonlyArray<ChatMessage>> = []
      for (let i = 0; i < 12; i++) units.push(round(i))
      units.splice(10, 0, [pinnedNote])
      const list = [system, query, ...units.flat()]
      const budget = 2600
      // what fits: from the newest unit back, stopping at the first that does not
      let room = budget - estimateMessages([system, query, pinnedNote]) - summaryRoom(budget)
      let start = units.length
      while (start > 0) {
        const u = units[start - 1]
        const pinned = u.every((m) => m.pinned === true)
        if (!pinned) {
          if (estimateMessages(u) > room) break
          room -= estimateMessages(u)
        }
        start--
      }
      assert.isTrue(start > 2 && start < 10, `a window of a few rounds, the pinned note inside it (start ${start})`)
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("The user asked about Paris; earlier searches found rain.")])
      const guard = ContextGuard.makeUnsafe({ llm: llm.service, budget, keepRecent: 100 })
      const result = yield* guard.checkAndCompact(list)
      assert.isTrue(result.compacted)
      assert.strictEqual(llm.requests.length, 1)
      const out = result.messages
      assert.strictEqual(out[0], system)
      assert.isTrue(Message.textOf(out[1].content).startsWith("[Conversation summary]"))
      assert.deepStrictEqual(out.slice(2), [query, ...units.slice(start).flat()])
      assert.isAtMost(estimateMessages(out), budget)
    }))

  it.effect("no room for a summary beside the pinned messages: the model is not asked, the guard truncates", () =>
    Effect.gen(function*() {
      const bigQuery = Message.user("q".repeat(1200), { pinned: true })
      const list = [system, bigQuery, ...round(0), ...round(1), ...round(2)]
      const budget = 500
      assert.isTrue(budget - estimateMessages([system, bigQuery]) - summaryRoom(budget) < 0)
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("never asked")])
      const result = yield* ContextGuard.makeUnsafe({ llm: llm.service, budget }).checkAndCompact(list)
      assert.strictEqual(llm.requests.length, 0)
      assert.isTrue(result.compacted)
      assert.deepStrictEqual(result.messages.slice(0, 2), [system, bigQuery])
      assert.isFalse(result.messages.some((m) => Message.textOf(m.content).startsWith("[Conversation summary]")))
    }))

  it.effect("a unit that takes exactly the room left is kept verbatim", () =>
    Effect.gen(function*() {
      const budget = 1000
      const room = budget - estimateMessages([system, query]) - summaryRoom(budget)
      // an ASCII message of n characters is 4 + n/4 tokens
      const newest = Message.user("n".repeat((room - 4) * 4))
      assert.strictEqual(estimateMessages([newest]), room)
      const list = [system, query, ...round(0), ...round(1), newest]
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("Two searches found rain.")])
      const result = yield* ContextGuard.makeUnsafe({ llm: llm.service, budget }).checkAndCompact(list)
      assert.strictEqual(llm.requests.length, 1)
      const out = result.messages
      assert.isTrue(Message.textOf(out[1].content).startsWith("[Conversation summary]"))
      assert.deepStrictEqual([out[0], ...out.slice(2)], [system, query, newest])
    }))

  it.effect("no room left beside the summary's (zero, not negative): everything unpinned is summarised", () =>
    Effect.gen(function*() {
      const budget = 1000
      const fixed = budget - summaryRoom(budget) - estimateMessages([system])
      const bigQuery = Message.user("q".repeat((fixed - 4) * 4), { pinned: true })
      assert.strictEqual(budget - estimateMessages([system, bigQuery]) - summaryRoom(budget), 0)
      const list = [system, bigQuery, ...round(0), ...round(1)]
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("Two searches found rain.")])
      const result = yield* ContextGuard.makeUnsafe({ llm: llm.service, budget }).checkAndCompact(list)
      assert.strictEqual(llm.requests.length, 1)
      const out = result.messages
      assert.strictEqual(out.length, 3)
      assert.isTrue(Message.textOf(out[1].content).startsWith("[Conversation summary]"))
      assert.deepStrictEqual([out[0], out[2]], [system, bigQuery])
    }))
})
