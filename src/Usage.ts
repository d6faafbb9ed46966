/**
 * Token usage, additive across LLM calls, with a per-phase breakdown.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * @since 0.1.0
 * @category models
 */
export const Usage = Schema.Struct({
  prompt_tokens: Schema.Number,
  completion_tokens: Schema.Number,
  total_tokens: Schema.Number,
  /** Input tokens read from the provider's prompt cache (the older name of `cached_input_tokens`, kept: same number). */
  cached_tokens: Schema.optional(Schema.Number),
  /** Input tokens read from the provider's prompt cache (part of `prompt_tokens`). */
  cached_input_tokens: Schema.optional(Schema.Number),
  /** Input tokens written to the provider's prompt cache (part of `prompt_tokens`; Anthropic bills them at 1.25×). */
  cache_write_input_tokens: Schema.optional(Schema.Number),
  llm_calls: Schema.Number
})
/**
 * @since 0.1.0
 * @category models
 */
export type Usage = typeof Usage.Type

/**
 * The phases usage is attributed to: tool selection, the tool loop, context
 * compaction, answer synthesis; in DAG mode also planning, analysis and the
 * `auto` mode router (routing); `subagents`: what tools spent on LLM calls of
 * their own (an agent used as a tool, `ReactAgent.asTool`); `memory`: the
 * embedding calls of recall and indexing (prompt tokens only).
 *
 * @since 0.1.0
 * @category models
 */
export const Phase = Schema.Literal(
  "selection",
  "loop",
  "compaction",
  "synthesis",
  "planning",
  "analysis",
  "routing",
  "subagents",
  "guardrails",
  "memory"
)
/**
 * @since 0.1.0
 * @category models
 */
export type Phase = typeof Phase.Type

/**
 * @since 0.1.0
 * @category models
 */
export const UsageByPhase = Schema.partial(Schema.Record({ key: Phase, value: Usage }))
/**
 * @since 0.1.0
 * @category models
 */
export type UsageByPhase = { readonly [K in Phase]?: Usage }

/**
 * Usage with the per-phase breakdown, as reported in the result and `done`.
 *
 * @since 0.1.0
 * @category models
 */
export const RunUsage = Schema.Struct({
  ...Usage.fields,
  by_phase: UsageByPhase,
  /** What the run's model calls cost in USD, when every model it used has a price (docs/budgets.md). */
  cost_usd: Schema.optional(Schema.Number)
})
/**
 * @since 0.1.0
 * @category models
 */
export type RunUsage = typeof RunUsage.Type

/**
 * @since 0.1.0
 * @category constructors
 */
export const empty: Usage = { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, llm_calls: 0 }

/**
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  prompt: number,
  completion: number,
  options?: { readonly cached?: number; readonly cacheWrite?: number; readonly calls?: number }
): Usage => {
  const usage: { -readonly [K in keyof Usage]: Usage[K] } = {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    llm_calls: options?.calls ?? 1
  }
  if (options?.cached !== undefined) {
    usage.cached_tokens = options.cached
    usage.cached_input_tokens = options.cached
  }
  if (options?.cacheWrite !== undefined) usage.cache_write_input_tokens = options.cacheWrite
  return usage
}

/**
 * Sum of two usages (associative, `empty` is the identity).
 *
 * @since 0.1.0
 * @category combinators
 */
export const add = (a: Usage, b: Usage): Usage => {
  const usage: { -readonly [K in keyof Usage]: Usage[K] } = {
    prompt_tokens: a.prompt_tokens + b.prompt_tokens,
    completion_tokens: a.completion_tokens + b.completion_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
    llm_calls: a.llm_calls + b.llm_calls
  }
  if (a.cached_tokens !== undefined || b.cached_tokens !== undefined) {
    usage.cached_tokens = (a.cached_tokens ?? 0) + (b.cached_tokens ?? 0)
  }
  if (a.cached_input_tokens !== undefined || b.cached_input_tokens !== undefined) {
    usage.cached_input_tokens = (a.cached_input_tokens ?? 0) + (b.cached_input_tokens ?? 0)
  }
  if (a.cache_write_input_tokens !== undefined || b.cache_write_input_tokens !== undefined) {
    usage.cache_write_input_tokens = (a.cache_write_input_tokens ?? 0) + (b.cache_write_input_tokens ?? 0)
  }
  return usage
}

/**
 * The share of input tokens read from the prompt cache (0 when nothing was
 * read or no input was counted).
 *
 * @since 0.1.0
 * @category utils
 */
export const cachedShare = (usage: Usage): number =>
  usage.prompt_tokens > 0 ? (usage.cached_input_tokens ?? usage.cached_tokens ?? 0) / usage.prompt_tokens : 0

/**
 * @since 0.1.0
 * @category combinators
 */
export const sum = (usages: Iterable<Usage>): Usage => {
  let total = empty
  for (const u of usages) total = add(total, u)
  return total
}

/**
 * Adds `usage` to one phase of a breakdown.
 *
 * @since 0.1.0
 * @category combinators
 */
export const addToPhase = (byPhase: UsageByPhase, phase: Phase, usage: Usage): UsageByPhase => ({
  ...byPhase,
  [phase]: add(byPhase[phase] ?? empty, usage)
})

/**
 * Total over the phases, with the breakdown attached.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromPhases = (byPhase: UsageByPhase): RunUsage => {
  const total = sum(Object.values(byPhase).filter((u): u is Usage => u !== undefined))
  return { ...total, by_phase: byPhase }
}
