/**
 * Budgets: limits in tokens and in money on what a run (and its sub-agents, DAG
 * steps, tool selection, compaction, checklist and synthesis calls) may spend
 * on model calls, enforced BEFORE the spending.
 *
 * Every model call of the engine goes through `chat` / `streamChat` here (the
 * model-call seam): the call reserves its worst case (estimated input tokens +
 * the output it may ask for) in the run's ledger; a call that does not fit is
 * not made (an `LlmError` with reason `Budget`), and a call that fits only
 * with less output is made with `maxTokens` lowered to what fits. Afterwards
 * the reservation is settled with the usage the provider reported. A retry is
 * charged the failed attempt's input. The ledger is found on the fiber
 * (`currentAccount`), so sub-agents run inside a tool draw from the same one.
 *
 * Money comes from a price table (USD per million tokens: input, cached input,
 * cache write, output) given in the options or read from `MODEL_PRICES_FILE`.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import * as Stream from "effect/Stream"
import * as Charges from "./internal/budget/charges.js"
import type { PriceTable } from "./internal/budget/config.js"
import * as L from "./internal/budget/ledger.js"
import * as Meter from "./internal/budget/meter.js"
import type { ChatDelta, ChatRequest, ChatResponse, LlmError, LlmService } from "./Llm.js"
import type * as Usage from "./Usage.js"

export {
  /**
   * A model's price in USD per million tokens. `cached_input` (a prompt-cache
   * read) and `cache_write` default to `input`.
   *
   * @since 0.1.0
   * @category models
   */
  ModelPrice,
  /**
   * Prices by model name (the provider's model name, `LlmService.model`).
   *
   * @since 0.1.0
   * @category models
   */
  PriceTable
} from "./internal/budget/config.js"

/**
 * What happens when the budget cannot pay for one more loop call and the
 * answer: `answer` — the loop stops and the run answers from what it has;
 * `ask` — the run waits for a person to extend the budget or stop.
 *
 * @since 0.1.0
 * @category models
 */
export type ExhaustionPolicy = "answer" | "ask"

/**
 * The agent option `budget`.
 *
 * @since 0.1.0
 * @category models
 */
export interface BudgetOptions {
  /** Most tokens (input + output, as billed) a run may spend. */
  readonly tokens?: number | undefined
  /** Most USD a run may spend (needs a price for every model in use). */
  readonly usd?: number | undefined
  /** Default `answer`. */
  readonly policy?: ExhaustionPolicy | undefined
  /** Prices by model. */
  readonly prices?: PriceTable | undefined
  /** Output tokens reserved for a call that sets no `maxTokens` (default 1024); also its `max_tokens`. */
  readonly reserveOutputTokens?: number | undefined
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const DEFAULT_RESERVE_OUTPUT_TOKENS = 1024

/**
 * A run's account: its ledger (shared with the runs it starts when they have
 * no budget of their own), its prices and what its calls cost.
 *
 * @since 0.1.0
 * @category models
 */
export interface Account {
  readonly ledger: L.Ledger | undefined
  readonly prices: PriceTable
  /** USD spent by this run's calls (and its sub-agents'). */
  cost: number
  /** A call was made on a model without a price: `cost` is not the whole cost. */
  unpriced: boolean
  readonly parent: Account | undefined
}

/**
 * The account of the run on this fiber (and the fibers it forks): none outside
 * a run with a budget or prices.
 *
 * @since 0.1.0
 * @category references
 */
export const currentAccount: FiberRef.FiberRef<Account | undefined> = globalValue(
  Symbol.for("effect-react-engine/Budget/currentAccount"),
  () => FiberRef.unsafeMake<Account | undefined>(undefined)
)

/**
 * A run's account: the parent run's ledger when there is one (a sub-agent, a
 * DAG step draws from its caller's budget), else a ledger of its own when
 * `options` set a limit.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeAccount = (options: BudgetOptions | undefined, parent: Account | undefined): Account | undefined => {
  const own = options !== undefined && (options.tokens !== undefined || options.usd !== undefined)
  const prices = { ...parent?.prices, ...options?.prices }
  if (!own && parent === undefined && Object.keys(prices).length === 0) return undefined
  return {
    // inside a run that has a ledger (a sub-agent, a DAG step) the outer ledger governs
    ledger: parent?.ledger !== undefined
      ? parent.ledger
      : own
      ? L.make(
        { tokens: options.tokens, usd: options.usd },
        prices,
        options.reserveOutputTokens ?? DEFAULT_RESERVE_OUTPUT_TOKENS
      )
      : undefined,
    prices,
    cost: 0,
    unpriced: false,
    parent
  }
}

/**
 * The tool name under which a run of policy `ask` waits in the approvals
 * service (`POST /api/react/budget` answers it: approve = extend by the USD in
 * the decision's `reason`, deny = stop).
 *
 * @since 0.1.0
 * @category constants
 */
export const WAIT_TOOL = "__budget__"

// ---------------------------------------------------------------------------
// the model-call seam (src/internal/budget/meter.ts)

export {
  /**
   * The estimated input tokens of a request (messages and advertised tools).
   *
   * @since 0.1.0
   * @category utils
   */
  estimateInput,
  /**
   * When calls in flight hold reservations on the run's ledger (parallel calls, sub-agents),
   * waits for the next of them to settle — each spends at most what it reserved, usually
   * less — and succeeds with true; false at once when none is in flight (waiting cannot help).
   *
   * @since 0.1.0
   * @category utils
   */
  roomFreed,
  /**
   * `streamChat` with the account already read (`currentAccount`): without one it
   * is `llm.streamChat(request)` itself, no stream around it.
   *
   * @since 0.1.0
   * @category metering
   */
  streamChatWith
} from "./internal/budget/meter.js"

/**
 * `llm.chat(request)`, metered: reserved before, settled after (see the module
 * documentation). Without an account on the fiber it is `llm.chat(request)`.
 *
 * @since 0.1.0
 * @category metering
 */
export const chat = (llm: LlmService, request: ChatRequest): Effect.Effect<ChatResponse, LlmError> =>
  Effect.flatMap(FiberRef.get(currentAccount), (account) => Meter.chat(account, llm, request))

/**
 * `llm.streamChat(request)`, metered: reserved when the stream opens, settled
 * when it ends with the usage it reported — or, when it was cut (interrupted,
 * failed), with the input and the output seen so far.
 *
 * @since 0.1.0
 * @category metering
 */
export const streamChat = (llm: LlmService, request: ChatRequest): Stream.Stream<ChatDelta, LlmError> =>
  Stream.unwrap(Effect.map(FiberRef.get(currentAccount), (account) => Meter.streamChatWith(account, llm, request)))

/**
 * An embedding call (memory's recall and indexing) metered like a model call: `estimate` input tokens
 * reserved first (refused with an `LlmError` of reason `Budget` when they do not fit, or when a money
 * budget has no price for `model`), settled with the tokens `call` reports. No account: `call` itself.
 *
 * @since 0.1.0
 * @category metering
 */
export const embedding = <A, E>(
  model: string,
  estimate: number,
  call: Effect.Effect<{ readonly value: A; readonly tokens: number }, E>
): Effect.Effect<A, E | LlmError> =>
  Effect.flatMap(FiberRef.get(currentAccount), (account) => Charges.metered(account, model, estimate, call))

/**
 * What the account's budget looks like now.
 *
 * @since 0.1.0
 * @category models
 */
export interface Snapshot {
  readonly spent_tokens: number
  readonly limit_tokens?: number
  readonly spent_usd?: number
  readonly limit_usd?: number
}

/**
 * @since 0.1.0
 * @category utils
 */
export const snapshot = (ledger: L.Ledger): Snapshot => ({
  spent_tokens: ledger.spentTokens,
  ...(ledger.limits.tokens !== undefined ? { limit_tokens: ledger.limits.tokens } : {}),
  ...(ledger.limits.usd !== undefined || Object.keys(ledger.prices).length > 0
    ? { spent_usd: round(ledger.spentUsd) }
    : {}),
  ...(ledger.limits.usd !== undefined ? { limit_usd: round(ledger.limits.usd) } : {})
})

const round = (usd: number): number => Math.round(usd * 1e8) / 1e8

/**
 * The run's cost in USD, when every call it made had a price.
 *
 * @since 0.1.0
 * @category utils
 */
export const costOf = (account: Account | undefined): number | undefined =>
  account === undefined || account.unpriced || Object.keys(account.prices).length === 0
    ? undefined
    : round(account.cost)

// ---------------------------------------------------------------------------
// configuration (src/internal/budget/config.ts)

export {
  /**
   * Checks a budget against the models it will meet: a money budget needs a
   * price for each (a `ConfigError` naming the model otherwise); limits must
   * be positive.
   *
   * @since 0.1.0
   * @category utils
   */
  check,
  /**
   * The budget from the environment: `REACT_RUN_BUDGET_TOKENS`,
   * `REACT_RUN_BUDGET_USD`, `REACT_BUDGET_POLICY` (`answer` | `ask`),
   * `MODEL_PRICES_FILE`. None when nothing is set.
   *
   * @since 0.1.0
   * @category configuration
   */
  loadConfig,
  /**
   * Reads a price file: JSON `{ "<model>": { "input": …, "cached_input": …,
   * "cache_write": …, "output": … } }` in USD per million tokens.
   *
   * @since 0.1.0
   * @category utils
   */
  loadPrices
} from "./internal/budget/config.js"

export {
  /**
   * @since 0.1.0
   * @category models
   */
  type Entry,
  /**
   * @since 0.1.0
   * @category models
   */
  type Ledger
} from "./internal/budget/ledger.js"

/**
 * The ledger's log: every call's reservation and settlement, in order.
 *
 * @since 0.1.0
 * @category utils
 */
export const entries = (ledger: L.Ledger): ReadonlyArray<L.Entry> => ledger.entries

/**
 * What `usage` cost on `model` at `prices` (undefined without a price).
 *
 * @since 0.1.0
 * @category utils
 */
export const priceOf = (prices: PriceTable, model: string, usage: Usage.Usage): number | undefined =>
  L.costOf(prices, model, usage)

/**
 * Ledger operations the engine uses (fits, hold, planLoop, release, extend).
 *
 * @since 0.1.0
 * @category utils
 */
export const ledger = {
  fits: L.fits,
  hold: L.hold,
  planLoop: L.planLoop,
  release: L.release,
  extend: L.extend,
  room: L.room
} as const
