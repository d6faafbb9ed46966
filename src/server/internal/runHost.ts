/**
 * What one server instance holds in memory about runs: the runs whose workflow
 * executes here (their cancel signal), and the live listeners of any run's
 * events (SSE clients attached to this instance). Everything that must be seen
 * by other instances is in the run log; this is only the fast local path.
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
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as FiberId from "effect/FiberId"
import type * as Scope from "effect/Scope"
import type * as Sse from "../Sse.js"

/** A run executing in this process. */
export interface LocalRun {
  readonly runId: string
  readonly conversationId: string
  /** Completed when the run is asked to stop. */
  readonly cancel: Deferred.Deferred<void>
}

export type Listener = (frame: Sse.Frame) => Effect.Effect<void>

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
  readonly admission: () => Admission
  readonly local: (runId: string) => LocalRun | undefined
  /** True while the run waits here for its turn (it executes here once admitted: nothing to poll for). */
  readonly queued: (runId: string) => boolean
  readonly localRuns: () => ReadonlyArray<LocalRun>
  /** Adds a live listener of a run's frames; returns its removal. */
  readonly listen: (runId: string, listener: Listener) => () => void
  /** Hands a stored frame to the run's listeners in this process. */
  readonly publish: (runId: string, frame: Sse.Frame) => Effect.Effect<void>
  /** Asks a local run to stop (false when it does not execute here). */
  readonly cancelLocal: (runId: string) => Effect.Effect<boolean>
  /** A tool call begins here (false: the process is stopping, the call must not start). */
  readonly beginCall: Effect.Effect<boolean>
  /** A tool call that began has its outcome stored (or was stopped). */
  readonly endCall: Effect.Effect<void>
  /** True from the moment the process begins to stop: no activity starts any more. */
  readonly stopping: () => boolean
  /** Stops the host: no activity starts any more; waits for the tool calls in flight, at most `graceMs`. */
  readonly drain: (graceMs: number) => Effect.Effect<Drained>
}

export const make = (
  bootId: string,
  limits: { readonly maxActive: number; readonly queue: number } = { maxActive: 128, queue: 1000 }
): RunHost => {
  const runs = new Map<string, LocalRun>()
  const permits = Effect.unsafeMakeSemaphore(limits.maxActive)
  /** Run id → when it was reserved. */
  const reserved = new Map<string, number>()
  /** Runs waiting in `register` for a permit. */
  const queued = new Set<string>()
  const lapse = (now: number) => {
    for (const [runId, at] of reserved) {
      if (now - at < RESERVATION_MS) break // in insertion order: the rest are younger
      reserved.delete(runId)
    }
  }
  const listeners = new Map<string, Set<Listener>>()
  let stopping = false
  let calls = 0
  // completed when no tool call is left once the host is stopping
  const idle = Deferred.unsafeMake<void>(FiberId.none)
  const settle = () => {
    if (stopping && calls === 0) Deferred.unsafeDone(idle, Exit.void)
  }
  return {
    bootId,
    reserve: (runId) =>
      Effect.sync(() => {
        const now = Date.now()
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
          reserved.delete(runId)
          queued.add(runId)
          yield* Effect.ensuring(restore(permits.take(1)), Effect.sync(() => void queued.delete(runId)))
          yield* Effect.addFinalizer(() => permits.release(1))
          const cancel = yield* Deferred.make<void>()
          const run: LocalRun = { runId, conversationId, cancel }
          runs.set(runId, run)
          yield* Effect.addFinalizer(() => Effect.sync(() => void runs.delete(runId)))
          return run
        })
      ),
    admission: () => ({ active: runs.size, waiting: queued.size + reserved.size, maxActive: limits.maxActive, queue: limits.queue }),
    local: (runId) => runs.get(runId),
    queued: (runId) => queued.has(runId),
    localRuns: () => [...runs.values()],
    listen: (runId, listener) => {
      let set = listeners.get(runId)
      if (set === undefined) listeners.set(runId, set = new Set())
      set.add(listener)
      return () => {
        set.delete(listener)
        if (set.size === 0 && listeners.get(runId) === set) listeners.delete(runId)
      }
    },
    publish: (runId, frame) =>
      Effect.suspend(() => {
        const set = listeners.get(runId)
        return set === undefined ? Effect.void : Effect.forEach([...set], (listener) => listener(frame), { discard: true })
      }),
    cancelLocal: (runId) => {
      const run = runs.get(runId)
      return run === undefined ? Effect.succeed(false) : Effect.as(Deferred.succeed(run.cancel, undefined), true)
    },
    beginCall: Effect.sync(() => {
      if (stopping) return false
      calls++
      return true
    }),
    endCall: Effect.sync(() => {
      calls--
      settle()
    }),
    stopping: () => stopping,
    drain: (graceMs) =>
      Effect.suspend(() => {
        const started = Date.now()
        const inFlight = calls
        stopping = true
        settle()
        // interruptible: a shutdown runs it in a finalizer, where the timeout could not stop the wait
        return Effect.interruptible(Deferred.await(idle)).pipe(
          Effect.timeoutOption(graceMs),
          Effect.map((): Drained => ({ inFlight, left: calls, waitedMs: Date.now() - started }))
        )
      })
  }
}
