/**
 * The Pre and Post chains behind `Hooks.make` / `makeUnsafe`.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ErrorMessage from "../../ErrorMessage.js"
import type { Hook, HooksService, PreDecision, ToolOutcome, ToolUseContext } from "../../Hooks.js"
import * as Telemetry from "../../Telemetry.js"
import { compileMatcher, type NameFilter } from "./matcher.js"

interface CompiledPre {
  readonly name: string
  readonly failOpen: boolean
  readonly applies: NameFilter
  readonly run: (context: ToolUseContext) => Effect.Effect<unknown, unknown>
}

interface CompiledPost {
  readonly name: string
  readonly applies: NameFilter
  readonly run: (context: ToolUseContext, outcome: ToolOutcome) => Effect.Effect<unknown, unknown>
}

/** Why a value is not a valid hook, or undefined when it is. */
export const invalidHook = (hook: unknown, index: number): string | undefined => {
  const at = `hook #${index}`
  if (typeof hook !== "object" || hook === null) return `${at} is not a hook object (use Hooks.pre / Hooks.post)`
  const h = hook as Record<string, unknown>
  const label = typeof h.name === "string" && h.name.length > 0 ? `hook "${h.name}"` : at
  if (h._tag !== "PreToolUse" && h._tag !== "PostToolUse") {
    return `${label} has _tag ${
      JSON.stringify(h._tag)
    }; expected "PreToolUse" or "PostToolUse" (use Hooks.pre / Hooks.post)`
  }
  if (typeof h.name !== "string" || h.name.trim().length === 0) return `${at} needs a non-empty name`
  if (typeof h.priority !== "number" || !Number.isFinite(h.priority)) {
    return `${label} needs a finite number as priority, got ${String(h.priority)}`
  }
  if (typeof h.run !== "function") return `${label} needs a run function`
  if (h.failOpen !== undefined && typeof h.failOpen !== "boolean") return `${label}: failOpen must be a boolean`
  const matcher = compileMatcher(h.matcher)
  if (typeof matcher === "string") return `${label}: ${matcher}`
  return undefined
}

/**
 * Runs a hook body: failures and defects (also a throwing `run`, or one that does not
 * return an Effect) become `Left(description)`; interruption propagates.
 */
const guarded = (body: () => unknown): Effect.Effect<Either.Either<unknown, string>> =>
  Effect.suspend(() => {
    const effect = body()
    // a guard on user code (a hook written in plain JavaScript may return anything), not a fast path
    return Effect.isEffect(effect)
      ? (effect as Effect.Effect<unknown, unknown>)
      : Effect.die(new Error(`run returned ${effect === null ? "null" : typeof effect}, not an Effect`))
  }).pipe(
    Effect.map(Either.right),
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause)
        ? Effect.failCause(cause as Cause.Cause<never>)
        : Effect.succeed(Either.left(ErrorMessage.fromCause(cause)))
    )
  )

/** A hook's decision as an event on the current (`execute_tool`) span. */
const decided = (
  event: "PreToolUse" | "PostToolUse",
  hook: string,
  decision: string,
  reason?: string
): Effect.Effect<void> =>
  Telemetry.spanEvent(
    `hook ${event}`,
    reason === undefined
      ? { [Telemetry.attributes.hookName]: hook, [Telemetry.attributes.hookDecision]: decision }
      : {
        [Telemetry.attributes.hookName]: hook,
        [Telemetry.attributes.hookDecision]: decision,
        [Telemetry.attributes.hookReason]: reason
      }
  )

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

type PreStep =
  | { readonly _tag: "Continue"; readonly args: Record<string, unknown> }
  | { readonly _tag: "Block"; readonly reason: string }
  | { readonly _tag: "Invalid"; readonly problem: string }

const interpretPre = (result: unknown, args: Record<string, unknown>, name: string): PreStep => {
  if (result === undefined || result === null) return { _tag: "Continue", args }
  if (!isRecord(result)) return { _tag: "Invalid", problem: `returned ${typeof result} instead of a PreResult` }
  if (result.allow === false) {
    const reason = typeof result.reason === "string" && result.reason.trim().length > 0
      ? result.reason
      : `Blocked by hook "${name}"`
    return { _tag: "Block", reason }
  }
  if (result.allow !== true) return { _tag: "Invalid", problem: "returned a result without allow: true | false" }
  if (result.args === undefined) return { _tag: "Continue", args }
  if (!isRecord(result.args)) {
    return { _tag: "Invalid", problem: "replaced the arguments with something that is not an object" }
  }
  return { _tag: "Continue", args: result.args }
}

const isOutcome = (u: unknown): u is ToolOutcome => {
  if (!isRecord(u)) return false
  if (u._tag === "Failure") return typeof u.message === "string"
  if (u._tag !== "Success") return false
  const output = u.output
  return typeof output === "string" || (isRecord(output) && typeof output.content === "string" &&
    typeof output.contentType === "string")
}

const compile = (hooks: ReadonlyArray<Hook>) => {
  // Array.prototype.sort is stable: equal priorities keep registration order.
  const sorted = hooks.map((hook, index) => ({ hook, index })).sort((a, b) =>
    a.hook.priority - b.hook.priority || a.index - b.index
  )
  const pre: Array<CompiledPre> = []
  const post: Array<CompiledPost> = []
  for (const { hook } of sorted) {
    const applies = compileMatcher(hook.matcher) as NameFilter
    if (hook._tag === "PreToolUse") {
      pre.push({ name: hook.name, failOpen: hook.failOpen === true, applies, run: hook.run })
    } else {
      post.push({ name: hook.name, applies, run: hook.run })
    }
  }
  return { pre, post }
}

/** Builds the service from already validated hooks. */
export const makeService = (hooks: ReadonlyArray<Hook>): HooksService => {
  const { post, pre } = compile(hooks)

  const runPreToolUse = (context: ToolUseContext): Effect.Effect<PreDecision> => {
    const matching = pre.filter((hook) => hook.applies(context.toolName))
    if (matching.length === 0) return Effect.succeed({ allow: true, args: context.args })
    return Effect.gen(function*() {
      let current = context
      for (const hook of matching) {
        const result = yield* guarded(() => hook.run(current))
        const step: PreStep = Either.isLeft(result)
          ? { _tag: "Invalid", problem: `failed: ${result.left}` }
          : interpretPre(result.right, current.args, hook.name)
        switch (step._tag) {
          case "Block":
            yield* decided("PreToolUse", hook.name, "block", step.reason)
            return { allow: false, reason: step.reason, hook: hook.name } as const
          case "Continue":
            yield* decided("PreToolUse", hook.name, step.args !== current.args ? "modify" : "allow")
            if (step.args !== current.args) current = { ...current, args: step.args }
            break
          case "Invalid": {
            const annotations = { hook: hook.name, toolName: context.toolName, conversationId: context.conversationId }
            yield* decided("PreToolUse", hook.name, hook.failOpen ? "fail_open" : "fail_closed", step.problem)
            if (hook.failOpen) {
              yield* Effect.logWarning(
                `PreToolUse hook "${hook.name}" ${step.problem}; it fails open, the call goes on`
              )
                .pipe(Effect.annotateLogs(annotations))
              break
            }
            yield* Effect.logWarning(
              `PreToolUse hook "${hook.name}" ${step.problem}; the call is blocked (fail closed)`
            )
              .pipe(Effect.annotateLogs(annotations))
            return {
              allow: false,
              reason:
                `The call to ${context.toolName} was blocked because the policy hook "${hook.name}" ${step.problem}`,
              hook: hook.name
            } as const
          }
        }
      }
      return { allow: true, args: current.args } as const
    })
  }

  const runPostToolUse = (context: ToolUseContext, outcome: ToolOutcome): Effect.Effect<ToolOutcome> => {
    const matching = post.filter((hook) => hook.applies(context.toolName))
    if (matching.length === 0) return Effect.succeed(outcome)
    return Effect.gen(function*() {
      let current = outcome
      for (const hook of matching) {
        const result = yield* guarded(() => hook.run(context, current))
        if (Either.isRight(result)) {
          if (result.right === undefined || result.right === null) {
            yield* decided("PostToolUse", hook.name, "keep")
            continue
          }
          if (isOutcome(result.right)) {
            yield* decided("PostToolUse", hook.name, "replace")
            current = result.right
            continue
          }
        }
        const problem = Either.isLeft(result)
          ? `failed: ${result.left}`
          : "returned something that is not a ToolOutcome"
        yield* decided("PostToolUse", hook.name, "invalid", problem)
        yield* Effect.logWarning(`PostToolUse hook "${hook.name}" ${problem}; the observation is kept unchanged`).pipe(
          Effect.annotateLogs({ hook: hook.name, toolName: context.toolName, conversationId: context.conversationId })
        )
      }
      return current
    })
  }

  return { runPreToolUse, runPostToolUse }
}
