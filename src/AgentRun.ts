/**
 * The lifecycle every agent run goes through, the same for the ReAct and the
 * DAG agent: registered in the interrupt channel for as long as it runs,
 * cancellable by its caller, bounded by its deadline, and never failing — a
 * failure becomes `RunFailed`, and whatever happened the caller then emits
 * the run's `Done` from what the run got to.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as ErrorMessage from "./ErrorMessage.js"
import type { Injection, InterruptsService } from "./Interrupts.js"
import type { RunEvent } from "./RunEvent.js"

/**
 * Why a run failed: what `RunFailed` says, and the `error.type` of its span.
 *
 * @since 0.1.0
 * @category models
 */
export interface Failure {
  readonly message: string
  readonly retryable: boolean
  readonly type: string
}

/**
 * How a run ended: its work finished, the caller cancelled it, or it failed
 * (an error, a defect, an interruption from inside, its deadline).
 *
 * @since 0.1.0
 * @category models
 */
export type Ending =
  | { readonly _tag: "Finished" }
  | { readonly _tag: "Cancelled" }
  | { readonly _tag: "Failed"; readonly failure: Failure }

/**
 * What `lifecycle` reports once the run is over.
 *
 * @since 0.1.0
 * @category models
 */
export interface Ended {
  readonly ending: Ending
  /** The interrupts still queued when the run ended (`Done.pending_injections`). */
  readonly pending: ReadonlyArray<Injection>
  /** Seconds from the start of the lifecycle to now (`Done.elapsed`). */
  readonly elapsed: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface LifecycleOptions {
  readonly interrupts: InterruptsService
  readonly conversationId: string
  /** Completes when the caller cancels the run (`RunInput.cancel`). */
  readonly cancel?: Effect.Effect<void> | undefined
  /**
   * The run's deadline (`runTimeout`): past it the run is interrupted and
   * fails with `The run timed out after …`. Absent or infinite: none.
   */
  readonly timeout?: Duration.DurationInput | undefined
  /** Where `RunFailed` goes. */
  readonly emit: (event: RunEvent) => Effect.Effect<void>
}

/**
 * The failure of a run that reached its deadline.
 *
 * @since 0.1.0
 * @category utils
 */
export const timedOut = (timeout: Duration.Duration): Failure => ({
  message: `The run timed out after ${Duration.format(timeout)}`,
  retryable: false,
  type: "timeout"
})

/**
 * Runs `body` as a run: registered for `conversationId`'s interrupts (and
 * unregistered once, whichever way it ends: what is still queued is
 * reported), raced against `cancel`, bounded by `timeout`. Never fails: a
 * failure of `body` — or an interruption that came from inside it — is
 * `Failed`, and `RunFailed` is emitted before this returns. An interruption
 * of this effect itself is not caught.
 *
 * @since 0.1.0
 * @category utils
 */
export const lifecycle = (options: LifecycleOptions, body: Effect.Effect<void, unknown>): Effect.Effect<Ended> =>
  Effect.gen(function*() {
    const { conversationId, interrupts } = options
    const started = yield* Clock.currentTimeMillis
    const left = yield* Ref.make(Option.none<ReadonlyArray<Injection>>())
    // what is still queued when the run ends is reported (once, whichever way it ends)
    const release = Effect.flatMap(
      Ref.get(left),
      Option.match({
        onSome: () => Effect.void,
        onNone: () => Effect.flatMap(interrupts.unregister(conversationId), (pending) => Ref.set(left, Option.some(pending)))
      })
    )
    const timeout = options.timeout === undefined ? Duration.infinity : Duration.decode(options.timeout)
    const work: Effect.Effect<Ending, unknown> = Effect.as(body, { _tag: "Finished" })
    const bounded = Duration.isFinite(timeout)
      ? Effect.timeoutTo(work, {
        duration: timeout,
        onSuccess: (ending): Ending => ending,
        onTimeout: (): Ending => ({ _tag: "Failed", failure: timedOut(timeout) })
      })
      : work
    const guarded = options.cancel === undefined
      ? bounded
      : Effect.raceFirst(bounded, Effect.as(options.cancel, { _tag: "Cancelled" } as const))
    const ending = yield* Effect.acquireUseRelease(
      interrupts.register(conversationId),
      () => Effect.zipLeft(guarded, release),
      () => release
    ).pipe(
      // still running here, so an interruption in the cause came from inside the run (a failure)
      Effect.catchAllCause((cause) => Effect.succeed<Ending>({ _tag: "Failed", failure: ErrorMessage.runFailure(cause) }))
    )
    if (ending._tag === "Failed") {
      yield* options.emit({ _tag: "RunFailed", message: ending.failure.message, retryable: ending.failure.retryable })
    }
    const finished = yield* Clock.currentTimeMillis
    return { ending, pending: Option.getOrElse(yield* Ref.get(left), () => []), elapsed: (finished - started) / 1000 }
  })
