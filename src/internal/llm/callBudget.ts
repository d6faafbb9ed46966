/**
 * The retry and deadline policy of an LLM layer, shared by `OpenAiLlm` and
 * `EffectAiLlm`: exponential backoff (jittered, capped at 30 s, at least a 429's
 * `Retry-After`), each retry announced with `notifyRetry`, and one retry budget and
 * one deadline per logical call (`oneCall`).
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import { LlmError, notifyRetry } from "../../Llm.js"

const MAX_BACKOFF = Duration.seconds(30)

/**
 * The retry policy: exponential backoff from `base`, jittered, capped at 30 s,
 * at most `maxRetries` retries.
 */
export const retrySchedule = (maxRetries: number, base: Duration.DurationInput) =>
  Schedule.exponential(base, 2).pipe(
    Schedule.jittered,
    Schedule.modifyDelay((_, delay) => Duration.min(delay, MAX_BACKOFF)),
    Schedule.intersect(Schedule.recurs(Math.max(0, Math.floor(maxRetries))))
  )

// The backoff, or the provider's `Retry-After` when it asks for longer. The delay
// is a field of the error: the schedule may see a copy of it (inside a span it does).
const llmRetrySchedule = (maxRetries: number, base: Duration.DurationInput) =>
  retrySchedule(maxRetries, base).pipe(
    Schedule.intersect(Schedule.identity<LlmError>()),
    Schedule.modifyDelay(([, error], delay) =>
      error.retryAfterMs === undefined ? delay : Duration.max(delay, Duration.millis(error.retryAfterMs))
    )
  )

export interface CallPolicyOptions {
  readonly maxRetries: number
  readonly retryBaseDelay: Duration.DurationInput
  readonly totalTimeoutMs: number
  /** Named in connection errors that do not name it yet. */
  readonly endpoint?: string | undefined
}

export interface CallPolicy {
  /** `LlmService.oneCall`. */
  readonly oneCall: <A, E, R>(
    body: (again: (error: LlmError) => Effect.Effect<void, LlmError>) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | LlmError, R>
  /** Retries `effect` (one attempt, bounded by its caller) within the current call's budget. */
  readonly retry: <A, R>(effect: Effect.Effect<A, LlmError, R>) => Effect.Effect<A, LlmError, R>
}

/** The policy: a budget per logical call, held by the call's fiber (concurrent calls never share one). */
export const make = (options: CallPolicyOptions): CallPolicy => {
  const schedule = llmRetrySchedule(options.maxRetries, options.retryBaseDelay).pipe(
    // Before each retry (with its final delay), tell the run's observer (`Llm.notifyRetry`).
    // Only reached while the schedule continues, for an error that is retried.
    Schedule.modifyDelayEffect(([[, retries], error], delay) =>
      Effect.as(notifyRetry({ attempt: retries + 1, reason: error.reason, delayMs: Duration.toMillis(delay) }), delay)
    )
  )
  const totalTimeoutMs = options.totalTimeoutMs
  const endpoint = options.endpoint
  const callTimeout = () =>
    new LlmError({ reason: "Timeout", message: `LLM call timed out after ${totalTimeoutMs} ms (retries included)` })

  // One logical call (`oneCall`): the schedule's driver — its retry count and backoff,
  // shared by every request of the call, a streamed call's non-streamed fallback
  // included — and the call's deadline.
  interface CallBudget {
    readonly driver: Schedule.ScheduleDriver<unknown, LlmError>
    readonly deadline: number
  }
  // one per policy (per LLM service built), not module state: calls of two services never see each
  // other's budget; made where the service is constructed, a plain function (hence unsafeMake)
  const currentCall = FiberRef.unsafeMake<Option.Option<CallBudget>>(Option.none())
  // what is left of the call's deadline bounds `effect`
  const bounded = <A, R>(budget: CallBudget, effect: Effect.Effect<A, LlmError, R>) =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const left = budget.deadline - now
      return left <= 0
        ? Effect.fail(callTimeout())
        : Effect.timeoutFail(effect, { duration: Duration.millis(left), onTimeout: callTimeout })
    })
  // the next retry of the call (its backoff waited and announced), or `error` when spent
  const step = (budget: CallBudget, error: LlmError) =>
    Effect.asVoid(Effect.mapError(budget.driver.next(error), () => error))
  const again = (budget: CallBudget) => (error: LlmError) => bounded(budget, step(budget, error))
  // the current call's budget, or a new one for a call of its own
  const withBudget = <A, E, R>(f: (budget: CallBudget) => Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.flatMap(
      FiberRef.get(currentCall),
      Option.match({
        onSome: f,
        onNone: () =>
          Effect.flatMap(Effect.zip(Schedule.driver(schedule), Clock.currentTimeMillis), ([driver, now]) => {
            const budget: CallBudget = { driver, deadline: now + totalTimeoutMs }
            return Effect.locally(f(budget), currentCall, Option.some(budget))
          })
      })
    )
  const oneCall = <A, E, R>(
    body: (again: (error: LlmError) => Effect.Effect<void, LlmError>) => Effect.Effect<A, E, R>
  ): Effect.Effect<A, E | LlmError, R> => withBudget((budget) => body(again(budget)))
  // Each attempt is bounded by its caller; the attempts, retries and backoff waits
  // by what is left of the logical call's deadline.
  const retry = <A, R>(effect: Effect.Effect<A, LlmError, R>) =>
    withBudget((budget) => {
      const attempts: Effect.Effect<A, LlmError, R> = Effect.catchAll(
        effect,
        (e) => e.retryable ? Effect.zipRight(step(budget, e), attempts) : Effect.fail(e)
      )
      return bounded(budget, attempts)
    }).pipe(
      Effect.mapError((e) =>
        e.reason === "Connection" && endpoint !== undefined && !e.message.includes(endpoint)
          ? new LlmError({ reason: e.reason, message: e.message.replace("LLM endpoint", `LLM endpoint ${endpoint}`) })
          : e
      )
    )
  return { oneCall, retry }
}
