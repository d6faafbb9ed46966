/**
 * What one server instance holds in memory about runs: the runs whose workflow
 * executes here (their cancel signal), and the live feed of each run executed or
 * followed here (`runFeed.ts`: a `PubSub` per run, shared by reference count).
 * Everything that must be seen by other instances is in the run log; this is
 * only the fast local path.
 *
 * Shutdown (`drain`): from the moment the process stops, no activity of a run
 * starts here any more, and the tool calls in flight get a grace to finish and
 * store their outcomes. A call still running when the grace is over is cut
 * when the workflow engine stops, as by a crash.
 *
 * Admission (`reserve`, `register`): at most `maxActive` runs execute here at
 * once (`REACT_MAX_ACTIVE_RUNS`); a further run (a new one, or one resumed after
 * a restart) waits its turn in `register` — a semaphore's queue, in arrival
 * order — and a start is refused (`reserve` → false, the route's 503) once
 * `maxActive + queue` runs are executing, waiting, or reserved here. A
 * reservation is made before the run is stored and taken back by the run's
 * `register`; one whose run never registers here (a cluster runs it on another
 * instance, or its start failed) lapses after `RESERVATION_MS`.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import type * as Scope from "effect/Scope"
import * as RunFeed from "./runFeed.js"

/** A run executing in this process. */
export interface LocalRun {
  readonly runId: string
  readonly conversationId: string
  /** Completed when the run is asked to stop. */
  readonly cancel: Deferred.Deferred<void>
}

/** What a shutdown's grace saw. */
export interface Drained {
  /** Tool calls in flight when the process began to stop. */
  readonly inFlight: number
  /** Tool calls still running when the grace ended (answered as interrupted after the restart). */
  readonly left: number
  readonly waitedMs: number
}

/** How full the host is. */
export interface Admission {
  /** Runs executing here (each holds one of `maxActive` permits). */
  readonly active: number
  /** Runs waiting for a permit, and starts reserved here whose run has not registered yet. */
  readonly waiting: number
  readonly maxActive: number
  readonly queue: number
}

/** A reservation whose run has not registered after this long is dropped. */
export const RESERVATION_MS = 30_000

export interface RunHost {
  /** The process's boot id: tells a run resumed after a crash from one that never stopped. */
  readonly bootId: string
  /**
   * Reserves a place for a run about to be started here; false when `maxActive + queue`
   * runs are already executing, waiting or reserved (the start is refused).
   */
  readonly reserve: (runId: string) => Effect.Effect<boolean>
  /** Takes back a reservation whose run was not started (its start failed). */
  readonly unreserve: (runId: string) => Effect.Effect<void>
  /**
   * Registers a run executing here for the lifetime of the scope, once it has its turn:
   * waits (interruptibly, in arrival order) while `maxActive` runs execute here.
   */
  readonly register: (runId: string, conversationId: string) => Effect.Effect<LocalRun, never, Scope.Scope>
  /** How full the host is. */
  readonly admission: Effect.Effect<Admission>
  /** The runs executing here. */
  readonly localRuns: Effect.Effect<ReadonlyArray<LocalRun>>
  /** The run, while it executes here. */
  readonly local: (runId: string) => Effect.Effect<LocalRun | undefined>
  /** True while the run waits here for its turn. */
  readonly queued: (runId: string) => Effect.Effect<boolean>
  /** True while the run executes here or waits here for its turn (it will publish its events here). */
  readonly executesHere: (runId: string) => Effect.Effect<boolean>
  /** The live feeds of the runs executed or followed in this process (`runFeed.ts`). */
  readonly feeds: RunFeed.Feeds
  /** Asks a local run to stop (false when it does not execute here). */
  readonly cancelLocal: (runId: string) => Effect.Effect<boolean>
  /** A tool call begins here (false: the process is stopping, the call must not start). */
  readonly beginCall: Effect.Effect<boolean>
  /** A tool call that began has its outcome stored (or was stopped). */
  readonly endCall: Effect.Effect<void>
  /** True from the moment the process begins to stop: no activity starts any more. */
  readonly stopping: Effect.Effect<boolean>
  /** Stops the host: no activity starts any more; waits for the tool calls in flight, at most `graceMs`. */
  readonly drain: (graceMs: number) => Effect.Effect<Drained>
}

/** Calls in flight, and whether the process is stopping (then no call starts). */
interface Calls {
  readonly stopping: boolean
  readonly inFlight: number
}

export const make = (
  bootId: string,
  limits: { readonly maxActive: number; readonly queue: number } = { maxActive: 128, queue: 1000 }
): Effect.Effect<RunHost, never, Scope.Scope> =>
  Effect.gen(function*() {
    const permits = yield* Effect.makeSemaphore(limits.maxActive)
    const feeds = yield* RunFeed.makeFeeds
    const calls = yield* Ref.make<Calls>({ stopping: false, inFlight: 0 })
    // completed when no tool call is left once the host is stopping
    const idle = yield* Deferred.make<void>()
    // what executes, waits and is reserved here: read and written only inside `Effect.sync`
    const runs = new Map<string, LocalRun>()
    /** Run id → when it was reserved (ms). */
    const reserved = new Map<string, number>()
    /** Runs waiting in `register` for a permit. */
    const queued = new Set<string>()
    const lapse = (now: number) => {
      for (const [runId, at] of reserved) {
        if (now - at < RESERVATION_MS) break // in insertion order: the rest are younger
        reserved.delete(runId)
      }
    }
    const settle = Effect.flatMap(
      Ref.get(calls),
      (c) => (c.stopping && c.inFlight === 0 ? Deferred.succeed(idle, undefined) : Effect.void)
    )
    const host: RunHost = {
      bootId,
      reserve: (runId) =>
        Effect.map(Clock.currentTimeMillis, (now) => {
          lapse(now)
          if (runs.size + queued.size + reserved.size >= limits.maxActive + limits.queue) return false
          reserved.set(runId, now)
          return true
        }),
      unreserve: (runId) => Effect.sync(() => void reserved.delete(runId)),
      register: (runId, conversationId) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.gen(function*() {
            // the run's place moves from its reservation to the queue until a permit is free
            yield* Effect.sync(() => {
              reserved.delete(runId)
              queued.add(runId)
            })
            yield* Effect.ensuring(restore(permits.take(1)), Effect.sync(() => void queued.delete(runId)))
            yield* Effect.addFinalizer(() => permits.release(1))
            const cancel = yield* Deferred.make<void>()
            const run: LocalRun = { runId, conversationId, cancel }
            yield* Effect.sync(() => void runs.set(runId, run))
            yield* Effect.addFinalizer(() => Effect.sync(() => void runs.delete(runId)))
            return run
          })
        ),
      admission: Effect.sync(() => ({
        active: runs.size,
        waiting: queued.size + reserved.size,
        maxActive: limits.maxActive,
        queue: limits.queue
      })),
      localRuns: Effect.sync(() => [...runs.values()]),
      local: (runId) => Effect.sync(() => runs.get(runId)),
      queued: (runId) => Effect.sync(() => queued.has(runId)),
      executesHere: (runId) => Effect.sync(() => runs.has(runId) || queued.has(runId)),
      feeds,
      cancelLocal: (runId) =>
        Effect.suspend(() => {
          const run = runs.get(runId)
          return run === undefined ? Effect.succeed(false) : Effect.as(Deferred.succeed(run.cancel, undefined), true)
        }),
      beginCall: Ref.modify(
        calls,
        (c): [boolean, Calls] => (c.stopping ? [false, c] : [true, { ...c, inFlight: c.inFlight + 1 }])
      ),
      endCall: Effect.zipRight(Ref.update(calls, (c) => ({ ...c, inFlight: c.inFlight - 1 })), settle),
      stopping: Effect.map(Ref.get(calls), (c) => c.stopping),
      drain: (graceMs) =>
        Effect.gen(function*() {
          const started = yield* Clock.currentTimeMillis
          const { inFlight } = yield* Ref.getAndUpdate(calls, (c) => ({ ...c, stopping: true }))
          yield* settle
          // interruptible: a shutdown runs it in a finalizer, where the timeout could not stop the wait
          yield* Effect.interruptible(Deferred.await(idle)).pipe(Effect.timeoutOption(graceMs))
          const left = (yield* Ref.get(calls)).inFlight
          return { inFlight, left, waitedMs: (yield* Clock.currentTimeMillis) - started }
        })
    }
    return host
  })
