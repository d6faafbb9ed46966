/**
 * What one server instance holds in memory about runs: the runs whose workflow
 * executes here (their cancel signal), and the live listeners of any run's
 * events (SSE clients attached to this instance). Everything that must be seen
 * by other instances is in the run log; this is only the fast local path.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
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
}

export const make = (bootId: string): RunHost => {
  const runs = new Map<string, LocalRun>()
  const listeners = new Map<string, Set<Listener>>()
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
    }
  }
}
