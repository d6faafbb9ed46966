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

export interface RunHost {
  /** The process's boot id: tells a run resumed after a crash from one that never stopped. */
  readonly bootId: string
  /** Registers a run executing here for the lifetime of the scope. */
  readonly register: (runId: string, conversationId: string) => Effect.Effect<LocalRun, never, Scope.Scope>
  readonly local: (runId: string) => LocalRun | undefined
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

export const make = (bootId: string): RunHost => {
  const runs = new Map<string, LocalRun>()
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
    register: (runId, conversationId) =>
      Effect.acquireRelease(
        Effect.map(Deferred.make<void>(), (cancel) => {
          const run: LocalRun = { runId, conversationId, cancel }
          runs.set(runId, run)
          return run
        }),
        () => Effect.sync(() => void runs.delete(runId))
      ),
    local: (runId) => runs.get(runId),
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
