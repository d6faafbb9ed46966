/**
 * The server's runs. A run is a durable workflow (`DurableRuns`); this service
 * starts them, gives their events to clients as one typed `Stream` (`events`:
 * what the run log holds after the client's cursor, then the run's live feed,
 * each event once and in order, ending after `done` — from any instance: the
 * events are in the run log), cancels them, and applies the detach grace: a run
 * no client holds for `RUN_DETACH_GRACE_MS` is cancelled (a run waiting for a
 * person never is). Edge encoders (SSE, the AI SDK's UI message stream) turn
 * that stream into bytes.
 *
 * The live feed of a run is published by the run's journal on the instance that
 * executes it. Followers of a run that executes elsewhere (or waits to resume)
 * are told every 100 ms to read the run log; every follower gets a heartbeat every
 * `SSE_HEARTBEAT_MS` (both from one fiber each for the whole registry).
 *
 * @since 0.1.0
 */
import type { WorkflowEngine } from "@effect/workflow/WorkflowEngine"
import * as WorkflowEngineModule from "@effect/workflow/WorkflowEngine"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { randomUUID } from "node:crypto"
import type { Mode } from "../DagAgent.js"
import * as Telemetry from "../Telemetry.js"
import { NotFound, Overloaded, type RunInProgress } from "./ApiError.js"
import * as ConversationStore from "./ConversationStore.js"
import * as DurableRuns from "./DurableRuns.js"
import type { ForkPoint } from "./internal/runCassette.js"
import * as RunFeed from "./internal/runFeed.js"
import * as RunStarts from "./internal/runStarts.js"
import * as RunUpkeep from "./internal/runUpkeep.js"
import * as RunWorkflow from "./internal/runWorkflow.js"
import type { RunRow } from "./RunLog.js"
import * as RunLog from "./RunLog.js"
import * as ServerConfig from "./ServerConfig.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface StartOptions {
  readonly query: string
  /** The query's attachments (stored already: references). */
  readonly attachments?: DurableRuns.RunPayload["attachments"]
  /** Continue this conversation (a new id is made when absent). */
  readonly conversationId?: string
  readonly maxIterations?: number
  /** Default: the server's `defaultMode` (`REACT_DEFAULT_MODE`). */
  readonly mode?: Mode
  /** A fork's run: continues from the original run's steps stored before the fork point. */
  readonly fork?: ForkPoint
  /** The answer's JSON Schema (`output_schema`, checked): the run answers with a value of it (`Output`). */
  readonly outputSchema?: { readonly [key: string]: unknown }
  /** The user whose memory the run uses (docs/memory.md; the routes check the conversation is theirs). */
  readonly userId?: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface RunHandle {
  readonly conversationId: string
  readonly runId: string
}

/**
 * One event of a run as a follower gets it: `seq` is its id in the run (the SSE
 * `id`, the `Last-Event-ID` cursor); an ephemeral event has none (it is live only).
 *
 * @since 0.1.0
 * @category models
 */
export type FeedItem = RunFeed.FeedItem

/**
 * What a follower receives: the run's events and, every `SSE_HEARTBEAT_MS`, a
 * `Heartbeat` (an encoder's keep-alive: nothing happened).
 *
 * @since 0.1.0
 * @category models
 */
export type Followed = RunFeed.Followed

/**
 * @since 0.1.0
 * @category models
 */
export type Heartbeat = RunFeed.Heartbeat

/**
 * True for an event (false for a heartbeat).
 *
 * @since 0.1.0
 * @category guards
 */
export const isItem: (followed: Followed) => followed is FeedItem = RunFeed.isItem

/**
 * A follower's stream in two parts: the stored events after its cursor (the
 * replay, read when it attached) and the rest, live (what an SSE response needs
 * to tell replayed bytes from live ones).
 *
 * @since 0.1.0
 * @category models
 */
export type Following = RunFeed.Following

/**
 * Which run to follow: a conversation's latest run (a conversation id, or
 * `{conversationId}`), or a run by its id.
 *
 * @since 0.1.0
 * @category models
 */
export type Target = string | { readonly conversationId: string } | { readonly runId: string }

/**
 * @since 0.1.0
 * @category models
 */
export interface RunRegistryService {
  /**
   * Starts a run (a durable workflow); 409 (`RunInProgress`) while the conversation has one, on any
   * instance; 503 (`Overloaded`) when this instance's run queue is full (`REACT_MAX_ACTIVE_RUNS` +
   * `REACT_RUN_QUEUE`). A started run waits its turn while `REACT_MAX_ACTIVE_RUNS` execute.
   */
  readonly start: (options: StartOptions) => Effect.Effect<RunHandle, RunInProgress | Overloaded>
  /**
   * The run's events after cursor `after` as one stream: the stored ones, then
   * live ones, each once and in order, with heartbeats, ending after `done` (or
   * when the server shuts down). Following holds a lease on the run for the
   * lifetime of `Scope` (the detach grace starts when the last lease ends).
   */
  readonly events: (target: Target, after: number) => Effect.Effect<Stream.Stream<Followed>, NotFound, Scope.Scope>
  /** The same stream in its two parts (replay, live), with the same lease. */
  readonly follow: (target: Target, after: number) => Effect.Effect<Following, NotFound, Scope.Scope>
  /** True when the conversation's latest run is over and has no event after `after`. */
  readonly caughtUp: (conversationId: string, after: number) => Effect.Effect<boolean>
  /** Cancels the active run and waits (≤ 5 s) for its `done`; false when none is active. */
  readonly cancel: (conversationId: string) => Effect.Effect<boolean>
  readonly isActive: (conversationId: string) => Effect.Effect<boolean>
  /** Number of runs executing in this process. */
  readonly activeCount: Effect.Effect<number>
  /** Completed when the server begins to shut down: every follower's stream ends. */
  readonly shutdown: Deferred.Deferred<void>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class RunRegistry extends Context.Tag("effect-react-engine/RunRegistry")<RunRegistry, RunRegistryService>() {}

/** What a refused start is told to wait before trying again (`Retry-After`, seconds). */
const RETRY_AFTER_SECONDS = 2

/**
 * @since 0.1.0
 * @category constructors
 */
export const make = Effect.gen(function*() {
  const settings = yield* ServerConfig.ServerConfig
  const log = yield* RunLog.RunLog
  const host = yield* DurableRuns.RunHost
  // where the conversations are (the server's layers have it): a run's history goes with its start
  const store = yield* Effect.serviceOption(ConversationStore.ConversationStore)
  const engine = yield* WorkflowEngineModule.WorkflowEngine
  const shutdown = yield* Deferred.make<void>()
  const withEngine = <A, E>(effect: Effect.Effect<A, E, WorkflowEngine>) =>
    Effect.provideService(effect, WorkflowEngineModule.WorkflowEngine, engine)

  // started runs handed to the engine after their start is answered (and those a stopped process left)
  const starts = yield* RunStarts.make({
    log,
    store,
    execute: (payload) => DurableRuns.AgentRun.execute(payload, { discard: true }).pipe(Effect.asVoid, withEngine),
    now: Clock.currentTimeMillis
  })

  /** Asks a run to stop, wherever it executes (its instance polls the run log). */
  const stop = RunUpkeep.stop(log, host)

  const runOf = (target: Target): Effect.Effect<RunRow, NotFound> => {
    if (typeof target !== "string" && "runId" in target) {
      return Effect.flatMap(
        Effect.orDie(log.run(target.runId)),
        Option.match({
          onNone: () => Effect.fail(new NotFound({ code: "run_not_found", conversationId: "", runId: target.runId })),
          onSome: Effect.succeed
        })
      )
    }
    const conversationId = typeof target === "string" ? target : target.conversationId
    return Effect.flatMap(
      Effect.orDie(log.latest(conversationId)),
      Option.match({
        onNone: () => Effect.fail(new NotFound({ code: "no_run", conversationId })),
        onSome: Effect.succeed
      })
    )
  }

  /** Holds a client lease on the run for the scope; with no grace, the last one leaving stops the run. */
  const lease = (run: RunRow) =>
    Effect.acquireRelease(
      Effect.orDie(Effect.flatMap(Clock.currentTimeMillis, (now) => log.lease(run.runId, 1, now))),
      () =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => log.lease(run.runId, -1, now)).pipe(
          Effect.zipRight(
            settings.detachGraceMs > 0 ?
              Effect.void :
              Effect.flatMap(log.run(run.runId), (row) =>
                Option.isSome(row) && row.value.status === "running" && row.value.leases === 0 && !row.value.waiting
                  ? stop(run.conversationId, run.runId)
                  : Effect.void)
          ),
          Effect.ignore
        )
    )

  /**
   * A run that must wait is acknowledged at once: its first event, `Queued` with the number of
   * runs accepted here before it that do not execute yet, is stored with its start (answered
   * before the workflow engine has the run), so its client gets it whatever the engine is doing.
   * A run waits when every slot is taken, or when more runs are in line to be started than the
   * engine is handed at once (`RunStarts.CONCURRENCY`: a burst of starts).
   */
  const acknowledge = (runId: string) =>
    Effect.flatMap(host.admission, ({ active, maxActive, waiting }) => {
      // `waiting` counts this run (reserved): the others are in line before it
      const inLine = waiting - 1
      const waitsForSlot = active + waiting > maxActive
      return waitsForSlot || inLine >= RunStarts.CONCURRENCY
        ? Effect.orDie(
          log.append(runId, [{ seq: 1, key: RunWorkflow.QUEUED_KEY, event: { _tag: "Queued", position: inLine } }])
        )
        : Effect.void
    })

  const follow = (target: Target, after: number) =>
    Effect.gen(function*() {
      const run = yield* runOf(target)
      yield* lease(run)
      const following = yield* RunFeed.follow(log, host.feeds, run, after)
      // a server shutting down ends the stream (`RunFeed.stopAll`; the run goes on, the client resumes elsewhere)
      return (yield* Deferred.isDone(shutdown)) ? { ...following, live: Stream.empty } : following
    })

  const service: RunRegistryService = {
    start: (options) =>
      Effect.gen(function*() {
        const conversationId = options.conversationId ?? `conv_${randomUUID()}`
        const runId = `run_${randomUUID()}`
        // admission: a place among the runs executing or waiting here, before anything is stored
        if (!(yield* host.reserve(runId))) {
          const { active, waiting } = yield* host.admission
          yield* Effect.logWarning(
            `run refused (conversation ${conversationId}): ${active} runs active, ${waiting} waiting`
          )
          return yield* Effect.fail(new Overloaded({ retryAfterSeconds: RETRY_AFTER_SECONDS }))
        }
        const parent = yield* Telemetry.currentParent
        const request: RunStarts.PendingStart = {
          runId,
          ...(Option.isSome(parent) ? { parent: parent.value } : {}),
          conversationId,
          query: options.query,
          ...(options.attachments !== undefined ? { attachments: options.attachments } : {}),
          mode: options.mode ?? settings.defaultMode,
          ...(options.maxIterations !== undefined ? { maxIterations: options.maxIterations } : {}),
          ...(options.fork !== undefined ? { fork: options.fork } : {}),
          ...(options.outputSchema !== undefined ? { outputSchema: options.outputSchema } : {}),
          ...(options.userId !== undefined ? { userId: options.userId } : {})
        }
        yield* Effect.gen(function*() {
          // the run, with its workflow request until the engine has it (a crash in between: the next start-up)
          yield* log.start({ runId, conversationId, query: options.query, pending: RunStarts.encode(request) }).pipe(
            Effect.catchTag("RunLogError", Effect.die)
          )
          yield* acknowledge(runId)
          // the conversation is stored from here on (its turns so far go with the run, read when it is handed over)
          if (Option.isSome(store)) {
            yield* store.value.open(conversationId, options.query).pipe(
              Effect.catchAll((error) => Effect.logWarning(`run ${runId}: ${error.message}`))
            )
          }
        }).pipe(Effect.onError(() => host.unreserve(runId)))
        // answered now; the engine gets the request after (`internal/runStarts.ts`)
        yield* starts.submit(request)
        yield* Effect.logInfo(`run ${runId} started (conversation ${conversationId})`)
        return { conversationId, runId }
      }),
    events: (target, after) => Effect.map(follow(target, after), RunFeed.stream),
    follow,
    caughtUp: (conversationId, after) =>
      log.latest(conversationId).pipe(
        Effect.map((run) => Option.isSome(run) && run.value.status === "done" && run.value.lastSeq <= after),
        Effect.orElseSucceed(() => false)
      ),
    cancel: (conversationId) =>
      Effect.gen(function*() {
        const runId = yield* Effect.orDie(log.requestCancel(conversationId))
        if (Option.isNone(runId)) return false
        yield* host.cancelLocal(runId.value)
        // wait for its `done` (the run ends on its own instance)
        yield* Effect.orDie(log.run(runId.value)).pipe(
          Effect.repeat({
            schedule: Schedule.spaced(RunUpkeep.POLL),
            until: (row) => Option.isNone(row) || row.value.status === "done"
          }),
          Effect.timeout("5 seconds"),
          Effect.ignore
        )
        return true
      }),
    isActive: (conversationId) =>
      log.active(conversationId).pipe(Effect.map(Option.isSome), Effect.orElseSucceed(() => false)),
    activeCount: Effect.map(host.localRuns, (runs) => runs.length),
    shutdown
  }

  // the background work: polls, heartbeats, cancels from other instances, the detach grace, retention
  yield* RunUpkeep.upkeep(log, host, settings)

  // shutdown: runs are durable (they continue after a restart or on another instance); every
  // follower's stream ends (an SSE response with a final frame without an id, so that its client
  // resumes from its last event)
  yield* Effect.addFinalizer(() => Effect.zipRight(Deferred.succeed(shutdown, undefined), RunFeed.stopAll(host.feeds)))
  return service
})

/**
 * The registry over the run log, the run host and the workflow engine in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = Layer.scoped(RunRegistry, make)
