/** The attachments a server's SQLite file holds, read from the file itself. */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"

/** How many rows `react_attachments` has (one per distinct content). */
export const rows = (path: string): Effect.Effect<number> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const found = yield* sql<{ n: number }>`SELECT COUNT(*) AS n FROM react_attachments`
    return Number(found[0]?.n ?? 0)
  }).pipe(
    Effect.provide(SqliteClient.layer({ filename: path, readonly: true, disableWAL: true })),
    Effect.orDie,
    Effect.scoped
  )
