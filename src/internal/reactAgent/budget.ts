/**
 * The run's budget in the ReAct loop: before each iteration the loop checks
 * that what remains pays for one more loop call AND the answer call, and holds
 * the answer's room in the ledger (sub-agents and parallel calls cannot take
 * it); when it does not fit, the loop stops (`State.finish(…, "budget")`) with
 * `BudgetExhausted`, and the run answers from what it has.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Budget from "../../Budget.js"
import type { ChatRequest } from "../../Llm.js"
import * as Message from "../../Message.js"
import * as TokenEstimator from "../../TokenEstimator.js"
import type { LoopEnv } from "./env.js"
import * as Prompts from "./prompts.js"
import * as State from "./state.js"
import type { RunState } from "./state.js"

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
  const model = env.llm.model
  const output = outputOf(env, ledger.reserveOutput)
  const loop = { model, input: Budget.estimateInput(request(state.ctx)), output }
  const answer = { model, input: TokenEstimator.estimateMessages(env.answerMessages()), output }
  if (!Budget.ledger.fits(ledger, [loop, answer], env.holdKey)) return false
  Budget.ledger.hold(ledger, env.holdKey, model, answer.input, answer.output)
  return true
}

/** Stops the loop for the budget: the summary as the loop answer, `BudgetExhausted`. */
export const stop = (env: LoopEnv, state: RunState): Effect.Effect<void> => {
  State.finish(state, Prompts.stoppedSummary("budget", 0, state.steps), "budget")
  const ledger = env.account?.ledger
  if (ledger === undefined) return Effect.void
  Budget.ledger.release(ledger, env.holdKey)
  return env.journal.emit({ _tag: "BudgetExhausted", ...Budget.snapshot(ledger) })
}

/** Gives back the room held for the answer (the answer call is about to use it). */
export const releaseHold = (env: LoopEnv): void => {
  const ledger = env.account?.ledger
  if (ledger !== undefined) Budget.ledger.release(ledger, env.holdKey)
}
