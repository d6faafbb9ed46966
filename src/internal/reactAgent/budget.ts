/**
 * The run's budget in the ReAct loop: before each iteration the loop checks
 * that what remains pays for one more loop call AND the answer call, each with
 * a minimal output, and holds the answer's share in the ledger (sub-agents and
 * parallel calls cannot take it; the loop call's max_tokens is capped to the
 * rest); when not even that fits, the loop stops (`State.finish(…, "budget")`) with
 * `BudgetExhausted`, and the run answers from what it has.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Budget from "../../Budget.js"
import type { ChatRequest } from "../../Llm.js"
import type * as Message from "../../Message.js"
import * as TokenEstimator from "../../TokenEstimator.js"
import type { LoopEnv } from "./env.js"
import * as Prompts from "./prompts.js"
import * as State from "./state.js"
import type { RunState, StateRef } from "./state.js"

/** Output tokens a call is reserved when its request sets none. */
const outputOf = (env: LoopEnv, reserve: number): number => Math.min(env.llm.maxOutputTokens ?? Infinity, reserve)

/**
 * True when the next loop call and the answer fit (the answer's room is then
 * held); false when the loop must stop for the budget.
 */
export const affordable = (
  env: LoopEnv,
  state: RunState,
  request: (messages: ReadonlyArray<Message.ChatMessage>) => ChatRequest
): boolean => {
  const ledger = env.account?.ledger
  if (ledger === undefined) return true
  reconcile(env, state)
  // what a call can really cost: the loop call and the answer each need only a minimal answer's
  // room to be made; the answer's share is held, the loop call's max_tokens is capped to the rest
  const wanted = outputOf(env, ledger.reserveOutput)
  return Budget.ledger.planLoop(ledger, env.holdKey, {
    model: env.llm.model,
    loopInput: Budget.estimateInput(request(state.ctx)),
    loopWanted: wanted,
    answerInput: TokenEstimator.estimateMessages(env.answerMessages(state)),
    answerWanted: wanted,
    // policy auto: the loop call may be the answer; always: the answer is a call of its own
    answerCall: env.options.synthesis === "always"
  })
}

/**
 * The loop cannot go on now: when calls of parallel runs (sub-agents, DAG steps) hold
 * reservations on the ledger, waits for one to settle and succeeds with true (the loop
 * looks again: they usually spend less than they reserved); false when none is in flight.
 */
export const roomFreed = (env: LoopEnv): Effect.Effect<boolean> => {
  const ledger = env.account?.ledger
  return ledger === undefined ? Effect.succeed(false) : Budget.roomFreed(ledger)
}

/**
 * The loop cannot pay for one more call and the answer: policy `answer` stops
 * it; policy `ask` (with a money limit) waits for a person — true when the
 * budget was extended (the loop goes on), false when the loop must stop.
 */
export const askMore = (env: LoopEnv, state: StateRef): Effect.Effect<boolean> => {
  const ledger = env.account?.ledger
  if (ledger === undefined || env.options.budget?.policy !== "ask" || ledger.limits.usd === undefined) {
    return Effect.succeed(false)
  }
  return Effect.flatMap(Ref.modify(state, State.nextBudgetWait), (n) => {
    const spent = Budget.snapshot(ledger)
    return Effect.map(
      env.approval.askBudget({ n, spentUsd: spent.spent_usd ?? 0, limitUsd: ledger.limits.usd! }),
      (decision) => {
        if (!("extend" in decision)) return false
        Budget.ledger.extend(ledger, decision.extend)
        return true
      }
    )
  })
}

/**
 * Raises what the ledger counts as spent to what the run's state recorded
 * (a durable run replaying stored replies after a restart makes no model
 * call, so the ledger would not see them), priced at the loop model's price.
 */
export const reconcile = (env: LoopEnv, state: RunState): void => {
  const ledger = env.account?.ledger
  if (ledger === undefined) return
  let tokens = 0
  let usd = 0
  for (const usage of Object.values(state.usage)) {
    if (usage === undefined) continue
    tokens += usage.prompt_tokens + usage.completion_tokens
    usd += Budget.priceOf(ledger.prices, env.llm.model, usage) ?? 0
  }
  ledger.spentTokens = Math.max(ledger.spentTokens, tokens)
  ledger.spentUsd = Math.max(ledger.spentUsd, usd)
}

/** Stops the loop for the budget: the summary as the loop answer, `BudgetExhausted`. */
export const stop = (env: LoopEnv, state: StateRef): Effect.Effect<void> =>
  Effect.flatMap(
    Ref.update(state, (s) => State.finish(s, Prompts.stoppedSummary("budget", 0, s.steps), "budget")),
    () => {
      const ledger = env.account?.ledger
      if (ledger === undefined) return Effect.void
      Budget.ledger.release(ledger, env.holdKey)
      const need = ledger.shortfalls.get(env.holdKey)
      ledger.shortfalls.delete(env.holdKey)
      return env.journal.emit({
        _tag: "BudgetExhausted",
        ...Budget.snapshot(ledger),
        ...(need !== undefined ? { needed_tokens: need.tokens } : {}),
        ...(need?.usd !== undefined && ledger.limits.usd !== undefined
          ? { needed_usd: Math.round(need.usd * 1e8) / 1e8 }
          : {})
      })
    }
  )

/** Gives back the room held for the answer (the answer call is about to use it). */
export const releaseHold = (env: LoopEnv): void => {
  const ledger = env.account?.ledger
  if (ledger !== undefined) Budget.ledger.release(ledger, env.holdKey)
}
