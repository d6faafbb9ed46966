/**
 * The per-conversation money limit of the server (`REACT_CONVERSATION_BUDGET_USD`,
 * SPEC §21): the runs of one conversation together never spend more than it.
 *
 * When a run of a conversation starts, what the conversation's earlier runs
 * spent is read from their stored turns (the `cost_usd` of each run's `done`
 * usage) and the run is executed under a parent budget account
 * (`Budget.currentAccount`) limited to `limit − spent`, with the run budget's
 * prices, token limit and exhaustion policy (`REACT_RUN_BUDGET_*`,
 * `REACT_BUDGET_POLICY`, `MODEL_PRICES_FILE`). The outermost account governs
 * (`Budget.makeAccount`), so its USD limit is the smaller of the run budget and
 * what the conversation has left. A run that finds nothing left stops its loop
 * at once (`phase budget_exhausted`) and answers per the policy.
 *
 * @since 0.1.0
 */
import type * as FileSystem from "@effect/platform/FileSystem"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Budget from "../Budget.js"
import type { RunJournal } from "../RunJournal.js"
import { AppInfo } from "./AppInfo.js"
import type { ConversationStoreService } from "./ConversationStore.js"
import * as ServerConfig from "./ServerConfig.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface ConversationBudgetService {
  /** The limit in USD; undefined when the server has none. */
  readonly limitUsd: number | undefined
  /**
   * The parent account of a run of a conversation whose earlier runs spent
   * `spentUsd`: its USD limit is what is left (never below 0).
   */
  readonly account: (spentUsd: number) => Budget.Account | undefined
}

/**
 * @since 0.1.0
 * @category Context
 */
export class ConversationBudget extends Context.Tag("effect-react-engine/ConversationBudget")<
  ConversationBudget,
  ConversationBudgetService
>() {}

/**
 * A conversation budget of `limitUsd` (none when undefined) over the run
 * budget `run` (its prices, token limit, USD limit and output reserve).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe = (
  limitUsd: number | undefined,
  run: Budget.BudgetOptions | undefined
): ConversationBudgetService => ({
  limitUsd,
  account: (spentUsd) => {
    if (limitUsd === undefined) return undefined
    const left = Math.max(0, limitUsd - spentUsd)
    return Budget.makeAccount({
      usd: run?.usd === undefined ? left : Math.min(run.usd, left),
      tokens: run?.tokens,
      prices: run?.prices,
      reserveOutputTokens: run?.reserveOutputTokens
    }, undefined)
  }
})

/**
 * From `ServerConfig.conversationBudgetUsd` and the run budget's environment
 * (`Budget.loadConfig`): a limit without a price for the server's model
 * (`AppInfo.model`) is a start-up error naming the model.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<
  ConversationBudget,
  ConfigError.ConfigError,
  ServerConfig.ServerConfig | AppInfo | FileSystem.FileSystem
> = Layer.effect(
  ConversationBudget,
  Effect.gen(function*() {
    const { conversationBudgetUsd } = yield* ServerConfig.ServerConfig
    if (Option.isNone(conversationBudgetUsd)) return makeUnsafe(undefined, undefined)
    const run = yield* Budget.loadConfig
    const { model } = yield* AppInfo
    yield* Budget.check({ usd: conversationBudgetUsd.value, prices: run?.prices ?? {} }, [model])
    return makeUnsafe(conversationBudgetUsd.value, run)
  })
)

/**
 * What a conversation's stored runs spent: the sum of their `usage.cost_usd`.
 *
 * @since 0.1.0
 * @category utils
 */
export const spentOf = (store: ConversationStoreService, conversationId: string): Effect.Effect<number> =>
  store.get(conversationId).pipe(
    Effect.map(Option.match({
      onNone: () => 0,
      onSome: (detail) =>
        detail.turn_details.reduce((sum, turn) => {
          const cost = (turn.usage as { readonly cost_usd?: unknown } | null)?.cost_usd
          return typeof cost === "number" && Number.isFinite(cost) ? sum + cost : sum
        }, 0)
    })),
    // without knowing what was spent, the limit cannot be kept: the run fails
    Effect.orDie
  )

/**
 * Runs `self` under the conversation's account when the server has a
 * conversation budget; a host without the service (tests, embedding without
 * `Server.serve`) has none. What the earlier runs spent is read once, in the
 * journaled activity `conversation-spent`: those runs are finished (a
 * conversation runs one run at a time), and a replay after a crash or kill -9
 * reads the stored sum — never this run's own turn, even when the crash came
 * after the turn was stored — so it runs under the same limit.
 *
 * @since 0.1.0
 * @category combinators
 */
export const govern = (
  service: Option.Option<ConversationBudgetService>,
  journal: RunJournal,
  store: ConversationStoreService,
  conversationId: string
) =>
<A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Option.isNone(service) || service.value.limitUsd === undefined ? self : Effect.flatMap(
    journal.activity({
      name: "conversation-spent",
      success: Schema.Number,
      execute: () => spentOf(store, conversationId)
    }),
    (usd) => Effect.locally(self, Budget.currentAccount, service.value.account(usd))
  )
