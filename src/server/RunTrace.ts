/**
 * What a server run recorded for its cassette (`Recorder`): its input, every
 * model request and reply, every tool handler's outcome and every interrupt
 * drain, in order, in the shared database next to the run log's events.
 * `GET /api/conversations/:id/runs/:run_id/cassette` builds the run's
 * cassette from these rows and the stored events.
 *
 * A run cut by a crash may hold, after its restart, a second entry for the
 * model call or tool call that was in flight (both attempts happened).
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Cassette from "../Cassette.js"
import type * as Recorder from "../Recorder.js"

/**
 * @since 0.1.0
 * @category errors
 */
export class RunTraceError extends Schema.TaggedError<RunTraceError>()("RunTraceError", { message: Schema.String }) {}

/**
 * One stored entry: `kind` is `input`, `model`, `tool` or `drain`; `data` its JSON.
 *
 * @since 0.1.0
 * @category models
 */
export interface TraceRow {
  readonly kind: string
  readonly data: unknown
  /**
   * The id of the run's last stored event when the entry was stored (a step
   * completed after that event and before the next one): a fork at event
   * `at` takes the steps with `afterEvent < at` from storage. Absent on
   * entries stored before it was recorded.
   */
  readonly afterEvent?: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface RunTraceService {
  readonly append: (
    runId: string,
    kind: string,
    data: unknown,
    afterEvent?: number
  ) => Effect.Effect<void, RunTraceError>
  /** The run's entries in the order they were stored. */
  readonly entries: (runId: string) => Effect.Effect<ReadonlyArray<TraceRow>, RunTraceError>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class RunTrace extends Context.Tag("effect-react-engine/RunTrace")<RunTrace, RunTraceService>() {}

/**
 * The trace on the database's `react_run_trace` table (created when missing).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<RunTraceService, RunTraceError, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const failure = (what: string) => (e: { readonly message: string }) =>
    new RunTraceError({ message: `${what}: ${e.message}` })
  yield* sql`CREATE TABLE IF NOT EXISTS react_run_trace (
    run_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (run_id, seq))`
    .pipe(
      Effect.mapError(failure("creating the run trace table failed"))
    )
  // added later: a table made before it gets the column (PostgreSQL says IF NOT EXISTS, SQLite has no such clause)
  const columns = yield* sql.onDialectOrElse({
    pg: () =>
      sql<
        { name: string }
      >`SELECT column_name AS name FROM information_schema.columns WHERE table_name = 'react_run_trace'`,
    orElse: () => sql<{ name: string }>`SELECT name FROM pragma_table_info('react_run_trace')`
  }).pipe(Effect.mapError(failure("reading the run trace table failed")))
  if (!columns.some((c) => c.name === "after_event")) {
    yield* sql`ALTER TABLE react_run_trace ADD COLUMN after_event INTEGER`.pipe(
      // another instance may have added it meanwhile
      Effect.catchAll(() => Effect.void)
    )
  }
  return {
    append: (runId, kind, data, afterEvent) =>
      sql`INSERT INTO react_run_trace (run_id, seq, kind, data, after_event)
        SELECT ${runId}, COALESCE(MAX(seq), 0) + 1, ${kind}, ${JSON.stringify(data)}, ${afterEvent ?? null}
        FROM react_run_trace WHERE run_id = ${runId}`.pipe(
        Effect.retry({ times: 3 }),
        Effect.asVoid,
        Effect.mapError(failure("storing a trace entry failed"))
      ),
    entries: (runId) =>
      sql<{ kind: string; data: string; after_event: number | string | null }>`SELECT kind, data, after_event
        FROM react_run_trace WHERE run_id = ${runId} ORDER BY seq`.pipe(
        Effect.map((rows) =>
          rows.map((r) => ({
            kind: r.kind,
            data: JSON.parse(r.data) as unknown,
            ...(r.after_event === null ? {} : { afterEvent: Number(r.after_event) })
          }))
        ),
        Effect.mapError(failure("reading the run trace failed"))
      )
  }
})

/**
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<RunTrace, RunTraceError, SqlClient.SqlClient> = Layer.effect(RunTrace, make)

/**
 * The trace entry of a recording entry (what `DurableRuns` stores).
 *
 * @since 0.1.0
 * @category utils
 */
export const traceEntry = (entry: Recorder.RecordingEntry): { readonly kind: string; readonly data: unknown } => {
  switch (entry._tag) {
    case "ModelCall":
      return { kind: "model", data: Schema.encodeSync(Cassette.ModelCall)(entry.call) }
    case "ToolCall":
      return { kind: "tool", data: entry.call }
    case "Drain":
      return { kind: "drain", data: { items: entry.items } }
    case "Model":
      return { kind: "model_info", data: entry.model }
    case "Memory":
      return { kind: "memory", data: entry.steps }
  }
}
