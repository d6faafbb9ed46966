/**
 * Who a conversation belongs to (docs/memory.md): the `user_id` column of the
 * conversations table (`ConversationStore` migration 5), set by the first run
 * that has a user id — a conversation started without one belongs to nobody —
 * and the statements that list and delete a user's conversations.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/** Migration `5_conversation_users`. */
export const migration = (sql: SqlClient.SqlClient) =>
  Effect.zipRight(
    sql`ALTER TABLE conversations ADD COLUMN user_id TEXT`,
    sql`CREATE INDEX IF NOT EXISTS conversations_user ON conversations (user_id)`
  )

/** The conversation's owner: none when there is no such conversation, `null` when it belongs to nobody. */
export const owner = (sql: SqlClient.SqlClient, id: string): Effect.Effect<Option.Option<string | null>, SqlError> =>
  sql<{ user_id: string | null }>`SELECT user_id FROM conversations WHERE id = ${id}`.pipe(
    Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (row) => row.user_id ?? null))
  )

/**
 * True when a run of `userId` (or of nobody) may continue conversation `id`:
 * a new conversation with a user id is created as that user's; one that exists
 * must belong to the same user (or to nobody, for a run without one).
 */
export const claim = (
  sql: SqlClient.SqlClient,
  id: string,
  userId: string | undefined,
  title: string
): Effect.Effect<boolean, SqlError> =>
  Effect.gen(function*() {
    if (userId !== undefined) {
      const now = new Date().toISOString()
      yield* sql`INSERT INTO conversations (id, title, created_at, updated_at, turns, user_id)
        VALUES (${id}, ${title}, ${now}, ${now}, 0, ${userId}) ON CONFLICT (id) DO NOTHING`
    }
    const found = yield* owner(sql, id)
    return Option.isNone(found) ? userId === undefined : found.value === (userId ?? null)
  })

/** The user's conversations. */
export const ofUser = (sql: SqlClient.SqlClient, userId: string): Effect.Effect<ReadonlyArray<string>, SqlError> =>
  sql<{ id: string }>`SELECT id FROM conversations WHERE user_id = ${userId} ORDER BY created_at`.pipe(
    Effect.map((rows) => rows.map((row) => row.id))
  )

/** Deletes conversations and their turns. */
export const remove = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>): Effect.Effect<void, SqlError> =>
  ids.length === 0 ? Effect.void : sql.withTransaction(Effect.zipRight(
    sql`DELETE FROM turns WHERE ${sql.in("conversation_id", ids)}`,
    sql`DELETE FROM conversations WHERE ${sql.in("id", ids)}`
  ))
