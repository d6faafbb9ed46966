/**
 * A run's budget ledger: what was spent, what is reserved by calls in flight,
 * and what runs hold back for their answer. Every model call reserves its worst
 * case here before it is made (`reserve`) and settles it with the provider's
 * usage afterwards (`settle`). Plain synchronous functions over one mutable
 * record per run: a check and its reservation happen in one step, so calls of
 * parallel fibers never both take the same room.
 *
 * @internal
 */
import type { Usage } from "../../Usage.js"

/** Price of one model in USD per million tokens. */
export interface ModelPrice {
  readonly input: number
  readonly cached_input?: number | undefined
  readonly cache_write?: number | undefined
  readonly output: number
}

export type PriceTable = { readonly [model: string]: ModelPrice }

export interface Limits {
  readonly tokens?: number | undefined
  readonly usd?: number | undefined
}

/** One model call's reservation. */
export interface Reservation {
  readonly call: number
  readonly model: string
  readonly input: number
  /** Output tokens granted: what the request may ask for (`max_tokens`). */
  readonly output: number
  readonly usd: number
}

/** One line of the ledger's log (reserved, then settled). */
export interface Entry {
  readonly call: number
  readonly model: string
  readonly reserved_tokens: number
  readonly reserved_usd?: number
  settled_tokens?: number
  settled_usd?: number
  outcome?: "ok" | "failed" | "interrupted" | "refused"
}

export interface Ledger {
  limits: Limits
  readonly prices: PriceTable
  /** Output tokens reserved for a call whose request sets no `maxTokens`. */
  readonly reserveOutput: number
  spentTokens: number
  spentUsd: number
  reservedTokens: number
  reservedUsd: number
  readonly holds: Map<string, { readonly tokens: number; readonly usd: number }>
  readonly entries: Array<Entry>
  calls: number
}

/** The smallest output a call is made with: below it, the call is not worth making. */
export const MIN_OUTPUT = 16

export const make = (limits: Limits, prices: PriceTable, reserveOutput: number): Ledger => ({
  limits,
  prices,
  reserveOutput,
  spentTokens: 0,
  spentUsd: 0,
  reservedTokens: 0,
  reservedUsd: 0,
  holds: new Map(),
  entries: [],
  calls: 0
})

const perMillion = (tokens: number, price: number): number => (tokens * price) / 1_000_000

/** Cached-input and cache-write token counts, when the usage carries them (0 otherwise). */
const cacheCounts = (usage: Usage): { readonly cached: number; readonly written: number } => ({
  cached: usage.cached_input_tokens ?? usage.cached_tokens ?? 0,
  written: usage.cache_write_input_tokens ?? 0
})

/** What `usage` cost on `model`, or undefined without a price for it. */
export const costOf = (prices: PriceTable, model: string, usage: Usage): number | undefined => {
  const price = prices[model]
  if (price === undefined) return undefined
  const { cached, written } = cacheCounts(usage)
  const plain = Math.max(0, usage.prompt_tokens - cached - written)
  return perMillion(plain, price.input) + perMillion(cached, price.cached_input ?? price.input) +
    perMillion(written, price.cache_write ?? price.input) + perMillion(usage.completion_tokens, price.output)
}

/** Worst-case cost of a call (no cache discount). */
const worstUsd = (price: ModelPrice | undefined, input: number, output: number): number =>
  price === undefined ? 0 : perMillion(input, price.input) + perMillion(output, price.output)

const held = (ledger: Ledger) => {
  let tokens = 0
  let usd = 0
  for (const h of ledger.holds.values()) {
    tokens += h.tokens
    usd += h.usd
  }
  return { tokens, usd }
}

/** Room left for new calls: limit − spent − reserved − held (Infinity without a limit). */
export const room = (ledger: Ledger): { readonly tokens: number; readonly usd: number } => {
  const h = held(ledger)
  const { tokens, usd } = ledger.limits
  return {
    tokens: tokens === undefined ? Infinity : tokens - ledger.spentTokens - ledger.reservedTokens - h.tokens,
    usd: usd === undefined ? Infinity : usd - ledger.spentUsd - ledger.reservedUsd - h.usd
  }
}

/** How many output tokens a call of `input` tokens on `model` can have in `space`. */
const outputRoom = (ledger: Ledger, space: { readonly tokens: number; readonly usd: number }, model: string, input: number): number | string => {
  const price = ledger.prices[model]
  if (ledger.limits.usd !== undefined && price === undefined) return `no price for model ${model} under a money budget`
  let out = space.tokens - input
  if (ledger.limits.usd !== undefined && price !== undefined) {
    const usdLeft = space.usd - perMillion(input, price.input)
    out = Math.min(out, price.output > 0 ? Math.floor((usdLeft * 1_000_000) / price.output) : usdLeft >= 0 ? Infinity : -1)
  }
  return out
}

/**
 * Reserves a call of `input` estimated tokens asking for up to `maxOutput`:
 * the output granted is what fits (at most `maxOutput`); a call that cannot
 * have `MIN_OUTPUT` is refused (a string saying why).
 */
export const reserve = (ledger: Ledger, model: string, input: number, wanted: number): Reservation | string => {
  const fit = outputRoom(ledger, room(ledger), model, input)
  const call = ++ledger.calls
  if (typeof fit === "string" || fit < Math.min(MIN_OUTPUT, wanted)) {
    const why = typeof fit === "string" ? fit : `a call of ~${input} input tokens does not fit in what remains`
    ledger.entries.push({ call, model, reserved_tokens: 0, outcome: "refused" })
    return `budget exhausted: ${why}`
  }
  const output = Math.max(1, Math.min(wanted, Math.floor(fit)))
  const usd = worstUsd(ledger.prices[model], input, output)
  ledger.reservedTokens += input + output
  ledger.reservedUsd += usd
  ledger.entries.push({
    call,
    model,
    reserved_tokens: input + output,
    ...(ledger.prices[model] !== undefined ? { reserved_usd: usd } : {})
  })
  return { call, model, input, output, usd }
}

/**
 * Settles a reservation: it is released and `usage` (what the provider
 * billed) is spent; `outcome` says how the call ended.
 */
export const settle = (ledger: Ledger, reservation: Reservation, usage: Usage, outcome: NonNullable<Entry["outcome"]>): void => {
  ledger.reservedTokens -= reservation.input + reservation.output
  ledger.reservedUsd -= reservation.usd
  const tokens = usage.prompt_tokens + usage.completion_tokens
  const usd = costOf(ledger.prices, reservation.model, usage) ?? 0
  ledger.spentTokens += tokens
  ledger.spentUsd += usd
  const entry = ledger.entries.find((e) => e.call === reservation.call)
  if (entry !== undefined) {
    entry.settled_tokens = tokens
    if (ledger.prices[reservation.model] !== undefined) entry.settled_usd = usd
    entry.outcome = outcome
  }
}

/** Whether calls of these sizes (each with its output) fit together now, besides the hold `except`. */
export const fits = (
  ledger: Ledger,
  calls: ReadonlyArray<{ readonly model: string; readonly input: number; readonly output: number }>,
  except?: string
): boolean => {
  const own = except === undefined ? undefined : ledger.holds.get(except)
  const space = room(ledger)
  let tokens = space.tokens + (own?.tokens ?? 0)
  let usd = space.usd + (own?.usd ?? 0)
  for (const c of calls) {
    const price = ledger.prices[c.model]
    if (ledger.limits.usd !== undefined && price === undefined) return false
    tokens -= c.input + c.output
    usd -= worstUsd(price, c.input, c.output)
  }
  return tokens >= 0 && usd >= 0
}

/** Holds room for a run's answer (replacing its earlier hold): other calls cannot take it. */
export const hold = (ledger: Ledger, key: string, model: string, input: number, output: number): void => {
  ledger.holds.set(key, { tokens: input + output, usd: worstUsd(ledger.prices[model], input, output) })
}

export const release = (ledger: Ledger, key: string): void => {
  ledger.holds.delete(key)
}

/** Raises the money limit by `usd` (policy `ask`: the person extended the budget). */
export const extend = (ledger: Ledger, usd: number): void => {
  ledger.limits = { ...ledger.limits, usd: (ledger.limits.usd ?? 0) + usd }
}
