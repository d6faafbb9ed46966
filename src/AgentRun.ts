/**
 * The lifecycle every agent run goes through, the same for the ReAct and the
 * DAG agent: registered in the interrupt channel for as long as it runs,
 * cancellable by its caller, bounded by its deadline, and never failing — a
 * failure becomes `RunFailed`, and whatever happened the caller then emits
 * the run's `Done` from what the run got to.
 *
 * The deadline counts working time: while the run waits for a person (an
 * approval, a budget extension: `waitingForPerson`) its clock stops — its own
 * and those of the runs it is nested in (a sub-agent's approval stops its
 * parent's clock too).
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
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
  /** `RunFailed.code`: `output_invalid` when a typed answer did not match its schema. */
  readonly code?: string
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
   * The run's deadline (`runTimeout`), in working time (`waitingForPerson`
   * stops its clock): past it the run is interrupted and fails with `The run
   * timed out after …`. Absent or infinite: none.
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

/** A run's deadline: the working time left, counted from `since` (absent while a person is waited for). */
interface DeadlineState {
  readonly left: number
  readonly since: number | undefined
  /** Waits for a person in progress. */
  readonly waits: number
  /** Completed at the next change (a wait begins or ends). */
  readonly changed: Deferred.Deferred<void>
}

type Deadline = Ref.Ref<DeadlineState>

/** The deadlines of the runs the current fiber works for (the innermost last). */
class CurrentDeadlines extends Context.Reference<CurrentDeadlines>()("effect-react-engine/AgentRun/CurrentDeadlines", {
  defaultValue: (): ReadonlyArray<Deadline> => []
}) {}

/** Applies `change` to each deadline at `now`, then tells its watcher. */
const changeAll = (deadlines: ReadonlyArray<Deadline>, change: (s: DeadlineState, now: number) => DeadlineState) =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (now) =>
      Effect.forEach(deadlines, (deadline) =>
        Effect.flatMap(Deferred.make<void>(), (fresh) =>
          Effect.flatMap(
            Ref.modify(deadline, (s) => [s.changed, { ...change(s, now), changed: fresh }] as const),
            (previous) => Deferred.succeed(previous, undefined)
          )), { discard: true })
  )

const pause = (s: DeadlineState, now: number): DeadlineState =>
  s.waits === 0 && s.since !== undefined
    ? { ...s, left: s.left - (now - s.since), since: undefined, waits: 1 }
    : { ...s, waits: s.waits + 1 }

const resume = (s: DeadlineState, now: number): DeadlineState =>
  s.waits === 1 ? { ...s, since: now, waits: 0 } : { ...s, waits: s.waits - 1 }

/** Completes when the deadline's working time is used up. */
const expiry = (deadline: Deadline): Effect.Effect<void> =>
  Effect.flatMap(Effect.zip(Ref.get(deadline), Clock.currentTimeMillis), ([s, now]) => {
    if (s.since === undefined) return Effect.zipRight(Deferred.await(s.changed), expiry(deadline))
    const remaining = s.left - (now - s.since)
    if (remaining <= 0) return Effect.void
    return Effect.zipRight(
      Effect.raceFirst(Effect.sleep(Duration.millis(remaining)), Deferred.await(s.changed)),
      expiry(deadline)
    )
  })

/**
 * Runs `self` as a wait for a person (an approval, a budget extension): the
 * deadlines of the runs the fiber works for stop while it runs.
 *
 * @since 0.1.0
 * @category utils
 */
export const waitingForPerson = <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.flatMap(CurrentDeadlines, (deadlines) =>
    deadlines.length === 0
      ? self
      : Effect.acquireUseRelease(changeAll(deadlines, pause), () => self, () => changeAll(deadlines, resume)))

/** `work` within a deadline of `timeout` of working time (nested in the fiber's current ones). */
const withinDeadline = (work: Effect.Effect<Ending, unknown>, timeout: Duration.Duration, started: number) =>
  Effect.gen(function*() {
    const deadline = yield* Ref.make<DeadlineState>({
      left: Duration.toMillis(timeout),
      since: started,
      waits: 0,
      changed: yield* Deferred.make<void>()
    })
    const outer = yield* CurrentDeadlines
    return yield* Effect.raceFirst(
      Effect.provideService(work, CurrentDeadlines, [...outer, deadline]),
      Effect.as(expiry(deadline), { _tag: "Failed", failure: timedOut(timeout) } as const)
    )
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
        onNone: () =>
          Effect.flatMap(interrupts.unregister(conversationId), (pending) => Ref.set(left, Option.some(pending)))
      })
    )
    const timeout = options.timeout === undefined ? Duration.infinity : Duration.decode(options.timeout)
    const work: Effect.Effect<Ending, unknown> = Effect.as(body, { _tag: "Finished" })
    const bounded = Duration.isFinite(timeout) ? withinDeadline(work, timeout, started) : work
    const guarded = options.cancel === undefined
      ? bounded
      : Effect.raceFirst(bounded, Effect.as(options.cancel, { _tag: "Cancelled" } as const))
    const ending = yield* Effect.acquireUseRelease(
      interrupts.register(conversationId),
      () => Effect.zipLeft(guarded, release),
      () => release
    ).pipe(
      // still running here, so an interruption in the cause came from inside the run (a failure)
      Effect.catchAllCause((cause) =>
        Effect.succeed<Ending>({ _tag: "Failed", failure: ErrorMessage.runFailure(cause) })
      )
    )
    if (ending._tag === "Failed") {
      const { code, message, retryable } = ending.failure
      yield* options.emit({ _tag: "RunFailed", message, retryable, ...(code !== undefined ? { code } : {}) })
    }
    const finished = yield* Clock.currentTimeMillis
    return { ending, pending: Option.getOrElse(yield* Ref.get(left), () => []), elapsed: (finished - started) / 1000 }
  })
