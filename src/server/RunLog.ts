/**
 * What every server instance knows about runs, in the shared database (the
 * embedded SQLite file, or PostgreSQL when several instances share it): which
 * conversation has an active run (one at a time, across instances), each run's
 * events in order with their ids (what `GET /api/react/events` replays, from
 * any instance), the user messages injected into a run, cancellation requests
 * and client leases (the detach grace).
 *
 * The run's durable state — its activities and their results — belongs to the
 * workflow engine (`@effect/workflow` on `@effect/cluster`); this is the rest.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type { Injection } from "../Interrupts.js"
import type { RunEvent } from "../RunEvent.js"
import { RunInProgress } from "./ApiError.js"
import * as ActivityStarts from "./internal/activityStarts.js"
import * as Injections from "./internal/injections.js"
import * as Migrations from "./internal/runLogMigrations.js"
import * as StoredEvents from "./internal/storedEvents.js"

/**
 * @since 0.1.0
 * @category errors
 */
export class RunLogError extends Schema.TaggedError<RunLogError>()("RunLogError", { message: Schema.String }) {}

/**
 * A stored event: the run's event (stored through its Schema) and its id in the run.
 *
 * @since 0.1.0
 * @category models
 */
export type StoredEvent = StoredEvents.StoredEvent

/**
 * @since 0.1.0
 * @category models
 */
export interface RunRow {
  readonly runId: string
  readonly conversationId: string
  readonly query: string
  readonly status: "running" | "done"
  readonly startedAt: number
  readonly lastSeq: number
  readonly cancelRequested: boolean
  readonly leases: number
  /** When the last client lease ended (ms since the epoch), if none is held. */
  readonly detachedAt: number | undefined
  /** True while the run waits for a person (it is not cancelled by the detach grace). */
  readonly waiting: boolean
}

/**
 * @since 0.1.0
 * @category models
 */
export interface RunLogService {
  /**
   * Records a new run and makes it the conversation's active run; `RunInProgress` when it has one.
   * `pending`: the workflow request the registry has yet to hand to the engine (kept until `submitted`).
   */
  readonly start: (run: {
    readonly runId: string
    readonly conversationId: string
    readonly query: string
    readonly pending?: string
  }) => Effect.Effect<void, RunInProgress | RunLogError>
  /** The run's workflow request is with the engine: its `pending` request is cleared. */
  readonly submitted: (runId: string) => Effect.Effect<void, RunLogError>
  /** The running runs whose workflow request was never handed to the engine (a crash right after their start). */
  readonly unsubmitted: Effect.Effect<
    ReadonlyArray<{ readonly runId: string; readonly startedAt: number; readonly pending: string }>,
    RunLogError
  >
  /** The run is over: no longer the conversation's active run. */
  readonly finish: (runId: string) => Effect.Effect<void, RunLogError>
  readonly run: (runId: string) => Effect.Effect<Option.Option<RunRow>, RunLogError>
  /** The conversation's latest run. */
  readonly latest: (conversationId: string) => Effect.Effect<Option.Option<RunRow>, RunLogError>
  /** The conversation's active run id. */
  readonly active: (conversationId: string) => Effect.Effect<Option.Option<string>, RunLogError>
  /** Runs not finished (after a restart: what the workflow engine resumes). */
  readonly running: Effect.Effect<ReadonlyArray<RunRow>, RunLogError>
  /** Stores events (ids already assigned by the run's owner); keys already stored are skipped. */
  readonly append: (
    runId: string,
    events: ReadonlyArray<{ readonly seq: number; readonly key: string; readonly event: RunEvent }>
  ) => Effect.Effect<void, RunLogError>
  readonly eventsAfter: (runId: string, after: number) => Effect.Effect<ReadonlyArray<StoredEvent>, RunLogError>
  /** The keys and the last id of a run's stored events (a resumed run skips what is stored). */
  readonly storedKeys: (
    runId: string
  ) => Effect.Effect<{ readonly keys: ReadonlySet<string>; readonly lastSeq: number }, RunLogError>
  /** Asks the conversation's active run to stop; its id, or none when no run is active. */
  readonly requestCancel: (conversationId: string) => Effect.Effect<Option.Option<string>, RunLogError>
  /** Which of these runs were asked to stop. */
  readonly cancelRequested: (runIds: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<string>, RunLogError>
  /** A client attached (`+1`) or left (`-1`). */
  readonly lease: (runId: string, delta: 1 | -1, now: number) => Effect.Effect<void, RunLogError>
  /**
   * Forgets every client lease of the running runs (their grace starts now)
   * and every activity claim: at the boot of the only instance, the clients
   * that held them were connected to the process that died, and the claims
   * were that process's.
   */
  readonly releaseAll: (now: number) => Effect.Effect<void, RunLogError>
  /** Restarts the detach grace of a run no client holds (a resumed run's clients are reconnecting). */
  readonly touch: (runId: string, now: number) => Effect.Effect<void, RunLogError>
  /** Marks a run as waiting for a person (or no longer). */
  readonly setWaiting: (runId: string, waiting: boolean) => Effect.Effect<void, RunLogError>
  /** Queues a user message for the conversation's active run; none when no run is active. */
  readonly inject: (conversationId: string, content: string) => Effect.Effect<Option.Option<Injection>, RunLogError>
  /** Removes a message not drained yet; true when it was still queued. */
  readonly recall: (conversationId: string, id: string) => Effect.Effect<boolean, RunLogError>
  /**
   * Takes every queued message of the conversation, in order. With a `key`
   * (the step's idempotency key) the messages are marked drained under it, and
   * a later drain with the same key returns them again beside anything queued
   * since: a step re-run after a crash gets what its first attempt took.
   */
  readonly drain: (conversationId: string, key?: string) => Effect.Effect<ReadonlyArray<Injection>, RunLogError>
  /**
   * Records that process `boot` starts the run's activity `name`, unless one
   * did before; the process that started it first.
   */
  readonly markStarted: (runId: string, name: string, boot: string) => Effect.Effect<string, RunLogError>
  /**
   * Claims the run's activity `name` (a tool call) for `holder` (one execution
   * of it), for `leaseMs` from now on the database's clock, in one statement:
   * taken when nobody holds it, when `holder` holds it already, or when its
   * holder's lease has expired (the holder is dead, or stopped renewing it) —
   * never once its outcome is stored. Who started the activity first (as
   * `markStarted` records it), or none while another holder has a live lease
   * or the outcome is stored (`callOutcome`).
   */
  readonly claim: (
    runId: string,
    name: string,
    holder: string,
    leaseMs: number
  ) => Effect.Effect<Option.Option<string>, RunLogError>
  /** Extends `holder`'s claim by `leaseMs` from now; false when `holder` no longer holds it (or the outcome is stored). */
  readonly renewClaim: (
    runId: string,
    name: string,
    holder: string,
    leaseMs: number
  ) => Effect.Effect<boolean, RunLogError>
  /** Ends `holder`'s claim without an outcome (its execution was stopped): the next claim takes it at once. */
  readonly releaseClaim: (runId: string, name: string, holder: string) => Effect.Effect<void, RunLogError>
  /**
   * Stores the call's outcome (and ends the claim) when `holder` still holds it
   * and no outcome is stored yet; false otherwise (another holder took it over,
   * or stored one first).
   */
  readonly settleCall: (
    runId: string,
    name: string,
    holder: string,
    outcome: string
  ) => Effect.Effect<boolean, RunLogError>
  /** The call's stored outcome, if any. */
  readonly callOutcome: (runId: string, name: string) => Effect.Effect<Option.Option<string>, RunLogError>
  /** Deletes finished runs older than `before` (ms) and their events and messages. */
  readonly prune: (before: number) => Effect.Effect<number, RunLogError>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class RunLog extends Context.Tag("effect-react-engine/RunLog")<RunLog, RunLogService>() {}

const failure = (what: string) => (error: SqlError.SqlError) =>
  new RunLogError({ message: `${what}: ${error.message}` })

interface RunSqlRow {
  readonly run_id: string
  readonly conversation_id: string
  readonly query: string
  readonly status: string
  readonly started_at: number | string
  readonly last_seq: number | string
  readonly cancel_requested: number | string
  readonly leases: number | string
  readonly detached_at: number | string | null
  readonly waiting: number | string
}

const toRun = (row: RunSqlRow): RunRow => ({
  runId: row.run_id,
  conversationId: row.conversation_id,
  query: row.query,
  status: row.status === "done" ? "done" : "running",
  startedAt: Number(row.started_at),
  lastSeq: Number(row.last_seq),
  cancelRequested: Number(row.cancel_requested) === 1,
  leases: Number(row.leases),
  detachedAt: row.detached_at === null ? undefined : Number(row.detached_at),
  waiting: Number(row.waiting) === 1
})

/**
 * The run log over the `SqlClient` in context (runs its migrations first).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<RunLogService, RunLogError, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* Migrations.run.pipe(
    Effect.mapError((e) => new RunLogError({ message: `run log migration failed: ${e.message}` }))
  )
  // a run's last event id is read from its events (an event is then one statement, not a transaction)
  const columns = sql`run_id, conversation_id, query, status, started_at,
    (SELECT COALESCE(MAX(e.seq), 0) FROM react_run_events e WHERE e.run_id = react_runs.run_id) AS last_seq,
    cancel_requested, leases, detached_at, waiting`

  const one = (rows: ReadonlyArray<RunSqlRow>) => Option.map(Option.fromNullable(rows[0]), toRun)
  const starts = ActivityStarts.make(sql)
  const injections = Injections.make(sql)

  const service: RunLogService = {
    start: ({ conversationId, pending, query, runId }) =>
      sql.withTransaction(Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* sql`INSERT INTO react_active_runs (conversation_id, run_id) VALUES (${conversationId}, ${runId})
          ON CONFLICT (conversation_id) DO NOTHING`
        const owner = yield* sql<
          { run_id: string }
        >`SELECT run_id FROM react_active_runs WHERE conversation_id = ${conversationId}`
        if (owner[0]?.run_id !== runId) return false
        // a conversation's runs start in order (its latest is the one with the greatest start): a run started
        // in the same millisecond as the one before it, or on an instance whose clock is behind, comes after it
        const previous = yield* sql<{ at: number | string | null }>`SELECT MAX(started_at) AS at FROM react_runs
          WHERE conversation_id = ${conversationId}`
        const after = previous[0]?.at
        const startedAt = after === null || after === undefined ? now : Math.max(now, Number(after) + 1)
        yield* sql`INSERT INTO react_runs (run_id, conversation_id, query, status, started_at, last_seq, cancel_requested, leases, waiting, pending_start)
          VALUES (${runId}, ${conversationId}, ${query}, 'running', ${startedAt}, 0, 0, 0, 0, ${pending ?? null})`
        return true
      })).pipe(
        Effect.mapError(failure("starting the run failed")),
        Effect.flatMap((started) => (started ? Effect.void : Effect.fail(new RunInProgress({ conversationId }))))
      ),
    finish: (runId) =>
      sql.withTransaction(Effect.zipRight(
        sql`UPDATE react_runs SET status = 'done' WHERE run_id = ${runId}`,
        sql`DELETE FROM react_active_runs WHERE run_id = ${runId}`
      )).pipe(Effect.asVoid, Effect.mapError(failure("finishing the run failed"))),
    submitted: (runId) =>
      sql`UPDATE react_runs SET pending_start = NULL WHERE run_id = ${runId}`.pipe(
        Effect.asVoid,
        Effect.mapError(failure("marking the run's start handed over failed"))
      ),
    unsubmitted: sql<{ run_id: string; started_at: number | string; pending_start: string }>`SELECT run_id, started_at,
      pending_start FROM react_runs WHERE status = 'running' AND pending_start IS NOT NULL ORDER BY started_at`.pipe(
      Effect.map((rows) =>
        rows.map((row) => ({ runId: row.run_id, startedAt: Number(row.started_at), pending: row.pending_start }))
      ),
      Effect.mapError(failure("listing the runs not handed to the engine failed"))
    ),
    run: (runId) =>
      sql<RunSqlRow>`SELECT ${columns} FROM react_runs WHERE run_id = ${runId}`.pipe(
        Effect.map(one),
        Effect.mapError(failure("reading the run failed"))
      ),
    latest: (conversationId) =>
      sql<RunSqlRow>`SELECT ${columns} FROM react_runs WHERE conversation_id = ${conversationId}
        ORDER BY started_at DESC, run_id DESC LIMIT 1`.pipe(
        Effect.map(one),
        Effect.mapError(failure("reading the conversation's runs failed"))
      ),
    active: (conversationId) =>
      sql<{ run_id: string }>`SELECT run_id FROM react_active_runs WHERE conversation_id = ${conversationId}`.pipe(
        Effect.map((rows) => Option.fromNullable(rows[0]?.run_id)),
        Effect.mapError(failure("reading the active run failed"))
      ),
    running: sql<RunSqlRow>`SELECT ${columns} FROM react_runs WHERE status = 'running'`.pipe(
      Effect.map((rows) => rows.map(toRun)),
      Effect.mapError(failure("listing running runs failed"))
    ),
    append: (runId, events) =>
      StoredEvents.append(sql, runId, events).pipe(Effect.mapError(failure("storing events failed"))),
    eventsAfter: (runId, after) =>
      StoredEvents.after(sql, runId, after).pipe(Effect.mapError(failure("reading events failed"))),
    storedKeys: (runId) =>
      sql<
        { seq: number | string; event_key: string }
      >`SELECT seq, event_key FROM react_run_events WHERE run_id = ${runId}`.pipe(
        Effect.map((rows) => ({
          keys: new Set(rows.map((r) => r.event_key)),
          lastSeq: rows.reduce((max, r) => Math.max(max, Number(r.seq)), 0)
        })),
        Effect.mapError(failure("reading stored events failed"))
      ),
    requestCancel: (conversationId) =>
      sql.withTransaction(Effect.gen(function*() {
        const rows = yield* sql<
          { run_id: string }
        >`SELECT run_id FROM react_active_runs WHERE conversation_id = ${conversationId}`
        const runId = rows[0]?.run_id
        if (runId === undefined) return Option.none<string>()
        yield* sql`UPDATE react_runs SET cancel_requested = 1 WHERE run_id = ${runId}`
        return Option.some(runId)
      })).pipe(Effect.mapError(failure("cancelling the run failed"))),
    cancelRequested: (runIds) =>
      runIds.length === 0 ? Effect.succeed([]) : sql<{ run_id: string }>`SELECT run_id FROM react_runs
        WHERE cancel_requested = 1 AND status = 'running' AND ${sql.in("run_id", runIds)}`.pipe(
        Effect.map((rows) => rows.map((r) => r.run_id)),
        Effect.mapError(failure("reading cancellation requests failed"))
      ),
    lease: (runId, delta, now) =>
      (delta === 1
        ? sql`UPDATE react_runs SET leases = leases + 1, detached_at = NULL WHERE run_id = ${runId}`
        : sql`UPDATE react_runs SET leases = CASE WHEN leases > 0 THEN leases - 1 ELSE 0 END,
            detached_at = CASE WHEN leases <= 1 THEN ${now} ELSE detached_at END WHERE run_id = ${runId}`).pipe(
          Effect.asVoid,
          Effect.mapError(failure("updating the run's clients failed"))
        ),
    releaseAll: (at) =>
      sql.withTransaction(Effect.zipRight(
        sql`UPDATE react_runs SET leases = 0, detached_at = ${at} WHERE status = 'running' AND leases > 0`,
        sql`UPDATE react_activity_starts SET lease_until = 0 WHERE lease_until > 0`
      )).pipe(
        Effect.asVoid,
        Effect.mapError(failure("releasing the clients of a previous process failed"))
      ),
    touch: (runId, now) =>
      sql`UPDATE react_runs SET detached_at = ${now} WHERE run_id = ${runId} AND leases = 0`.pipe(
        Effect.asVoid,
        Effect.mapError(failure("updating the run failed"))
      ),
    setWaiting: (runId, waiting) =>
      sql`UPDATE react_runs SET waiting = ${waiting ? 1 : 0} WHERE run_id = ${runId}`.pipe(
        Effect.asVoid,
        Effect.mapError(failure("updating the run failed"))
      ),
    inject: (conversationId, content) =>
      Effect.mapError(injections.inject(conversationId, content), failure("queueing the message failed")),
    recall: (conversationId, id) =>
      Effect.mapError(injections.recall(conversationId, id), failure("recalling the message failed")),
    drain: (conversationId, key) =>
      Effect.mapError(injections.drain(conversationId, key), failure("draining messages failed")),
    markStarted: (runId, name, boot) =>
      Effect.mapError(starts.markStarted(runId, name, boot), failure("recording an activity's start failed")),
    claim: (runId, name, holder, leaseMs) =>
      Effect.mapError(starts.claim(runId, name, holder, leaseMs), failure("claiming a tool call failed")),
    renewClaim: (runId, name, holder, leaseMs) =>
      Effect.mapError(starts.renewClaim(runId, name, holder, leaseMs), failure("renewing a tool call's claim failed")),
    releaseClaim: (runId, name, holder) =>
      Effect.mapError(starts.releaseClaim(runId, name, holder), failure("releasing a tool call's claim failed")),
    settleCall: (runId, name, holder, outcome) =>
      Effect.mapError(starts.settleCall(runId, name, holder, outcome), failure("storing a tool call's outcome failed")),
    callOutcome: (runId, name) =>
      Effect.mapError(starts.callOutcome(runId, name), failure("reading a tool call's outcome failed")),
    prune: (before) =>
      sql.withTransaction(Effect.gen(function*() {
        const old = yield* sql<
          { run_id: string }
        >`SELECT run_id FROM react_runs WHERE status = 'done' AND started_at < ${before}`
        if (old.length === 0) return 0
        const ids = old.map((r) => r.run_id)
        yield* sql`DELETE FROM react_run_events WHERE ${sql.in("run_id", ids)}`
        yield* sql`DELETE FROM react_injections WHERE ${sql.in("run_id", ids)}`
        yield* sql`DELETE FROM react_activity_starts WHERE ${sql.in("run_id", ids)}`
        yield* sql`DELETE FROM react_runs WHERE ${sql.in("run_id", ids)}`
        return ids.length
      })).pipe(Effect.mapError(failure("pruning old runs failed")))
  }
  return service
})

/**
 * Over the `SqlClient` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<RunLog, RunLogError, SqlClient.SqlClient> = Layer.effect(RunLog, make)
