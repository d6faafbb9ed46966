/**
 * The conversation store's tables (conversations, turns; the same SQL on SQLite
 * and PostgreSQL) and the migrator that creates them (table `react_engine_migrations`).
 *
 * @internal
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Users from "./conversationUsers.js"

/**
 * The schema migrations.
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrations = {
  "1_create_conversations": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`CREATE TABLE IF NOT EXISTS conversations (
      id TEXT PRIMARY KEY,
      title TEXT NOT NULL,
      created_at TEXT NOT NULL,
      updated_at TEXT NOT NULL,
      turns INTEGER NOT NULL DEFAULT 0
    )`
    yield* sql`CREATE TABLE IF NOT EXISTS turns (
      conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
      turn INTEGER NOT NULL,
      query TEXT NOT NULL,
      answer TEXT NOT NULL,
      messages TEXT NOT NULL,
      usage TEXT,
      status TEXT NOT NULL,
      created_at TEXT NOT NULL,
      PRIMARY KEY (conversation_id, turn)
    )`
    yield* sql`CREATE INDEX IF NOT EXISTS conversations_updated ON conversations (updated_at DESC)`
  }),
  "2_run_ids_and_forks": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* sql`ALTER TABLE turns ADD COLUMN run_id TEXT`
    yield* sql`ALTER TABLE conversations ADD COLUMN forked_from TEXT`
  }),
  // an answer with text PostgreSQL cannot store (U+0000): `answer` keeps a readable copy, this the exact text as JSON
  "4_turn_answer_json": Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`ALTER TABLE turns ADD COLUMN answer_json TEXT`
  ),
  // 5, not the 3 reserved for it: a database already at 4 (main's) would never run a 3
  "5_conversation_users": Effect.flatMap(SqlClient.SqlClient, Users.migration)
}

/** Runs the migrations over the `SqlClient` in context. */
export const run = Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: "react_engine_migrations" })
