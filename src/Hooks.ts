/**
 * PreToolUse / PostToolUse hooks. Hooks run outside the LLM loop: nothing
 * the model says can skip them.
 *
 * CONTRACT (the loop calls exactly these two functions; neither ever fails).
 *
 * A hook has a name, a priority (lower runs first; equal priorities keep
 * registration order), an optional tool-name glob filter and a `run` Effect:
 *
 * - Pre (`Hooks.pre`): may block (`{ allow: false, reason }`, the first block stops
 *   the chain), replace the arguments (`{ allow: true, args }`, later hooks see them),
 *   or allow unchanged (`void`). A Pre hook that fails or dies blocks the call
 *   (fail closed) unless it was made with `failOpen: true`.
 * - Post (`Hooks.post`): may replace the outcome (chained) or keep it (`void`). A Post
 *   hook that fails or dies keeps the outcome it received (logged as a warning).
 *
 * Interruption is never swallowed: it propagates out of both chains.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { compileMatcher } from "./internal/hooks/matcher.js"
import { invalidHook, makeService } from "./internal/hooks/runner.js"
import type { Tool } from "./Tool.js"
import type { ToolOutcome } from "./Tool.js"

/**
 * What a hook sees about the call.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolUseContext {
  readonly toolName: string
  readonly args: Record<string, unknown>
  readonly toolCallId?: string
  readonly iteration: number
  readonly conversationId: string
  /** The registered tool (absent for unknown tools). */
  readonly tool?: Tool
}

/**
 * The outcome of the Pre chain.
 *
 * @since 0.1.0
 * @category models
 */
export type PreDecision =
  | { readonly allow: true; readonly args: Record<string, unknown> }
  | { readonly allow: false; readonly reason: string; readonly hook: string }

export {
  /**
   * A tool call's outcome as Post hooks see and may rewrite it: `Tool.ToolOutcome`.
   *
   * @since 0.1.0
   * @category models
   */
  ToolOutcome
} from "./Tool.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface HooksService {
  readonly runPreToolUse: (context: ToolUseContext) => Effect.Effect<PreDecision>
  readonly runPostToolUse: (context: ToolUseContext, outcome: ToolOutcome) => Effect.Effect<ToolOutcome>
}

/**
 * What a Pre hook returns: allow (optionally with replacement arguments), block with
 * a reason the model reads as an error observation, or `void` (allow unchanged).
 *
 * @since 0.1.0
 * @category models
 */
export type PreResult =
  | { readonly allow: true; readonly args?: Record<string, unknown> }
  | { readonly allow: false; readonly reason: string }
  | void
  | undefined

/**
 * What a Post hook returns: a replacement outcome, or `void` to keep it.
 *
 * @since 0.1.0
 * @category models
 */
export type PostResult = ToolOutcome | void | undefined

/**
 * Tool-name filter: a glob (`*` any run of characters, `?` one character, matched
 * against the whole name, e.g. `"fs__*"`, `"write_*"`, `"*"`) or a list of globs (any
 * matches). Absent = every tool.
 *
 * @since 0.1.0
 * @category models
 */
export type Matcher = string | ReadonlyArray<string>

/**
 * @since 0.1.0
 * @category models
 */
export interface PreToolUseHook<R = never> {
  readonly _tag: "PreToolUse"
  readonly name: string
  readonly priority: number
  readonly matcher?: Matcher
  /** When true a failing hook lets the chain go on; default false (fail closed). */
  readonly failOpen: boolean
  readonly run: (context: ToolUseContext) => Effect.Effect<PreResult, unknown, R>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface PostToolUseHook<R = never> {
  readonly _tag: "PostToolUse"
  readonly name: string
  readonly priority: number
  readonly matcher?: Matcher
  readonly run: (context: ToolUseContext, outcome: ToolOutcome) => Effect.Effect<PostResult, unknown, R>
}

/**
 * @since 0.1.0
 * @category models
 */
export type Hook<R = never> = PreToolUseHook<R> | PostToolUseHook<R>

/**
 * @since 0.1.0
 * @category models
 */
export interface PreHookOptions<R = never> {
  readonly name: string
  /** Lower runs first; default 0. */
  readonly priority?: number
  readonly matcher?: Matcher
  readonly failOpen?: boolean
  readonly run: (context: ToolUseContext) => Effect.Effect<PreResult, unknown, R>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface PostHookOptions<R = never> {
  readonly name: string
  /** Lower runs first; default 0. */
  readonly priority?: number
  readonly matcher?: Matcher
  readonly run: (context: ToolUseContext, outcome: ToolOutcome) => Effect.Effect<PostResult, unknown, R>
}

/**
 * A hook definition that cannot run (bad name, priority, matcher or run).
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidHook extends Schema.TaggedError<InvalidHook>()("InvalidHook", {
  message: Schema.String
}) {}

const check = <H>(hook: H): H => {
  const problem = invalidHook(hook, 0)
  if (problem !== undefined) throw new InvalidHook({ message: `Invalid hook: ${problem}` })
  return hook
}

/**
 * Defines a PreToolUse hook. Throws `InvalidHook` on a bad definition.
 *
 * @since 0.1.0
 * @category constructors
 */
export const pre = <R = never>(options: PreHookOptions<R>): PreToolUseHook<R> =>
  check({
    _tag: "PreToolUse",
    name: options.name,
    priority: options.priority ?? 0,
    ...(options.matcher !== undefined ? { matcher: options.matcher } : {}),
    failOpen: options.failOpen ?? false,
    run: options.run
  })

/**
 * Defines a PostToolUse hook. Throws `InvalidHook` on a bad definition.
 *
 * @since 0.1.0
 * @category constructors
 */
export const post = <R = never>(options: PostHookOptions<R>): PostToolUseHook<R> =>
  check({
    _tag: "PostToolUse",
    name: options.name,
    priority: options.priority ?? 0,
    ...(options.matcher !== undefined ? { matcher: options.matcher } : {}),
    run: options.run
  })

const validateAll = (hooks: ReadonlyArray<Hook<any>>): void => {
  if (!Array.isArray(hooks)) throw new InvalidHook({ message: "Invalid hooks: expected an array of hooks" })
  hooks.forEach((hook, index) => {
    const problem = invalidHook(hook, index)
    if (problem !== undefined) throw new InvalidHook({ message: `Invalid hook: ${problem}` })
  })
}

/**
 * Builds the service at once from hooks that need no service (sorted once by
 * priority, then registration order). Throws `InvalidHook` on a bad definition.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe = (hooks: ReadonlyArray<Hook>): HooksService => {
  validateAll(hooks)
  return makeService(hooks)
}

/**
 * Compiles a matcher once (absent = every tool): a test of tool names. Throws
 * `InvalidHook` on a bad matcher. The same glob rules serve the agent's
 * `approvalTools`.
 *
 * @since 0.1.0
 * @category utils
 */
export const compile = (matcher: Matcher | undefined): (toolName: string) => boolean => {
  const filter = compileMatcher(matcher)
  if (typeof filter === "string") throw new InvalidHook({ message: `Invalid matcher: ${filter}` })
  return filter
}

/**
 * True when the matcher (absent = every tool) selects the tool name.
 *
 * @since 0.1.0
 * @category utils
 */
export const matches = (matcher: Matcher | undefined, toolName: string): boolean => compile(matcher)(toolName)

const provideHook = <R>(hook: Hook<R>, context: Context.Context<R>): Hook => {
  // Non-Effect returns pass through untouched so the runner reports them.
  const provide = (effect: unknown): any =>
    Effect.isEffect(effect) ? Effect.provide(effect as Effect.Effect<unknown, unknown, R>, context) : effect
  return hook._tag === "PreToolUse"
    ? { ...hook, run: (ctx: ToolUseContext) => provide(hook.run(ctx)) }
    : { ...hook, run: (ctx: ToolUseContext, outcome: ToolOutcome) => provide(hook.run(ctx, outcome)) }
}

/**
 * The service for hooks needing services `R`, which are captured now. Dies
 * with `InvalidHook` on a bad definition.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = <R = never>(hooks: ReadonlyArray<Hook<R>>): Effect.Effect<HooksService, never, R> =>
  Effect.map(Effect.context<R>(), (context) => {
    validateAll(hooks)
    return makeService(hooks.map((hook) => provideHook(hook, context)))
  })

/**
 * @since 0.1.0
 * @category Context
 */
export class Hooks extends Context.Tag("effect-react-engine/Hooks")<Hooks, HooksService>() {}

/**
 * A layer running the given hooks; hooks that need services take them from the
 * layer's context. Dies with `InvalidHook` on a bad definition.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <R = never>(hooks: ReadonlyArray<Hook<R>>): Layer.Layer<Hooks, never, R> =>
  Layer.effect(Hooks, make(hooks))

/**
 * No hooks: every call is allowed unchanged, every outcome kept.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerNoop: Layer.Layer<Hooks> = Layer.succeed(Hooks, makeService([]))
