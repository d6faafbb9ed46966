/**
 * Who hears about an LLM call's retries (re-exported by Llm.ts): the observer
 * set around a run, and what LLM layers that retry call before each retry.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { dual } from "effect/Function"
import { globalValue } from "effect/GlobalValue"
import type { LlmErrorReason } from "../../Llm.js"

/**
 * A failed LLM call about to be retried: `attempt` is the retry's number (1 for
 * the first retry), `reason` why the previous attempt failed, `delayMs` how long
 * the LLM waits before it.
 *
 * @since 0.1.0
 * @category models
 */
export interface RetryNotice {
  readonly attempt: number
  readonly reason: LlmErrorReason
  readonly delayMs: number
}

/**
 * Who hears about retries on the current fiber (and the fibers it forks): by
 * default nobody. Set it around a run with `withRetryObserver`; LLM layers that
 * retry call `notifyRetry` before each retry.
 *
 * @since 0.1.0
 * @category references
 */
export const currentRetryObserver: FiberRef.FiberRef<(notice: RetryNotice) => Effect.Effect<void>> = globalValue(
  Symbol.for("effect-react-engine/Llm/currentRetryObserver"),
  // a module-level FiberRef, made once as Effect's own are (globalValue keeps one per process)
  () => FiberRef.unsafeMake<(notice: RetryNotice) => Effect.Effect<void>>(() => Effect.void)
)

/**
 * Tells the current retry observer that a call is about to be retried (what
 * `OpenAiLlm` does on each retry; custom LLM layers that retry should too).
 *
 * @since 0.1.0
 * @category utils
 */
export const notifyRetry = (notice: RetryNotice): Effect.Effect<void> =>
  Effect.flatMap(FiberRef.get(currentRetryObserver), (observe) => observe(notice))

/**
 * Runs `self` with `observer` hearing about every LLM retry inside it
 * (`Effect.locally` on `currentRetryObserver`): e.g. around the consumption of
 * a run's event stream, to show "retrying" to the user.
 *
 * @since 0.1.0
 * @category utils
 */
export const withRetryObserver: {
  (
    observer: (notice: RetryNotice) => Effect.Effect<void>
  ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    observer: (notice: RetryNotice) => Effect.Effect<void>
  ): Effect.Effect<A, E, R>
} = dual(
  2,
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    observer: (notice: RetryNotice) => Effect.Effect<void>
  ): Effect.Effect<A, E, R> => Effect.locally(self, currentRetryObserver, observer)
)
