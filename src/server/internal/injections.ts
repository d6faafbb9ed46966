/**
 * The run log's statements on `react_injections` (`RunLog`'s `inject`,
 * `recall` and `drain`): the user messages queued for a conversation's active
 * run, in the order they came, until a step of the run takes them in.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { Injection } from "../../Interrupts.js"

/** What the statements answer, before `RunLog` maps their errors. */
export interface Injections {
  readonly inject: (conversationId: string, content: string) => Effect.Effect<Option.Option<Injection>, SqlError>
  readonly recall: (conversationId: string, id: string) => Effect.Effect<boolean, SqlError>
  readonly drain: (conversationId: string, key?: string) => Effect.Effect<ReadonlyArray<Injection>, SqlError>
}

const newInjectionId = () => `inj_${crypto.randomUUID().replace(/-/g, "").slice(0, 16)}`

export const make = (sql: SqlClient.SqlClient): Injections => {
  const lockRow = sql.onDialectOrElse({ pg: () => sql.literal(" FOR UPDATE"), orElse: () => sql.literal("") })
  return {
    inject: (conversationId, content) =>
      sql.withTransaction(Effect.gen(function*() {
        // one message at a time per conversation: PostgreSQL locks the active run's row (SQLite
        // has one writer), so that the next statement sees the message queued before
        const rows = yield* sql<{ run_id: string }>`SELECT run_id FROM react_active_runs
          WHERE conversation_id = ${conversationId}${lockRow}`
        const runId = rows[0]?.run_id
        if (runId === undefined) return Option.none<Injection>()
        const id = newInjectionId()
        const now = yield* Clock.currentTimeMillis
        // a queue: a message is ordered after the conversation's previous one even when both came
        // within one millisecond (ties were broken by the random id, so two quick messages could
        // be drained in the wrong order)
        const after = sql`COALESCE(MAX(created_at) + 1, 0)`
        const createdAt = sql.onDialectOrElse({
          pg: () => sql`GREATEST(CAST(${now} AS BIGINT), ${after})`,
          orElse: () => sql`MAX(${now}, ${after})`
        })
        yield* sql`INSERT INTO react_injections (id, conversation_id, run_id, content, state, created_at)
          SELECT ${id}, ${conversationId}, ${runId}, ${content}, 'queued', ${createdAt}
          FROM react_injections WHERE conversation_id = ${conversationId}`
        return Option.some({ id, content })
      })),
    recall: (conversationId, id) =>
      sql<{ id: string }>`UPDATE react_injections SET state = 'recalled'
        WHERE id = ${id} AND conversation_id = ${conversationId} AND state = 'queued' RETURNING id`.pipe(
        Effect.map((rows) => rows.length > 0)
      ),
    drain: (conversationId, key) => {
      type Row = { id: string; content: string; created_at: number | string; state?: string }
      const read = key === undefined
        ? sql<Row>`SELECT id, content, created_at, state FROM react_injections
            WHERE conversation_id = ${conversationId} AND state = 'queued' ORDER BY created_at, id`
        : sql<Row>`SELECT id, content, created_at, state FROM react_injections
            WHERE conversation_id = ${conversationId} AND (state = 'queued' OR drained_by = ${key})
            ORDER BY created_at, id`
      const ordered = (rows: ReadonlyArray<Row>) =>
        rows.slice().sort((a, b) =>
          Number(a.created_at) - Number(b.created_at) || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)
        )
          .map((r): Injection => ({ id: r.id, content: r.content }))
      // nothing queued (every step but a few): one read; else one statement marks them, atomically
      // (what was queued meanwhile is taken too; a message recalled meanwhile is not)
      return Effect.flatMap(read, (rows) => {
        if (!rows.some((r) => r.state === "queued")) return Effect.succeed(ordered(rows))
        return Effect.map(
          sql<Row>`UPDATE react_injections SET state = 'drained', drained_by = ${key ?? null}
            WHERE conversation_id = ${conversationId} AND state = 'queued' RETURNING id, content, created_at`,
          (marked) => ordered([...rows.filter((r) => r.state !== "queued"), ...marked])
        )
      })
    }
  }
}
