/**
 * The run registry's background work (`RunRegistry.make` forks it in its scope,
 * one fiber per task for the whole registry): telling the followers of runs that
 * do not execute here to read the run log, every follower's heartbeat, cancels
 * requested on any instance reaching the runs executing here, the detach grace,
 * and the run log's retention.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import type { RunLogService } from "../RunLog.js"
import type { ServerSettings } from "../ServerConfig.js"
import * as RunFeed from "./runFeed.js"
import type { RunHost } from "./runHost.js"

/** How often the registry reads the run log for what another instance did. */
export const POLL = "100 millis"

/** Asks a run to stop, wherever it executes (its instance polls the run log). */
export const stop = (log: RunLogService, host: RunHost) => (conversationId: string, runId: string) =>
  Effect.zipRight(Effect.orDie(log.requestCancel(conversationId)), host.cancelLocal(runId))

/** Forks the registry's background tasks in the scope (interrupted when it closes). */
export const upkeep = (
  log: RunLogService,
  host: RunHost,
  settings: ServerSettings
): Effect.Effect<void, never, Scope.Scope> =>
  Effect.gen(function*() {
    // the followers of runs that do not execute here (elsewhere, or not yet, or no more) read the run log
    yield* Effect.flatMap(
      host.feeds.runIds,
      (runIds) =>
        Effect.flatMap(
          Effect.filter(runIds, (runId) => Effect.map(host.executesHere(runId), (here) => !here)),
          (elsewhere) => RunFeed.poll(host.feeds, elsewhere)
        )
    ).pipe(
      Effect.repeat(Schedule.spaced(POLL)),
      Effect.interruptible,
      Effect.forkScoped
    )

    // every follower's keep-alive
    yield* RunFeed.beat(host.feeds).pipe(
      Effect.repeat(Schedule.spaced(settings.heartbeatMs)),
      Effect.delay(settings.heartbeatMs),
      Effect.interruptible,
      Effect.forkScoped
    )

    // runs executing here learn of a cancel made on any instance
    yield* Effect.suspend(() => {
      return Effect.flatMap(
        host.localRuns,
        (runs) =>
          runs.length === 0 ?
            Effect.void :
            Effect.flatMap(
              log.cancelRequested(runs.map((r) => r.runId)),
              (cancelled) => Effect.forEach(cancelled, host.cancelLocal, { discard: true })
            )
      )
    }).pipe(Effect.ignore, Effect.repeat(Schedule.spaced("250 millis")), Effect.interruptible, Effect.forkScoped)

    // the detach grace of the runs executing here
    if (settings.detachGraceMs > 0) {
      const every = Math.min(1000, Math.max(100, Math.floor(settings.detachGraceMs / 4)))
      yield* Effect.flatMap(
        Effect.zip(Clock.currentTimeMillis, host.localRuns),
        ([now, runs]) =>
          Effect.forEach(runs, (local) =>
            Effect.flatMap(log.run(local.runId), (row) => {
              if (Option.isNone(row)) return Effect.void
              const run = row.value
              const detached = run.status === "running" && run.leases === 0 && !run.waiting &&
                run.detachedAt !== undefined && now - run.detachedAt >= settings.detachGraceMs
              return detached
                ? Effect.zipRight(
                  Effect.logInfo(
                    `run ${run.runId} cancelled: no client re-attached within ${settings.detachGraceMs} ms`
                  ),
                  stop(log, host)(run.conversationId, run.runId)
                )
                : Effect.void
            }), { discard: true })
      ).pipe(Effect.ignore, Effect.repeat(Schedule.spaced(every)), Effect.interruptible, Effect.forkScoped)
    }

    // bounded retention: finished runs' events and messages
    yield* Effect.flatMap(Clock.currentTimeMillis, (now) => log.prune(now - settings.runRetentionMs)).pipe(
      Effect.ignore,
      Effect.repeat(Schedule.spaced("10 minutes")),
      Effect.interruptible,
      Effect.forkScoped
    )
  })
