/**
 * The incremental check (docs/context.md, "Cost of a check"): a list checked before
 * and grown since is resumed after the part already seen, with the same result as
 * a full walk; a list that is not a continuation is walked in full.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import * as fc from "effect/FastCheck"
import type { CheckResult, ContextGuardService } from "../src/ContextGuard.js"
import * as ContextGuard from "../src/ContextGuard.js"
import { makeScanner } from "../src/internal/contextGuard/scan.js"
import * as Message from "../src/Message.js"
import type { ChatMessage } from "../src/Message.js"

const MAX_CHARS = 2000

/** A valid ReAct-shaped stream of messages: system, pinned query, then tool rounds and chatter. */
const stream = fc.array(
  fc.record({
    kind: fc.constantFrom("user", "assistant", "tools"),
    size: fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 1, max: 800 }) }, {
      weight: 2,
      arbitrary: fc.integer({ min: 1500, max: 4000 })
    })
  }),
  { maxLength: 40 }
).map((turns) => {
  const out: Array<ChatMessage> = [
    Message.system("You are an agent. ".repeat(20)),
    Message.user("Question?", { pinned: true })
  ]
  turns.forEach((t, n) => {
    const text = (n % 4 === 0 ? "数据" : `t${n} `).repeat(t.size).slice(0, t.size)
    if (t.kind === "user") out.push(Message.user(text))
    else if (t.kind === "assistant") out.push(Message.assistant(text))
    else {
      out.push(Message.assistant(null, { toolCalls: [Message.toolCall(`c${n}`, "search", `{"n":${n}}`)] }))
      out.push(Message.tool(`c${n}`, text, "search"))
    }
  })
  return out
})

type Op =
  | { readonly _tag: "push"; readonly count: number }
  | { readonly _tag: "copy"; readonly count: number }
  | { readonly _tag: "replaceFirst" }
  | { readonly _tag: "copyMutate"; readonly at: number; readonly size: number }

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 4 }).map((count) => ({ _tag: "push" as const, count })) },
  { weight: 3, arbitrary: fc.integer({ min: 0, max: 4 }).map((count) => ({ _tag: "copy" as const, count })) },
  { weight: 1, arbitrary: fc.constant({ _tag: "replaceFirst" as const }) },
  {
    weight: 1,
    arbitrary: fc.record({ at: fc.nat(), size: fc.integer({ min: 1, max: 5000 }) }).map((r) => ({
      _tag: "copyMutate" as const,
      ...r
    }))
  }
)

/** What a fresh guard (no memory: a full walk) says about the same list. */
const fullWalk = (list: ReadonlyArray<ChatMessage>, budget: number): CheckResult =>
  Effect.runSync(ContextGuard.makeUnsafe({ budget, maxMsgChars: MAX_CHARS }).checkAndCompact(list))

const assertSame = (actual: CheckResult, expected: CheckResult, input: ReadonlyArray<ChatMessage>) => {
  assert.strictEqual(actual.compacted, expected.compacted)
  assert.strictEqual(actual.originalMessages, expected.originalMessages)
  assert.strictEqual(actual.keptMessages, expected.keptMessages)
  assert.deepStrictEqual(actual.messages, expected.messages)
  if (!expected.compacted) assert.strictEqual(actual.messages, input, "same array when it fits")
}

const check = (guard: ContextGuardService, list: ReadonlyArray<ChatMessage>) =>
  Effect.runSync(guard.checkAndCompact(list))

describe("ContextGuard incremental check", () => {
  it.prop(
    "a guard that remembers earlier checks gives the same results as a full walk",
    {
      source: stream,
      start: fc.nat({ max: 6 }),
      ops: fc.array(op, { maxLength: 25 }),
      budget: fc.integer({ min: 300, max: 20000 })
    },
    ({ budget, ops, source, start }) => {
      const guard = ContextGuard.makeUnsafe({ budget, maxMsgChars: MAX_CHARS })
      let next = Math.min(source.length, 2 + start)
      // the loop's pattern: one array, appended to, replaced by the result after a compaction
      let current: Array<ChatMessage> = source.slice(0, next)
      const step = () => {
        const result = check(guard, current)
        assertSame(result, fullWalk(current, budget), current)
        if (result.compacted) current = result.messages.slice()
      }
      step()
      let version = 0
      for (const o of ops) {
        if (o._tag === "push" || o._tag === "copy") {
          const added = source.slice(next, next + o.count)
          next += added.length
          if (o._tag === "push") {
            for (const m of added) current.push(m)
          } else current = [...current, ...added]
        } else if (o._tag === "replaceFirst") {
          current[0] = Message.system(`You are an agent, version ${++version}. `.repeat(1 + (version % 5) * 40))
        } else if (current.length > 0) {
          const copy = current.slice()
          copy[o.at % copy.length] = Message.user("m".repeat(o.size))
          current = copy
        }
        step()
      }
    },
    { fastCheck: { numRuns: 200 } }
  )

  it("a different list that changed an early message is walked again (cut and budget)", () => {
    const guard = ContextGuard.makeUnsafe({ budget: 400, maxMsgChars: MAX_CHARS })
    const first: Array<ChatMessage> = [Message.system("sys"), Message.user("q", { pinned: true })]
    for (let i = 0; i < 6; i++) first.push(Message.assistant(`answer ${i}`), Message.user(`follow-up ${i}`))
    const a = check(guard, first)
    assert.isFalse(a.compacted)
    // same length, same last message, an early message replaced by an over-long one
    const mutated = first.slice()
    mutated[3] = Message.user("x".repeat(5000))
    const b = check(guard, [...mutated, Message.assistant("more")])
    assert.isTrue(b.compacted, "the over-long early message is seen")
    for (const m of b.messages) assert.isAtMost(Message.textOf(m.content).length, MAX_CHARS)
    assertSame(b, fullWalk([...mutated, Message.assistant("more")], 400), [...mutated, Message.assistant("more")])
    // and the original list, grown, is still checked correctly afterwards
    const grown = [...first, Message.assistant("fine")]
    assertSame(check(guard, grown), fullWalk(grown, 400), grown)
  })

  it("the same array with its first message replaced in place is walked again", () => {
    const guard = ContextGuard.makeUnsafe({ budget: 300, maxMsgChars: MAX_CHARS })
    const list: Array<ChatMessage> = [
      Message.system("short"),
      Message.user("q", { pinned: true }),
      Message.assistant("a")
    ]
    assert.isFalse(check(guard, list).compacted)
    list[0] = Message.system("a much longer system prompt ".repeat(60))
    list.push(Message.user("next"))
    const result = check(guard, list)
    assertSame(result, fullWalk(list, 300), list)
    assert.isTrue(result.compacted, "the larger prompt no longer fits")
  })

  it("the scanner walks only the new messages of a continued list", () => {
    const scan = makeScanner(MAX_CHARS)
    const list: Array<ChatMessage> = Array.from({ length: 100 }, (_, i) => Message.user(`m${i}`))
    assert.strictEqual(scan(list).walked, 100)
    list.push(Message.assistant("one"))
    assert.strictEqual(scan(list).walked, 1, "same array, one appended")
    assert.strictEqual(scan(list).walked, 0, "same array, nothing new")
    const copy = [...list, Message.user("two"), Message.user("three")]
    assert.strictEqual(scan(copy).walked, 3, "a new array whose first 100 messages are those of the first full walk")
    const copy2 = [...copy, Message.user("four")]
    assert.strictEqual(scan(copy2).walked, 1, "a new array continuing the last one")
    const changed = copy2.slice()
    changed[50] = Message.user("changed")
    assert.strictEqual(scan(changed).walked, 104, "an early message changed: full walk")
    const total = scan(changed).total
    let expected = 0
    for (const m of changed) expected += ContextGuard.makeUnsafe().estimate([m])
    assert.strictEqual(total, expected)
  })
})
