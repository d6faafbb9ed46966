/**
 * Keeps the message list inside the token budget every iteration.
 *
 * CONTRACT (the loop and the server call `checkAndCompact`; it never fails).
 *
 * `checkAndCompact(messages, { budget?, hint? })`:
 * 1. cuts any single message over `maxMsgChars` (suffix `[Truncated]`);
 * 2. returns the list unchanged (same array) when its estimate fits the budget;
 * 3. otherwise attachments give way first: the oldest first, each replaced by a
 *    note naming it, until the list fits (images count by their dimensions,
 *    PDFs by their pages: `TokenEstimator.estimateFile`);
 * 4. otherwise, with a compaction LLM, summarises the oldest unpinned messages
 *    into one `[Conversation summary]` user message placed after the system
 *    messages, keeping system messages, pinned messages and the `keepRecent` most
 *    recent messages verbatim; without one, or when compaction fails or does not
 *    fit, heuristic truncation keeps system + pinned, then the newest messages
 *    that fit in three quarters of the budget (room for the next calls: the
 *    prompt's prefix stays stable rather than sliding on every call).
 *
 * Invariants: system and pinned messages survive; a tool-call group (an assistant
 * message with `tool_calls` and its tool messages) is kept or dropped whole; the
 * list never starts (after the system messages) with an assistant message; the
 * result fits the budget whenever the system and pinned messages alone do.
 *
 * Cost: a check of a list checked before and only appended to since (the loop's
 * pattern) measures and estimates only the new messages (`internal/contextGuardScan`);
 * anything else is walked in full, with the same result.
 *
 * See docs/context.md.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { lighten } from "./internal/contextGuard/attachments.js"
import { assemble, heuristic, planCompaction, sameMessages } from "./internal/contextGuard/compact.js"
import { request as compactionRequest } from "./internal/contextGuard/prompts.js"
import { makeScanner } from "./internal/contextGuard/scan.js"
import type { LlmService } from "./Llm.js"
import type { ChatMessage } from "./Message.js"
import type { ModelRegistryService } from "./ModelRegistry.js"
import * as ModelRegistry from "./ModelRegistry.js"
import * as Telemetry from "./Telemetry.js"
import { estimateMessages } from "./TokenEstimator.js"
import * as Usage from "./Usage.js"

/**
 * Which compaction prompt to use.
 *
 * @since 0.1.0
 * @category models
 */
export type CompactHint = "react_iteration" | "planner_input" | "step_dependency" | "general"

/**
 * @since 0.1.0
 * @category models
 */
export interface CheckOptions {
  /** Token budget for this check (default: the guard's configured budget). */
  readonly budget?: number
  readonly hint?: CompactHint
}

/**
 * @since 0.1.0
 * @category models
 */
export interface CheckResult {
  readonly messages: ReadonlyArray<ChatMessage>
  /** True when the list changed by compaction or truncation (a `compact` event is due). */
  readonly compacted: boolean
  readonly originalMessages: number
  readonly keptMessages: number
  /** Usage of the compaction LLM call(s), `Usage.empty` when none. */
  readonly usage: Usage.Usage
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ContextGuardService {
  /** The configured budget in tokens. */
  readonly budget: number
  readonly checkAndCompact: (messages: ReadonlyArray<ChatMessage>, options?: CheckOptions) => Effect.Effect<CheckResult>
  /**
   * True when `checkAndCompact` would return the list unchanged without calling
   * anything: no message over the cut, the estimate within the budget. A pure
   * function of the list and the options: the loop stores a check (a journal
   * activity, since a compaction may call a model) only where `fits` says the
   * list may change. It must agree with `checkAndCompact`: a wrapper that
   * replaces `checkAndCompact` replaces `fits` too (`() => false` has every
   * check made, and stored).
   */
  readonly fits: (messages: ReadonlyArray<ChatMessage>, options?: CheckOptions) => boolean
  /** Estimated tokens of a message list. */
  readonly estimate: (messages: ReadonlyArray<ChatMessage>) => number
}

/**
 * @since 0.1.0
 * @category Context
 */
export class ContextGuard
  extends Context.Tag("effect-react-engine/ContextGuard")<ContextGuard, ContextGuardService>()
{}

// ---------------------------------------------------------------------------
// defaults and budget

/**
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_BUDGET = 32000
/**
 * @since 0.1.0
 * @category constants
 */
export const MIN_MODEL_BUDGET = 4000
/**
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_MAX_MSG_CHARS = 50000
/**
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_KEEP_RECENT = 4

/**
 * The budget a model allows: context size minus max output tokens, at least 4000;
 * `undefined` when the model does not report its context size.
 *
 * @since 0.1.0
 * @category utils
 */
export const budgetForModel = (llm: LlmService): number | undefined =>
  llm.contextSize === undefined || !Number.isFinite(llm.contextSize)
    ? undefined
    : Math.max(MIN_MODEL_BUDGET, Math.floor(llm.contextSize - (llm.maxOutputTokens ?? 0)))

/** Heuristic truncation fills this share of the budget (see `checkAndCompact`). */
const TRUNCATION_TARGET = 0.75

/**
 * @since 0.1.0
 * @category models
 */
export interface ContextGuardOptions {
  /** Token budget (default 32000). */
  readonly budget?: number
  /** Per-message character limit (default 50000). */
  readonly maxMsgChars?: number
  /** Messages kept verbatim by LLM compaction (default 4). */
  readonly keepRecent?: number
  /** The compaction model; heuristic truncation only when absent. */
  readonly llm?: LlmService
  /** Hint used when a check passes none (default `general`). */
  readonly defaultHint?: CompactHint
}

const positive = (value: number | undefined, fallback: number): number =>
  value !== undefined && Number.isFinite(value) && value > 0 ? Math.floor(value) : fallback

/** Summary allowance: a fifth of the budget, between 256 and 4000 tokens. */
const summaryTokensFor = (budget: number): number => Math.min(4000, Math.max(256, Math.floor(budget / 5)))

// ---------------------------------------------------------------------------
// make

/**
 * Builds a guard at once (no Config, no services).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe = (options: ContextGuardOptions = {}): ContextGuardService => {
  const budget = positive(options.budget, DEFAULT_BUDGET)
  const maxMsgChars = positive(options.maxMsgChars, DEFAULT_MAX_MSG_CHARS)
  const keepRecent = options.keepRecent !== undefined && options.keepRecent >= 0
    ? Math.floor(options.keepRecent)
    : DEFAULT_KEEP_RECENT
  const llm = options.llm
  const defaultHint = options.defaultHint ?? "general"
  const scanner = makeScanner(maxMsgChars)

  const summarise = (
    list: ReadonlyArray<ChatMessage>,
    limit: number,
    hint: CompactHint
  ): Effect.Effect<{ readonly messages: ReadonlyArray<ChatMessage> | undefined; readonly usage: Usage.Usage }> => {
    if (llm === undefined) return Effect.succeed({ messages: undefined, usage: Usage.empty })
    const summaryTokens = summaryTokensFor(limit)
    const plan = planCompaction(list, limit, keepRecent, summaryTokens)
    if (plan === undefined) return Effect.succeed({ messages: undefined, usage: Usage.empty })
    const modelRoom = budgetForModel(llm)
    const transcriptTokens = Math.max(1000, (modelRoom ?? Math.max(limit, 8000)) - summaryTokens - 600)
    return Telemetry.chat(llm, compactionRequest(plan.old, hint, summaryTokens, transcriptTokens), {
      phase: "compaction"
    }).pipe(
      Effect.map((response) => {
        const summary = response.content.trim()
        return { messages: summary === "" ? undefined : assemble(plan, summary, maxMsgChars), usage: response.usage }
      }),
      Effect.catchAll((error) =>
        Effect.as(
          Effect.logWarning(`ContextGuard: compaction failed (${error.reason}): ${error.message}; truncating instead`),
          { messages: undefined, usage: Usage.empty }
        )
      ),
      Effect.catchAllDefect((defect) =>
        Effect.as(Effect.logWarning("ContextGuard: compaction failed with a defect; truncating instead", defect), {
          messages: undefined,
          usage: Usage.empty
        })
      ),
      Effect.withSpan("compaction", {
        attributes: {
          "react_engine.compaction.hint": hint,
          "gen_ai.request.model": llm.model,
          "react_engine.compaction.summarised": plan.old.length
        },
        captureStackTrace: false
      })
    )
  }

  const checkAndCompact = (
    messages: ReadonlyArray<ChatMessage>,
    options?: CheckOptions
  ): Effect.Effect<CheckResult> =>
    Effect.suspend(() => {
      const limit = positive(options?.budget, budget)
      // (1) per-message hard cut and (2) the estimate, resumed after the part of the
      // list seen by an earlier check (O(new messages) for the loop's growing list)
      const scan = scanner(messages)
      const list: ReadonlyArray<ChatMessage> = scan.cut ?? messages
      const done = (out: ReadonlyArray<ChatMessage>, usage: Usage.Usage): CheckResult => {
        const same = sameMessages(out, messages)
        return {
          messages: same ? messages : out,
          compacted: !same,
          originalMessages: messages.length,
          keptMessages: out.length,
          usage
        }
      }
      // fits: the same array back
      if (scan.total <= limit) return Effect.succeed(done(list, Usage.empty))
      // (3) attachments give way first, the oldest first (a note in their place)
      const light = lighten(list, scan.total, limit)
      if (light !== undefined && estimateMessages(light) <= limit) return Effect.succeed(done(light, Usage.empty))
      const base = light ?? list
      // (4) compact, else truncate
      return Effect.map(summarise(base, limit, options?.hint ?? defaultHint), ({ messages: summarised, usage }) => {
        if (summarised !== undefined && estimateMessages(summarised) <= limit) return done(summarised, usage)
        // truncation leaves a quarter of the budget free: the next calls append without truncating
        // again (a window sliding on every call would change the prompt's prefix on every call,
        // and no provider prompt cache would ever hit past the system prompt)
        return done(heuristic(summarised ?? base, Math.floor(limit * TRUNCATION_TARGET)), usage)
      })
    })

  const fits = (messages: ReadonlyArray<ChatMessage>, options?: CheckOptions): boolean => {
    const scan = scanner(messages)
    return scan.cut === undefined && scan.total <= positive(options?.budget, budget)
  }

  return { budget, checkAndCompact, fits, estimate: estimateMessages }
}

// ---------------------------------------------------------------------------
// layers

const settings = Config.all({
  budget: Config.option(
    Config.integer("CONTEXT_GUARD_DEFAULT_BUDGET").pipe(
      Config.validate({ message: "CONTEXT_GUARD_DEFAULT_BUDGET must be a positive integer", validation: (n) => n > 0 })
    )
  ),
  maxMsgChars: Config.integer("CONTEXT_GUARD_MAX_MSG_CHARS").pipe(
    Config.withDefault(DEFAULT_MAX_MSG_CHARS),
    Config.validate({ message: "CONTEXT_GUARD_MAX_MSG_CHARS must be at least 100", validation: (n) => n >= 100 })
  ),
  keepRecent: Config.integer("CONTEXT_GUARD_KEEP_RECENT").pipe(
    Config.withDefault(DEFAULT_KEEP_RECENT),
    Config.validate({ message: "CONTEXT_GUARD_KEEP_RECENT must be 0 or more", validation: (n) => n >= 0 })
  )
})

/**
 * The budget the registry's models allow: the smallest `contextSize −
 * maxOutputTokens` (floor 4000) of `main` and `fast` (the loop may use either),
 * or `undefined` when neither reports a context size.
 */
const modelBudget = (registry: ModelRegistryService): number | undefined => {
  let budget: number | undefined
  for (const model of registry.hasFast ? [registry.main, registry.fast] : [registry.main]) {
    const b = budgetForModel(model)
    if (b !== undefined) budget = budget === undefined ? b : Math.min(budget, b)
  }
  return budget
}

/**
 * What `layerConfig` takes besides the environment (each a `Config`, or one
 * `Config` of them all): values that win over the `CONTEXT_GUARD_*` variables,
 * and `compaction` (`llm`, the default: summaries by the registry's fast model;
 * `heuristic`: truncation only, no LLM call ever).
 *
 * @since 0.1.0
 * @category models
 */
export interface ConfigOptions {
  readonly budget?: number
  readonly maxMsgChars?: number
  readonly keepRecent?: number
  readonly compaction?: "llm" | "heuristic"
}

const fromConfig = (wrapped: Config.Config.Wrap<ConfigOptions>) =>
  Effect.gen(function*() {
    const env = yield* settings
    // (`Config.unwrap` of an empty record fails: no option given is the empty record)
    const given: ConfigOptions = Config.isConfig(wrapped) || Object.keys(wrapped).length > 0
      ? yield* Config.unwrap(wrapped)
      : {}
    const registry = yield* ModelRegistry.ModelRegistry
    const budget = given.budget ??
      (Option.isSome(env.budget) ? env.budget.value : modelBudget(registry) ?? DEFAULT_BUDGET)
    return makeUnsafe({
      budget,
      maxMsgChars: given.maxMsgChars ?? env.maxMsgChars,
      keepRecent: given.keepRecent ?? env.keepRecent,
      ...(given.compaction !== "heuristic" ? { llm: registry.fast } : {})
    })
  })

/**
 * A guard built from options (no environment; heuristic truncation unless
 * `options.llm` is given).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: ContextGuardOptions): Layer.Layer<ContextGuard> =>
  Layer.sync(ContextGuard, () => makeUnsafe(options))

/**
 * The guard from the environment: LLM compaction with the registry's `fast`
 * model (its `main` when there is none), heuristic truncation as the fallback.
 * Reads `CONTEXT_GUARD_DEFAULT_BUDGET` (else the models' context size minus
 * their max output, else 32000), `CONTEXT_GUARD_MAX_MSG_CHARS` (50000) and
 * `CONTEXT_GUARD_KEEP_RECENT` (4); `config` (see `ConfigOptions`) wins over
 * them, e.g. `layerConfig({ compaction: Config.succeed("heuristic") })` never
 * calls an LLM.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<ConfigOptions> = {}
): Layer.Layer<ContextGuard, ConfigError.ConfigError, ModelRegistry.ModelRegistry> =>
  Layer.effect(ContextGuard, fromConfig(config))
