/**
 * The run log's tables (the same SQL on SQLite and PostgreSQL).
 *
 * @internal
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

const migrations = {
  "1_create_run_log": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS react_runs (
      run_id TEXT PRIMARY KEY,
      conversation_id TEXT NOT NULL,
      query TEXT NOT NULL,
      status TEXT NOT NULL,
      started_at BIGINT NOT NULL,
      last_seq INTEGER NOT NULL DEFAULT 0,
      cancel_requested INTEGER NOT NULL DEFAULT 0,
      leases INTEGER NOT NULL DEFAULT 0,
      detached_at BIGINT,
      waiting INTEGER NOT NULL DEFAULT 0
    )`
    yield* sql`CREATE INDEX IF NOT EXISTS react_runs_conversation ON react_runs (conversation_id, started_at)`
    yield* sql`CREATE INDEX IF NOT EXISTS react_runs_status ON react_runs (status, started_at)`
    yield* sql`CREATE TABLE IF NOT EXISTS react_active_runs (
      conversation_id TEXT PRIMARY KEY,
      run_id TEXT NOT NULL
    )`
    yield* sql`CREATE TABLE IF NOT EXISTS react_run_events (
      run_id TEXT NOT NULL,
      seq INTEGER NOT NULL,
      event_key TEXT NOT NULL,
      channel TEXT NOT NULL,
      data TEXT NOT NULL,
      PRIMARY KEY (run_id, seq),
      UNIQUE (run_id, event_key)
    )`
    yield* sql`CREATE TABLE IF NOT EXISTS react_injections (
      id TEXT PRIMARY KEY,
      conversation_id TEXT NOT NULL,
      run_id TEXT NOT NULL,
      content TEXT NOT NULL,
      state TEXT NOT NULL,
      created_at BIGINT NOT NULL
    )`
    yield* sql`CREATE INDEX IF NOT EXISTS react_injections_queue ON react_injections (conversation_id, state)`
  }),
  "2_create_approvals": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS react_approvals (
      approval_id TEXT PRIMARY KEY,
      conversation_id TEXT NOT NULL,
      tool_call_id TEXT NOT NULL,
      tool_name TEXT NOT NULL,
      args TEXT NOT NULL,
      args_hash TEXT NOT NULL,
      iteration INTEGER NOT NULL,
      status TEXT NOT NULL,
      reason TEXT,
      deadline BIGINT,
      created_at BIGINT NOT NULL
    )`
    yield* sql`CREATE INDEX IF NOT EXISTS react_approvals_pending ON react_approvals (status, conversation_id)`
  }),
  "3_create_activity_starts": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // which process started an activity that must know whether it was in flight at a crash
    yield* sql`CREATE TABLE IF NOT EXISTS react_activity_starts (
      run_id TEXT NOT NULL,
      name TEXT NOT NULL,
      boot TEXT NOT NULL,
      PRIMARY KEY (run_id, name)
    )`
  }),
  "4_activity_claims": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // a tool call's claim (`RunLog.claim`): the process executing it now, and until when its
    // lease holds (ms since the epoch, the database's clock); NULL on rows written before
    yield* sql`ALTER TABLE react_activity_starts ADD COLUMN holder TEXT`
    yield* sql`ALTER TABLE react_activity_starts ADD COLUMN lease_until BIGINT`
  }),
  "5_injection_drain_key": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // the step that drained a message (`RunLog.drain`'s key): a step re-run after a crash takes
    // again what its first attempt marked drained; NULL on rows drained before, and by a run's end
    yield* sql`ALTER TABLE react_injections ADD COLUMN drained_by TEXT`
  }),
  "6_activity_outcomes": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // a tool call's outcome as its execution stored it (`RunLog.settleCall`), so that an attempt
    // the workflow engine delivers again — here or on another instance — adopts it instead of
    // running the call again; NULL while the call runs, and on rows written before
    yield* sql`ALTER TABLE react_activity_starts ADD COLUMN outcome TEXT`
  }),
  "7_pending_start": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // a run's workflow request (JSON), stored with the run and cleared once the engine has it: the
    // registry answers the start before it hands the request over, and a process that crashed in
    // between leaves it for the next start-up to hand over (NULL: handed over, or stored before)
    yield* sql`ALTER TABLE react_runs ADD COLUMN pending_start TEXT`
  })
}

/** Runs the migrations (idempotent; concurrent instances are serialised by the migrator's table). */
export const run = Migrator.make({})({
  loader: Migrator.fromRecord(migrations),
  table: "react_engine_run_log_migrations"
})
