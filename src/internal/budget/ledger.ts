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
  /** What a run's loop needed at the least when `planLoop` last refused it (by hold key). */
  readonly shortfalls: Map<string, Need>
  readonly entries: Array<Entry>
  calls: number
  /** Reservations of calls in flight (reserved, not settled yet). */
  open: number
  /** Called once at the next settlement (runs waiting for room that calls in flight hold). */
  readonly waiters: Set<() => void>
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
  shortfalls: new Map(),
  entries: [],
  calls: 0,
  open: 0,
  waiters: new Set()
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
const outputRoom = (
  ledger: Ledger,
  space: { readonly tokens: number; readonly usd: number },
  model: string,
  input: number
): number | string => {
  const price = ledger.prices[model]
  if (ledger.limits.usd !== undefined && price === undefined) return `no price for model ${model} under a money budget`
  let out = space.tokens - input
  if (ledger.limits.usd !== undefined && price !== undefined) {
    const usdLeft = space.usd - perMillion(input, price.input)
    out = Math.min(
      out,
      price.output > 0 ? Math.floor((usdLeft * 1_000_000) / price.output) : usdLeft >= 0 ? Infinity : -1
    )
  }
  return out
}

/** The least a call (or a loop call and the answer after it) needs: tokens, and USD under a money limit. */
export interface Need {
  readonly tokens: number
  readonly usd?: number | undefined
}

const usdText = (usd: number): string => `$${Math.round(usd * 1e6) / 1e6}`

/** "2,500 − 1,200 spent − 300 held = 1,000 tokens left" and the same in USD under a money limit. */
export const describeRoom = (ledger: Ledger): string => {
  const left = room(ledger)
  const h = held(ledger)
  const parts: Array<string> = []
  const { tokens, usd } = ledger.limits
  if (tokens !== undefined) {
    const busy = ledger.reservedTokens + h.tokens
    parts.push(
      `${ledger.spentTokens} of ${tokens} tokens spent${
        busy > 0 ? `, ${busy} reserved by calls in flight or held for an answer` : ""
      }, ${Math.max(0, left.tokens)} left`
    )
  }
  if (usd !== undefined) {
    const busy = ledger.reservedUsd + h.usd
    parts.push(
      `${usdText(ledger.spentUsd)} of ${usdText(usd)} spent${busy > 0 ? `, ${usdText(busy)} reserved or held` : ""}, ${
        usdText(Math.max(0, left.usd))
      } left`
    )
  }
  return parts.join("; ")
}

/** "≈ 900 tokens (880 input + 20 output at least)" and the USD it costs under a money limit. */
export const describeNeed = (ledger: Ledger, need: Need, input: number): string =>
  `≈ ${need.tokens} tokens (${input} input + ${need.tokens - input} output at least)` +
  (need.usd !== undefined && ledger.limits.usd !== undefined ? `, ≈ ${usdText(need.usd)}` : "")

/**
 * Reserves a call of `input` estimated tokens asking for up to `wanted` output tokens:
 * the output granted is what fits (at most `wanted`: the request's `max_tokens` is lowered
 * to it); only a call that cannot have even `MIN_OUTPUT` is refused (a string saying what
 * it needed and what was spent).
 */
export const reserve = (ledger: Ledger, model: string, input: number, wanted: number): Reservation | string => {
  const fit = outputRoom(ledger, room(ledger), model, input)
  const call = ++ledger.calls
  if (typeof fit === "string" || fit < Math.min(MIN_OUTPUT, wanted)) {
    const least = Math.min(MIN_OUTPUT, wanted)
    const need: Need = { tokens: input + least, usd: worstUsd(ledger.prices[model], input, least) }
    const why = typeof fit === "string"
      ? fit
      : `a call on ${model} needs ${describeNeed(ledger, need, input)}; ${describeRoom(ledger)}`
    ledger.entries.push({ call, model, reserved_tokens: 0, outcome: "refused" })
    return `budget exhausted: ${why}`
  }
  const output = Math.max(1, Math.min(wanted, Math.floor(fit)))
  const usd = worstUsd(ledger.prices[model], input, output)
  ledger.reservedTokens += input + output
  ledger.reservedUsd += usd
  ledger.open++
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
export const settle = (
  ledger: Ledger,
  reservation: Reservation,
  usage: Usage,
  outcome: NonNullable<Entry["outcome"]>
): void => {
  ledger.reservedTokens -= reservation.input + reservation.output
  ledger.reservedUsd -= reservation.usd
  ledger.open--
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
  // what it did not use is free again: the calls that waited for it look again
  const waiting = [...ledger.waiters]
  ledger.waiters.clear()
  for (const wake of waiting) wake()
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

/**
 * Before a loop call: whether the run can go on, and how much room its answer holds.
 * The loop call needs only a minimal answer's room (`MIN_OUTPUT`): its `max_tokens` is
 * capped to what is left when it reserves. When the answer is a call of its own
 * (`answerCall`: synthesis policy `always`), the answer must fit with `MIN_OUTPUT` too,
 * and it holds its input and a quarter of the output room the two calls share (at least
 * `MIN_OUTPUT`, at most `answerWanted`): the loop call gets the rest. When the loop call
 * may be the answer (policy `auto`), the answer holds only what the loop call cannot ask
 * for (room beyond its `loopWanted`); a budget that stops the loop then answers through
 * synthesis when that fits, else with the summary of the steps. When the run cannot go
 * on, its shortfall is kept (`shortfalls`) for the message that stops the loop.
 */
export const planLoop = (
  ledger: Ledger,
  key: string,
  call: {
    readonly model: string
    readonly loopInput: number
    readonly loopWanted: number
    readonly answerInput: number
    readonly answerWanted: number
    readonly answerCall: boolean
  }
): boolean => {
  const { answerCall, answerInput, answerWanted, loopInput, loopWanted, model } = call
  const own = ledger.holds.get(key)
  const left = room(ledger)
  const space = { tokens: left.tokens + (own?.tokens ?? 0), usd: left.usd + (own?.usd ?? 0) }
  const input = answerCall ? loopInput + answerInput : loopInput
  const least = answerCall ? 2 * MIN_OUTPUT : MIN_OUTPUT
  const free = outputRoom(ledger, space, model, input)
  if (typeof free === "string" || free < least) {
    ledger.shortfalls.set(key, { tokens: input + least, usd: worstUsd(ledger.prices[model], input, least) })
    return false
  }
  ledger.shortfalls.delete(key)
  const answerOutput = Math.min(Math.max(answerWanted, MIN_OUTPUT), Math.max(MIN_OUTPUT, Math.floor(free / 4)))
  if (answerCall) {
    hold(ledger, key, model, answerInput, answerOutput)
    return true
  }
  // what the loop call cannot take: the answer's, when its input and a minimal output fit in it
  const spare = outputRoom(ledger, space, model, loopInput + Math.min(loopWanted, free) + answerInput)
  if (typeof spare === "number" && spare >= MIN_OUTPUT) {
    hold(ledger, key, model, answerInput, Math.min(answerOutput, spare))
  } else {
    release(ledger, key)
  }
  return true
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
  ledger.limits = { ...ledger.limits, usd: Math.round(((ledger.limits.usd ?? 0) + usd) * 1e8) / 1e8 }
}
