/**
 * A forget with `?conversations=true` (docs/memory.md): everything the server stored
 * of a user's conversations goes — their runs' events, queued and drained
 * messages, approvals, claims and traces, and the workflow engine's stored
 * messages and replies of those runs (a run's payload holds its query and
 * history, its activities' results what the model said). The conversations
 * and turns themselves are `ConversationStore.remove`'s. One transaction; the
 * caller checkpoints the WAL afterwards (SQLite).
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"

/** The runs of these conversations. */
export const runsOf = (
  sql: SqlClient.SqlClient,
  conversationIds: ReadonlyArray<string>
): Effect.Effect<ReadonlyArray<string>, SqlError> =>
  conversationIds.length === 0 ? Effect.succeed([]) : sql<{ run_id: string }>`SELECT run_id FROM react_runs
    WHERE ${sql.in("conversation_id", conversationIds)}`.pipe(Effect.map((rows) => rows.map((row) => row.run_id)))

/**
 * Deletes the stored runs of these conversations; `executionIds` are their
 * workflow executions (the engine's entity ids).
 */
export const remove = (
  sql: SqlClient.SqlClient,
  conversationIds: ReadonlyArray<string>,
  runIds: ReadonlyArray<string>,
  executionIds: ReadonlyArray<string>
): Effect.Effect<void, SqlError> =>
  conversationIds.length === 0 ? Effect.void : sql.withTransaction(Effect.gen(function*() {
    if (runIds.length > 0) {
      yield* sql`DELETE FROM react_run_events WHERE ${sql.in("run_id", runIds)}`
      yield* sql`DELETE FROM react_activity_starts WHERE ${sql.in("run_id", runIds)}`
      yield* sql`DELETE FROM react_run_trace WHERE ${sql.in("run_id", runIds)}`
    }
    yield* sql`DELETE FROM react_injections WHERE ${sql.in("conversation_id", conversationIds)}`
    yield* sql`DELETE FROM react_approvals WHERE ${sql.in("conversation_id", conversationIds)}`
    yield* sql`DELETE FROM react_active_runs WHERE ${sql.in("conversation_id", conversationIds)}`
    yield* sql`DELETE FROM react_runs WHERE ${sql.in("conversation_id", conversationIds)}`
    if (executionIds.length > 0) {
      yield* sql`DELETE FROM cluster_replies WHERE request_id IN (SELECT id FROM cluster_messages WHERE ${
        sql.in("entity_id", executionIds)
      })`
      yield* sql`DELETE FROM cluster_messages WHERE ${sql.in("entity_id", executionIds)}`
    }
  }))
