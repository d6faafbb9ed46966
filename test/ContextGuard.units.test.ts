/**
 * How the context guard's heuristic truncation groups messages into units
 * that are kept or dropped together (SPEC §7): a JSON-mode action and its
 * `Observation:` (only an unpinned user message starting so, after an
 * assistant message), everything else alone; and the room a truncation note
 * takes when a pinned assistant message comes first.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Message from "../src/Message.js"
import type { ChatMessage } from "../src/Message.js"
import { estimateMessages } from "../src/TokenEstimator.js"

const system = Message.system("sys")
const query = Message.user("What happened?", { pinned: true })

/**
 * A budget whose truncation target (¾ of it: truncation leaves room so a
 * growing list is not cut again at once) is `tokens`.
 */
const budgetFor = (tokens: number) => Math.ceil(tokens / 0.75)

/** The heuristic guard's answer with room for `fits` on top of the system message and the query. */
const truncated = (input: ReadonlyArray<ChatMessage>, fits: ReadonlyArray<ChatMessage>, extra = 0) =>
  Effect.map(
    ContextGuard.makeUnsafe({ budget: budgetFor(estimateMessages([system, query, ...fits]) + extra) }).checkAndCompact([system, query, ...input]),
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
})
