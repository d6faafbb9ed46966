/**
 * How the context guard's heuristic truncation groups messages into units
 * that are kept or dropped together (SPEC §7): a JSON-mode action and its
 * `Observation:` (only an unpinned user message starting so, after an
 * assistant message), everything else alone; and the room a truncation note
 * takes when a pinned assistant message comes first, exactly at the budget and
 * when the pinned messages alone are over it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Message from "../src/Message.js"
import type { ChatMessage } from "../src/Message.js"
import { estimateMessage, estimateMessages } from "../src/TokenEstimator.js"

const system = Message.system("sys")
const query = Message.user("What happened?", { pinned: true })

/**
 * A budget whose truncation target (¾ of it: truncation leaves room so a
 * growing list is not cut again at once) is `tokens`.
 */
const budgetFor = (tokens: number) => Math.ceil(tokens / 0.75)

/** The note truncation puts before a pinned assistant message that would come first (docs/context.md). */
const note = Message.user("[Earlier conversation truncated]")

/** The heuristic guard's answer with room for `fits` on top of the system message and the query. */
const truncated = (input: ReadonlyArray<ChatMessage>, fits: ReadonlyArray<ChatMessage>, extra = 0) =>
  Effect.map(
    ContextGuard.makeUnsafe({ budget: budgetFor(estimateMessages([system, query, ...fits]) + extra) }).checkAndCompact([
      system,
      query,
      ...input
    ]),
    (result) => result.messages
  )

describe("ContextGuard: units of the heuristic truncation", () => {
  it.effect("an action and a user message that is not an Observation are two units: the message can stay without its action", () =>
    Effect.gen(function*() {
      const action = Message.assistant("a".repeat(2000))
      const reply = Message.user("Thanks, noted.")
      const out = yield* truncated([action, reply], [reply])
      assert.deepStrictEqual(out, [system, query, reply])
    }))

  it.effect("a pinned Observation is a unit of its own: it stays, its unpinned action goes when it does not fit", () =>
    Effect.gen(function*() {
      const action = Message.assistant("a".repeat(2000))
      const observation = Message.user("Observation: kept", { pinned: true })
      const out = yield* truncated([action, observation], [observation])
      assert.deepStrictEqual(out, [system, query, observation])
    }))

  it.effect("an Observation after a user message is not paired with it", () =>
    Effect.gen(function*() {
      const earlier = Message.user("b".repeat(2000))
      const observation = Message.user("Observation: newest")
      const out = yield* truncated([earlier, observation], [observation])
      assert.deepStrictEqual(out, [system, query, observation])
    }))

  it.effect("a tool message that starts like an Observation after a plain assistant message is an orphan, dropped", () =>
    Effect.gen(function*() {
      const action = Message.assistant("thinking")
      const stray = Message.tool("nobody", "Observation: from nowhere", "search")
      const tail = Message.user("c".repeat(2000))
      // over the budget, so the guard truncates: the orphan goes, the action stays with the tail
      const out = yield* truncated([tail, action, stray], [action], 50)
      assert.notInclude(out, stray)
      assert.include(out, action)
    }))

  it.effect("the truncation note's room comes from the oldest unpinned messages kept", () =>
    Effect.gen(function*() {
      const pinnedAnswer: ChatMessage = { role: "assistant", content: "Earlier answer: 42", pinned: true }
      const older = Message.user("y".repeat(200))
      const newer = Message.user("z".repeat(200))
      const kept = [system, pinnedAnswer, older, newer]
      // the target has room for these but not for the note the pinned assistant message needs before them
      const target = estimateMessages(kept)
      const out = (yield* ContextGuard.makeUnsafe({ budget: budgetFor(target) }).checkAndCompact(
        [system, Message.user("x".repeat(4000)), pinnedAnswer, older, newer]
      )).messages
      assert.strictEqual(out[0], system)
      assert.strictEqual(out[1].role, "user")
      assert.include(Message.textOf(out[1].content), "truncated")
      assert.deepStrictEqual(out.slice(2), [pinnedAnswer, newer], "the older message made room for the note")
      assert.isAtMost(estimateMessages(out), target)
    }))

  it.effect("an action and its Observation are one unit: an Observation whose action does not fit goes with it", () =>
    Effect.gen(function*() {
      const observation = Message.user("Observation: 3 results")
      const reply = Message.user("Thanks, noted.")
      // an empty tool_calls array (which the HTTP API accepts) is an action like any other
      const actions: Array<ChatMessage> = [Message.assistant("a".repeat(2000)), {
        role: "assistant",
        content: "a".repeat(2000),
        tool_calls: []
      }]
      for (const action of actions) {
        const out = yield* truncated([action, observation, reply], [observation, reply])
        assert.deepStrictEqual(
          out,
          [system, query, reply],
          `tool_calls: ${JSON.stringify(action.role === "assistant" && action.tool_calls)}`
        )
      }
    }))

  it.effect("a multipart user message is not an Observation (those are plain text): it stays without its action", () =>
    Effect.gen(function*() {
      const action = Message.assistant("a".repeat(2000))
      const multipart = Message.user([{ type: "text", text: "Observation: see the chart" }])
      const out = yield* truncated([action, multipart], [multipart])
      assert.deepStrictEqual(out, [system, query, multipart])
    }))

  it.effect("the oldest message is kept when everything newer fits (here: an orphan, dropped, made the list too long)", () =>
    Effect.gen(function*() {
      const question = Message.user("What happened?")
      const orphan = Message.tool("gone", "o".repeat(4000), "search")
      const out =
        (yield* ContextGuard.makeUnsafe({ budget: budgetFor(estimateMessages([system, question])) }).checkAndCompact(
          [system, question, orphan]
        )).messages
      assert.deepStrictEqual(out, [system, question])
    }))

  it.effect("an unpinned assistant message dropped from the front gives its room back: the note then needs no more", () =>
    Effect.gen(function*() {
      const pinnedAnswer: ChatMessage = { role: "assistant", content: "Earlier answer: 42", pinned: true }
      const action = Message.assistant("a".repeat(200))
      const newer = Message.user("z".repeat(200))
      // room for the action too: the window keeps it, then drops it (it would come first)
      const target = estimateMessages([system, action, pinnedAnswer, newer])
      assert.isAbove(estimateMessage(action), estimateMessage(note))
      const out = (yield* ContextGuard.makeUnsafe({ budget: budgetFor(target) }).checkAndCompact(
        [system, Message.user("x".repeat(4000)), action, pinnedAnswer, newer]
      )).messages
      assert.deepStrictEqual(out, [system, note, pinnedAnswer, newer])
    }))

  it.effect("a note that fills the budget exactly costs no other message", () =>
    Effect.gen(function*() {
      const pinnedAnswer: ChatMessage = { role: "assistant", content: "Earlier answer: 42", pinned: true }
      const newer = Message.user("z".repeat(200))
      const target = estimateMessages([system, note, pinnedAnswer, newer])
      const out = (yield* ContextGuard.makeUnsafe({ budget: budgetFor(target) }).checkAndCompact(
        [system, Message.user("x".repeat(4000)), pinnedAnswer, newer]
      )).messages
      assert.deepStrictEqual(out, [system, note, pinnedAnswer, newer])
      assert.strictEqual(estimateMessages(out), target)
    }))

  it.effect("pinned messages alone over the budget, a pinned assistant message first: the guard still answers with them and the note", () =>
    Effect.gen(function*() {
      const pinnedAnswer: ChatMessage = { role: "assistant", content: "p".repeat(2000), pinned: true }
      const result = yield* ContextGuard.makeUnsafe({ budget: 100 }).checkAndCompact(
        [system, Message.user("x".repeat(4000)), pinnedAnswer, Message.user("z".repeat(200))]
      )
      assert.isTrue(result.compacted)
      assert.deepStrictEqual(result.messages, [system, note, pinnedAnswer])
    }))

  it.effect("a list of system and pinned messages only, over the budget: nothing to drop, the same array back, not compacted", () =>
    Effect.gen(function*() {
      const list = [
        system,
        Message.user("x".repeat(2000), { pinned: true }),
        Message.user("y".repeat(2000), { pinned: true })
      ]
      const guard = ContextGuard.makeUnsafe({ budget: 100 })
      assert.isFalse(guard.fits!(list))
      const result = yield* guard.checkAndCompact(list)
      assert.strictEqual(result.messages, list)
      assert.isFalse(result.compacted)
      assert.strictEqual(result.keptMessages, 3)
    }))
})
