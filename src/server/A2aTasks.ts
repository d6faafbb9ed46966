/**
 * Where the A2A server keeps its tasks (SPEC §27): one row per task in the
 * server's database — the task as the protocol shows it (status, artifacts,
 * history), the durable run that does its work and the idempotency key it was
 * sent with. A task's `contextId` is the conversation its run belongs to.
 *
 * The table has its own migrations (`react_engine_a2a_migrations`), the same
 * SQL on SQLite and PostgreSQL.
 *
 * @since 0.1.0
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type * as SqlError from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"

/**
 * @since 0.1.0
 * @category errors
 */
export class A2aStoreError extends Schema.TaggedError<A2aStoreError>()("A2aStoreError", { message: Schema.String }) {}

/**
 * A stored task: the protocol's `Task` as JSON (`Task.toJSON` of the SDK),
 * with the run that does its work.
 *
 * @since 0.1.0
 * @category models
 */
export interface StoredTask {
  readonly taskId: string
  readonly contextId: string
  readonly runId: string | undefined
  readonly idempotencyKey: string | undefined
  /** The task state's protocol name (`TASK_STATE_WORKING`, …). */
  readonly state: string
  readonly task: unknown
  readonly updatedAt: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface A2aTasksService {
  /** Writes the task as the protocol shows it (keeps its run and key). */
  readonly save: (taskId: string, contextId: string, state: string, task: unknown) => Effect.Effect<void, A2aStoreError>
  /** Records the run (and the idempotency key) of a task, with the task as it starts. */
  readonly link: (options: {
    readonly taskId: string
    readonly contextId: string
    readonly runId: string
    readonly idempotencyKey?: string | undefined
    readonly state: string
    readonly task: unknown
  }) => Effect.Effect<void, A2aStoreError>
  readonly load: (taskId: string) => Effect.Effect<Option.Option<StoredTask>, A2aStoreError>
  /** The first task sent with this idempotency key. */
  readonly byKey: (idempotencyKey: string) => Effect.Effect<Option.Option<StoredTask>, A2aStoreError>
  /** Tasks not in a final state whose run is known (a restarted server follows them again). */
  readonly open: Effect.Effect<ReadonlyArray<StoredTask>, A2aStoreError>
  /** Tasks, newest first, optionally of one context. */
  readonly list: (
    options: { readonly contextId?: string; readonly limit: number; readonly offset: number }
  ) => Effect.Effect<
    { readonly tasks: ReadonlyArray<StoredTask>; readonly total: number },
    A2aStoreError
  >
}

/**
 * @since 0.1.0
 * @category Context
 */
export class A2aTasks extends Context.Tag("effect-react-engine/A2aTasks")<A2aTasks, A2aTasksService>() {}

/**
 * The task states a task does not leave.
 *
 * @since 0.1.0
 * @category constants
 */
export const FINAL_STATES: ReadonlyArray<string> = [
  "TASK_STATE_COMPLETED",
  "TASK_STATE_FAILED",
  "TASK_STATE_CANCELED",
  "TASK_STATE_REJECTED"
]

const migrations = {
  "1_create_a2a_tasks": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS react_a2a_tasks (
      task_id TEXT PRIMARY KEY,
      context_id TEXT NOT NULL,
      run_id TEXT,
      idempotency_key TEXT,
      state TEXT NOT NULL,
      is_final INTEGER NOT NULL DEFAULT 0,
      task TEXT NOT NULL,
      created_at BIGINT NOT NULL,
      updated_at BIGINT NOT NULL
    )`
    yield* sql`CREATE INDEX IF NOT EXISTS react_a2a_tasks_context ON react_a2a_tasks (context_id, created_at)`
    yield* sql`CREATE INDEX IF NOT EXISTS react_a2a_tasks_key ON react_a2a_tasks (idempotency_key)`
    yield* sql`CREATE INDEX IF NOT EXISTS react_a2a_tasks_open ON react_a2a_tasks (is_final)`
  })
}

interface Row {
  readonly task_id: string
  readonly context_id: string
  readonly run_id: string | null
  readonly idempotency_key: string | null
  readonly state: string
  readonly task: string
  readonly updated_at: number | string
}

const toStored = (row: Row): StoredTask => ({
  taskId: row.task_id,
  contextId: row.context_id,
  runId: row.run_id ?? undefined,
  idempotencyKey: row.idempotency_key ?? undefined,
  state: row.state,
  task: JSON.parse(row.task),
  updatedAt: Number(row.updated_at)
})

const failure = (what: string) => (error: SqlError.SqlError) =>
  new A2aStoreError({ message: `${what}: ${error.message}` })

const isFinal = (state: string): number => (FINAL_STATES.includes(state) ? 1 : 0)

/**
 * The store over the `SqlClient` in context (runs its migrations first).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<A2aTasksService, A2aStoreError, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: "react_engine_a2a_migrations" }).pipe(
    Effect.mapError((e) => new A2aStoreError({ message: `A2A task store migration failed: ${e.message}` }))
  )
  const columns = sql`task_id, context_id, run_id, idempotency_key, state, task, updated_at`
  const one = (rows: ReadonlyArray<Row>) => Option.map(Option.fromNullable(rows[0]), toStored)
  return {
    save: (taskId, contextId, state, task) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const json = JSON.stringify(task)
        return sql`INSERT INTO react_a2a_tasks (task_id, context_id, state, is_final, task, created_at, updated_at)
          VALUES (${taskId}, ${contextId}, ${state}, ${isFinal(state)}, ${json}, ${now}, ${now})
          ON CONFLICT (task_id) DO UPDATE SET state = excluded.state, is_final = excluded.is_final, task = excluded.task,
            updated_at = excluded.updated_at`
      }).pipe(Effect.asVoid, Effect.mapError(failure("saving the task failed"))),
    link: (o) =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const json = JSON.stringify(o.task)
        return sql`INSERT INTO react_a2a_tasks (task_id, context_id, run_id, idempotency_key, state, is_final, task, created_at, updated_at)
          VALUES (${o.taskId}, ${o.contextId}, ${o.runId}, ${o.idempotencyKey ?? null}, ${o.state}, ${
          isFinal(o.state)
        }, ${json}, ${now}, ${now})
          ON CONFLICT (task_id) DO UPDATE SET run_id = excluded.run_id, idempotency_key = excluded.idempotency_key`
      }).pipe(Effect.asVoid, Effect.mapError(failure("recording the task's run failed"))),
    load: (taskId) =>
      sql<Row>`SELECT ${columns} FROM react_a2a_tasks WHERE task_id = ${taskId}`.pipe(
        Effect.map(one),
        Effect.mapError(failure("reading the task failed"))
      ),
    byKey: (key) =>
      sql<Row>`SELECT ${columns} FROM react_a2a_tasks WHERE idempotency_key = ${key} ORDER BY created_at LIMIT 1`.pipe(
        Effect.map(one),
        Effect.mapError(failure("reading the task failed"))
      ),
    open: sql<Row>`SELECT ${columns} FROM react_a2a_tasks WHERE is_final = 0 AND run_id IS NOT NULL`.pipe(
      Effect.map((rows) => rows.map(toStored)),
      Effect.mapError(failure("reading the open tasks failed"))
    ),
    list: ({ contextId, limit, offset }) =>
      Effect.gen(function*() {
        const where = contextId === undefined ? sql`1 = 1` : sql`context_id = ${contextId}`
        const rows = yield* sql<Row>`SELECT ${columns} FROM react_a2a_tasks WHERE ${where}
          ORDER BY created_at DESC, task_id LIMIT ${limit} OFFSET ${offset}`
        const count = yield* sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM react_a2a_tasks WHERE ${where}`
        return { tasks: rows.map(toStored), total: Number(count[0]?.n ?? 0) }
      }).pipe(Effect.mapError(failure("listing the tasks failed")))
  }
})

/**
 * Over the `SqlClient` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<A2aTasks, A2aStoreError, SqlClient.SqlClient> = Layer.effect(A2aTasks, make)
