/**
 * The server's runs. A run is a durable workflow (`DurableRuns`); this service
 * starts them, serves their stored events to clients (from any instance: the
 * events are in the run log), cancels them, and applies the detach grace: a run
 * no client holds for `RUN_DETACH_GRACE_MS` is cancelled (a run waiting for a
 * person never is). Clients attached to the instance that executes a run get
 * its events as they are stored; on another instance they are read from the
 * run log every 100 ms.
 *
 * @since 0.1.0
 */
import type { WorkflowEngine } from "@effect/workflow/WorkflowEngine"
import * as WorkflowEngineModule from "@effect/workflow/WorkflowEngine"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { randomUUID } from "node:crypto"
import type { Mode } from "../DagAgent.js"
import * as Telemetry from "../Telemetry.js"
import { NotFound, Overloaded, type RunInProgress } from "./ApiError.js"
import type { ForkPoint } from "./CassetteRoutes.js"
import * as ConversationStore from "./ConversationStore.js"
import * as DurableRuns from "./DurableRuns.js"
import type { RunRow } from "./RunLog.js"
import * as RunLog from "./RunLog.js"
import * as ServerConfig from "./ServerConfig.js"
import type { Frame } from "./Sse.js"
import * as Sse from "./Sse.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface StartOptions {
  readonly query: string
  /** Continue this conversation (a new id is made when absent). */
  readonly conversationId?: string
  readonly maxIterations?: number
  /** Default: the server's `defaultMode` (`REACT_DEFAULT_MODE`). */
  readonly mode?: Mode
  /** A fork's run: continues from the original run's steps stored before the fork point. */
  readonly fork?: ForkPoint
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
 * One run event as it goes on the wire: its cursor, SSE channel and JSON payload.
 *
 * @since 0.1.0
 * @category models
 */
export interface WireEvent {
  readonly id: number
  readonly channel: string
  readonly data: Record<string, unknown>
}

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
   * The SSE frames of the conversation's latest run after cursor `after`, then
   * its live frames until `done`. Attaching holds a lease on the run for the
   * lifetime of `Scope` (the detach grace starts when the last lease ends).
   */
  readonly attach: (conversationId: string, after: number) => Effect.Effect<Sse.Sink, NotFound, Scope.Scope>
  /** The same events as values (for other protocols), with the same lease. */
  readonly events: (
    conversationId: string,
    after: number
  ) => Effect.Effect<Stream.Stream<WireEvent>, NotFound, Scope.Scope>
  /** True when the conversation's latest run is over and has no event after `after`. */
  readonly caughtUp: (conversationId: string, after: number) => Effect.Effect<boolean>
  /** Cancels the active run and waits (≤ 5 s) for its `done`; false when none is active. */
  readonly cancel: (conversationId: string) => Effect.Effect<boolean>
  readonly isActive: (conversationId: string) => Effect.Effect<boolean>
  /** Number of runs executing in this process. */
  readonly activeCount: Effect.Effect<number>
  /** Completed when the registry has shut down (every SSE response ended). */
  readonly shutdown: Deferred.Deferred<void>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class RunRegistry extends Context.Tag("effect-react-engine/RunRegistry")<RunRegistry, RunRegistryService>() {}

const POLL = "100 millis"
const DONE_GRACE_MS = 60_000 // how long a client waits for the `done` event of a run whose row says done

/** What a refused start is told to wait before trying again (`Retry-After`, seconds). */
const RETRY_AFTER_SECONDS = 2

/** A client following a run (see `follow`). */
interface Follower {
  readonly runId: string
  /** Reads what was stored after the client's cursor (and ends it when the run is over). */
  readonly poll: Effect.Effect<void>
  /** The run's `done` was delivered, or the client is gone. */
  readonly over: () => boolean
}

const encoder = new TextEncoder()
const storedFrame = (seq: number, channel: string, data: string): Frame => ({
  id: seq,
  channel: channel as Frame["channel"],
  bytes: encoder.encode(`id: ${seq}\nevent: ${channel}\ndata: ${data}\n\n`)
})

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
  const sinks = new Set<Sse.Sink>()
  const withEngine = <A, E>(effect: Effect.Effect<A, E, WorkflowEngine>) =>
    Effect.provideService(effect, WorkflowEngineModule.WorkflowEngine, engine)

  /**
   * The clients following a run until its `done`. One fiber polls the run log every
   * `POLL` for those whose run does not execute here (a fiber per client would cost
   * ~12 KB of heap each, for a check that is almost always "executes here").
   */
  const followers = new Set<Follower>()

  /** Asks a run to stop, wherever it executes (its instance polls the run log). */
  const stop = (conversationId: string, runId: string) =>
    Effect.zipRight(Effect.orDie(log.requestCancel(conversationId)), host.cancelLocal(runId))

  const latest = (conversationId: string) =>
    Effect.flatMap(Effect.orDie(log.latest(conversationId)), Option.match({
      onNone: () => Effect.fail(new NotFound({ code: "no_run", conversationId })),
      onSome: Effect.succeed
    }))

  /** Holds a client lease on the run for the scope; with no grace, the last one leaving stops the run. */
  const lease = (run: RunRow) =>
    Effect.acquireRelease(Effect.orDie(log.lease(run.runId, 1, Date.now())), () =>
      log.lease(run.runId, -1, Date.now()).pipe(
        Effect.zipRight(settings.detachGraceMs > 0 ? Effect.void : Effect.flatMap(log.run(run.runId), (row) =>
          Option.isSome(row) && row.value.status === "running" && row.value.leases === 0 && !row.value.waiting
            ? stop(run.conversationId, run.runId)
            : Effect.void)),
        Effect.ignore
      ))

  /**
   * Delivers the run's frames after `after`, in order, then live until `done`:
   * the live listener is added first (its frames wait while the stored ones are
   * read), frames already delivered are skipped, and while the run executes on
   * another instance the run log is polled.
   */
  const follow = (
    run: RunRow,
    after: number,
    /** `replayed`: read back from storage when the client attached (not a live frame). */
    deliver: (frame: Frame, replayed: boolean) => Effect.Effect<void>,
    /** The run is over and every frame after the cursor was delivered (a cursor past its `done`). */
    end: Effect.Effect<void>,
    closed: () => boolean
  ) =>
    Effect.gen(function*() {
      let last = after
      let replaying = true
      let finished = false
      const waiting: Array<Frame> = []
      const take = (frame: Frame): Effect.Effect<void> => {
        if (finished || (frame.id <= last && frame.id !== 0)) return Effect.void // id 0: an ephemeral frame (live only)
        if (frame.id !== 0) last = frame.id
        if (frame.channel === "done") finished = true
        return deliver(frame, replaying)
      }
      const remove = host.listen(run.runId, (frame) => (replaying ? Effect.sync(() => void waiting.push(frame)) : take(frame)))
      let follower: Follower | undefined
      // one finalizer for the listener and the poll (each costs heap for as long as the client stays)
      yield* Effect.addFinalizer(() =>
        Effect.sync(() => {
          remove()
          if (follower !== undefined) followers.delete(follower)
        })
      )
      const catchUp = Effect.flatMap(Effect.orDie(log.eventsAfter(run.runId, last)), (rows) =>
        Effect.forEach(rows, (row) => take(storedFrame(row.seq, row.channel, row.data)), { discard: true }))
      // a row says done just before its `done` is stored (or a takeover stores it): wait for it unless behind the cursor (read again after)
      let overSince: number | undefined
      const endIf = (gone: boolean, rows: ReadonlyArray<RunLog.StoredEvent>) => {
        if (finished || !(gone || rows.some((r) => r.channel === "done") || Date.now() - (overSince ??= Date.now()) >= DONE_GRACE_MS)) return Effect.void
        finished = true
        return end
      }
      const lastRows = (row: RunRow) => Effect.orDie(log.eventsAfter(run.runId, Math.max(0, row.lastSeq - 1)))
      const catchUpOrEnd = Effect.zipRight(catchUp, Effect.suspend(() =>
        finished ? Effect.void : Effect.flatMap(Effect.orDie(log.run(run.runId)), (row) =>
          Option.isSome(row) && row.value.status !== "done" ? Effect.void : Effect.flatMap(
            Option.isNone(row) ? Effect.succeed([]) : lastRows(row.value),
            (rows) => Effect.zipRight(catchUp, Effect.suspend(() => endIf(Option.isNone(row), rows)))
          ))))
      yield* catchUpOrEnd
      replaying = false
      yield* Effect.forEach(waiting.sort((a, b) => a.id - b.id), take, { discard: true })
      waiting.length = 0
      if (finished || closed()) return
      // while the run does not execute here (yet, or any more), the registry's poller reads what its
      // instance stores
      follower = { runId: run.runId, poll: catchUpOrEnd, over: () => finished || closed() }
      followers.add(follower)
    })

  const service: RunRegistryService = {
    start: (options) =>
      Effect.gen(function*() {
        const conversationId = options.conversationId ?? `conv_${randomUUID()}`
        const runId = `run_${randomUUID()}`
        // admission: a place among the runs executing or waiting here, before anything is stored
        if (!(yield* host.reserve(runId))) {
          const { active, waiting } = host.admission()
          yield* Effect.logWarning(`run refused (conversation ${conversationId}): ${active} runs active, ${waiting} waiting`)
          return yield* Effect.fail(new Overloaded({ retryAfterSeconds: RETRY_AFTER_SECONDS }))
        }
        yield* Effect.gen(function*() {
          yield* log.start({ runId, conversationId, query: options.query }).pipe(
            Effect.catchTag("RunLogError", Effect.die)
          )
          const parent = yield* Telemetry.currentParent
          // the conversation's turns so far go with the run (it holds the conversation now: none is added
          // until it ends); a failed read leaves them to the run's `history` step
          const history = Option.isNone(store) ? undefined : yield* store.value.history(conversationId).pipe(
            Effect.catchAll((error) => Effect.as(Effect.logWarning(`run ${runId}: ${error.message}; the run reads its history itself`), undefined))
          )
          yield* DurableRuns.AgentRun.execute({
            runId,
            ...(Option.isSome(parent) ? { parent: parent.value } : {}),
            conversationId,
            query: options.query,
            mode: options.mode ?? settings.defaultMode,
            ...(options.maxIterations !== undefined ? { maxIterations: options.maxIterations } : {}),
            ...(options.fork !== undefined ? { fork: options.fork } : {}),
            ...(history !== undefined ? { history } : {})
          }, { discard: true }).pipe(withEngine)
        }).pipe(Effect.onError(() => host.unreserve(runId)))
        yield* Effect.logInfo(`run ${runId} started (conversation ${conversationId})`)
        return { conversationId, runId }
      }),
    attach: (conversationId, after) =>
      Effect.gen(function*() {
        const run = yield* latest(conversationId)
        yield* lease(run)
        const sink = Sse.makeSink(settings.heartbeatMs, () => sinks.delete(sink), settings.sseMaxBacklogBytes)
        sinks.add(sink)
        yield* Effect.addFinalizer(() => Effect.sync(sink.end))
        yield* follow(run, after, (frame, replayed) =>
          Effect.sync(() => {
            if (replayed) sink.replay(frame.bytes)
            else sink.write(frame.bytes)
            if (frame.channel === "done") sink.end()
          }), Effect.sync(sink.end), sink.isClosed)
        return sink
      }),
    events: (conversationId, after) =>
      Effect.gen(function*() {
        const run = yield* latest(conversationId)
        yield* lease(run)
        const mailbox = yield* Mailbox.make<WireEvent>()
        yield* follow(run, after, (frame) =>
          Effect.zipRight(
            mailbox.offer({ id: frame.id, channel: frame.channel, data: Sse.dataOf(frame) }),
            frame.channel === "done" ? mailbox.end : Effect.void
          ), Effect.asVoid(mailbox.end), () => false)
        // a server shutting down ends the stream (the run goes on; the client resumes elsewhere)
        return Mailbox.toStream(mailbox).pipe(Stream.interruptWhenDeferred(shutdown))
      }),
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
          Effect.repeat({ schedule: Schedule.spaced(POLL), until: (row) => Option.isNone(row) || row.value.status === "done" }),
          Effect.timeout("5 seconds"),
          Effect.ignore
        )
        return true
      }),
    isActive: (conversationId) =>
      log.active(conversationId).pipe(Effect.map(Option.isSome), Effect.orElseSucceed(() => false)),
    activeCount: Effect.sync(() => host.localRuns().length),
    shutdown
  }

  // the clients of runs executing elsewhere (or not started yet) read the run log
  yield* Effect.suspend(() => {
    const due: Array<Follower> = []
    for (const follower of followers) {
      if (follower.over()) followers.delete(follower)
      // a run waiting here for its turn will execute here: its listener gets its frames
      else if (host.local(follower.runId) === undefined && !host.queued(follower.runId)) due.push(follower)
    }
    return Effect.forEach(due, (follower) =>
      follower.poll.pipe(
        Effect.zipRight(Effect.sync(() => {
          if (follower.over()) followers.delete(follower)
        })),
        // a client whose reads fail stops following (the others go on)
        Effect.catchAllCause(() => Effect.sync(() => void followers.delete(follower)))
      ), { concurrency: "unbounded", discard: true })
  }).pipe(Effect.repeat(Schedule.spaced(POLL)), Effect.interruptible, Effect.forkScoped)

  // runs executing here learn of a cancel made on any instance
  yield* Effect.suspend(() => {
    const ids = host.localRuns().map((r) => r.runId)
    return ids.length === 0 ? Effect.void : Effect.flatMap(log.cancelRequested(ids), (cancelled) =>
      Effect.forEach(cancelled, host.cancelLocal, { discard: true }))
  }).pipe(Effect.ignore, Effect.repeat(Schedule.spaced("250 millis")), Effect.interruptible, Effect.forkScoped)

  // the detach grace of the runs executing here
  if (settings.detachGraceMs > 0) {
    const every = Math.min(1000, Math.max(100, Math.floor(settings.detachGraceMs / 4)))
    yield* Effect.suspend(() => {
      const now = Date.now()
      return Effect.forEach(host.localRuns(), (local) =>
        Effect.flatMap(log.run(local.runId), (row) => {
          if (Option.isNone(row)) return Effect.void
          const run = row.value
          const detached = run.status === "running" && run.leases === 0 && !run.waiting &&
            run.detachedAt !== undefined && now - run.detachedAt >= settings.detachGraceMs
          return detached
            ? Effect.zipRight(
              Effect.logInfo(`run ${run.runId} cancelled: no client re-attached within ${settings.detachGraceMs} ms`),
              stop(run.conversationId, run.runId)
            )
            : Effect.void
        }), { discard: true })
    }).pipe(Effect.ignore, Effect.repeat(Schedule.spaced(every)), Effect.interruptible, Effect.forkScoped)
  }

  // bounded retention: finished runs' events and messages
  yield* Effect.suspend(() => log.prune(Date.now() - settings.runRetentionMs)).pipe(
    Effect.ignore,
    Effect.repeat(Schedule.spaced("10 minutes")),
    Effect.interruptible,
    Effect.forkScoped
  )

  // shutdown: runs are durable (they continue after a restart or on another instance); open
  // responses get a final frame without an id, so clients resume from their last event
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      for (const sink of [...sinks]) {
        sink.write(Sse.shutdownFrame)
        sink.end()
      }
      yield* Deferred.succeed(shutdown, undefined)
    })
  )
  return service
})

/**
 * The registry over the run log, the run host and the workflow engine in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = Layer.scoped(RunRegistry, make)
