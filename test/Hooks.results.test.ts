/**
 * What the hook chains make of every shape a hook definition or a hook's
 * result can take, with the exact message each bad one gets.
 *
 * Written from a mutation run (docs/testing.md#mutation-testing): the
 * definition checks, the Post chain's outcome check and the Pre chain's
 * `{ allow: true }` without arguments could be changed without any test
 * failing.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Logger } from "effect"
import type { Hook, ToolOutcome, ToolUseContext } from "../src/Hooks.js"
import * as Hooks from "../src/Hooks.js"

const ctx: ToolUseContext = {
  toolName: "lookup",
  args: { q: "tides" },
  toolCallId: "call_1",
  iteration: 1,
  conversationId: "conv-1"
}
const ORIGINAL: ToolOutcome = { _tag: "Success", output: "original" }

/** The exact message `Hooks.make` throws for these hooks. */
const makeError = (hooks: ReadonlyArray<unknown>): string => {
  try {
    Hooks.makeUnsafe(hooks as ReadonlyArray<Hook>)
  } catch (error) {
    assert.instanceOf(error, Hooks.InvalidHook)
    return (error as Hooks.InvalidHook).message
  }
  return assert.fail("expected InvalidHook")
}

const valid = Hooks.pre({ name: "ok", run: () => Effect.void })
const raw = (fields: Record<string, unknown>) => ({
  _tag: "PreToolUse",
  name: "h",
  priority: 0,
  run: () => Effect.void,
  ...fields
})

/** Runs the Post chain of one hook returning `result`, with the warnings it logged. */
const post = (result: () => unknown) => {
  const warnings: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    if (logLevel._tag === "Warning") warnings.push(Array.isArray(message) ? message.join(" ") : String(message))
  })
  const service = Hooks.makeUnsafe([
    Hooks.post({ name: "rewrite", run: () => result() as Effect.Effect<ToolOutcome | void> })
  ])
  return service.runPostToolUse(ctx, ORIGINAL).pipe(
    Effect.provide(Logger.replace(Logger.defaultLogger, logger)),
    Effect.map((outcome) => ({ outcome, warnings }))
  )
}

const pre = (run: () => unknown) =>
  Hooks.makeUnsafe([Hooks.pre({ name: "policy", run: run as () => Effect.Effect<Hooks.PreResult> })]).runPreToolUse(ctx)

describe("Hooks.make: each bad definition gets its own message", () => {
  it("not an object, at its index", () => {
    assert.strictEqual(
      makeError([valid, null]),
      "Invalid hook: hook #1 is not a hook object (use Hooks.pre / Hooks.post)"
    )
    assert.strictEqual(makeError([42]), "Invalid hook: hook #0 is not a hook object (use Hooks.pre / Hooks.post)")
  })

  it("a wrong _tag names the hook by its name when it has one, else by its index", () => {
    assert.strictEqual(
      makeError([raw({ _tag: "Pre", name: "audit" })]),
      "Invalid hook: hook \"audit\" has _tag \"Pre\"; expected \"PreToolUse\" or \"PostToolUse\" (use Hooks.pre / Hooks.post)"
    )
    assert.strictEqual(
      makeError([valid, raw({ _tag: "Pre", name: "" })]),
      "Invalid hook: hook #1 has _tag \"Pre\"; expected \"PreToolUse\" or \"PostToolUse\" (use Hooks.pre / Hooks.post)"
    )
  })

  it("a name that is not a string labels the hook by its index", () => {
    assert.strictEqual(
      makeError([raw({ _tag: "Pre", name: ["audit"] })]),
      "Invalid hook: hook #0 has _tag \"Pre\"; expected \"PreToolUse\" or \"PostToolUse\" (use Hooks.pre / Hooks.post)"
    )
    assert.strictEqual(makeError([raw({ name: 42 })]), "Invalid hook: hook #0 needs a non-empty name")
  })

  it("a blank name, a priority that is not finite, a failOpen that is not a boolean", () => {
    assert.strictEqual(makeError([raw({ name: "   " })]), "Invalid hook: hook #0 needs a non-empty name")
    assert.strictEqual(
      makeError([raw({ priority: Infinity })]),
      "Invalid hook: hook \"h\" needs a finite number as priority, got Infinity"
    )
    assert.strictEqual(makeError([raw({ failOpen: "yes" })]), "Invalid hook: hook \"h\": failOpen must be a boolean")
  })

  it("a matcher entry that is not a non-empty string", () => {
    assert.strictEqual(
      makeError([raw({ matcher: ["fs__*", 42] })]),
      "Invalid hook: hook \"h\": matcher must be a non-empty glob string or a list of them, got 42"
    )
    assert.strictEqual(
      makeError([raw({ matcher: [""] })]),
      "Invalid hook: hook \"h\": matcher must be a non-empty glob string or a list of them, got \"\""
    )
  })
})

describe("Pre chain: results", () => {
  it.effect("{ allow: true } without arguments lets the call go on with its own arguments", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* pre(() => Effect.succeed({ allow: true })), { allow: true, args: { q: "tides" } })
    }))

  it.effect("a block with a blank reason gets a reason naming the hook", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* pre(() => Effect.succeed({ allow: false, reason: "  " })), {
        allow: false,
        reason: "Blocked by hook \"policy\"",
        hook: "policy"
      })
    }))

  it.effect("a string result, or a run that returns no Effect, blocks with what it was", () =>
    Effect.gen(function*() {
      const cases: Array<[() => unknown, string]> = [
        [() => Effect.succeed("yes"), "returned string instead of a PreResult"],
        [() => Effect.succeed(7), "returned number instead of a PreResult"],
        [() => null, "failed: defect: run returned null, not an Effect"],
        [() => 5, "failed: defect: run returned number, not an Effect"]
      ]
      for (const [run, problem] of cases) {
        assert.deepStrictEqual(yield* pre(run), {
          allow: false,
          reason: `The call to lookup was blocked because the policy hook "policy" ${problem}`,
          hook: "policy"
        })
      }
    }))

  it.effect("hooks of equal priority run in registration order", () =>
    Effect.gen(function*() {
      const ran: Array<string> = []
      const hook = (name: string) => Hooks.pre({ name, priority: 5, run: () => Effect.sync(() => void ran.push(name)) })
      yield* Hooks.makeUnsafe([hook("a"), hook("b"), hook("c"), hook("d")]).runPreToolUse(ctx)
      assert.deepStrictEqual(ran, ["a", "b", "c", "d"])
    }))
})

describe("Post chain: only a ToolOutcome replaces the outcome", () => {
  it.effect("a Failure with a message replaces it; Success with a text or a content object does", () =>
    Effect.gen(function*() {
      const failure: ToolOutcome = { _tag: "Failure", message: "redacted" }
      assert.deepStrictEqual((yield* post(() => Effect.succeed(failure))).outcome, failure)
      const rich: ToolOutcome = { _tag: "Success", output: { content: "<b>x</b>", contentType: "html" } }
      assert.deepStrictEqual((yield* post(() => Effect.succeed(rich))).outcome, rich)
    }))

  it.effect("anything else keeps the outcome and logs a warning", () =>
    Effect.gen(function*() {
      const bad: Array<unknown> = [
        "plain text",
        { _tag: "Failure" },
        { _tag: "Failure", message: 3 },
        { _tag: "Partial", output: "x" },
        { _tag: "Success", output: null },
        { _tag: "Success", output: { content: "x" } },
        { _tag: "Success", output: { contentType: "text/plain" } },
        { _tag: "Success", output: 42 }
      ]
      for (const result of bad) {
        const { outcome, warnings } = yield* post(() => Effect.succeed(result))
        assert.deepStrictEqual(outcome, ORIGINAL, JSON.stringify(result))
        assert.deepStrictEqual(warnings, [
          "PostToolUse hook \"rewrite\" returned something that is not a ToolOutcome; the observation is kept unchanged"
        ], JSON.stringify(result))
      }
    }))

  it.effect("returning nothing (undefined or null) keeps the outcome without a warning", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* post(() => Effect.void), { outcome: ORIGINAL, warnings: [] })
      assert.deepStrictEqual(yield* post(() => Effect.succeed(null)), { outcome: ORIGINAL, warnings: [] })
    }))
})
