/**
 * The server's `Memory` (docs/memory.md) in the run database: the users' working
 * memories, the update keys applied, the indexed turns and their vectors —
 * SQLite with `sqlite-vec` loaded into the database's connection, PostgreSQL
 * with `pgvector` when `CREATE EXTENSION vector` succeeds, else an exact scan
 * of the user's items (`description` says which; the server logs it at
 * start-up). Its own migrations (`react_engine_memory_migrations`). On SQLite
 * the connection deletes securely (`PRAGMA secure_delete`) and a forget ends
 * with a WAL checkpoint: forgotten text is not left in the database files.
 *
 * @since 0.1.0
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as sqliteVecModule from "sqlite-vec"
import * as Embedder from "../Embedder.js"
import type { Store, StoredItem, UpdateOutcome, WorkingMemory } from "../Memory.js"
import * as Memory from "../Memory.js"
import * as Index from "./internal/memoryIndex.js"

const failed = (what: string) => (error: { readonly message: string }) =>
  new Memory.MemoryError({ message: `${what}: ${error.message}` })

/**
 * The memory's tables (its own migration table, `react_engine_memory_migrations`).
 *
 * @since 0.1.0
 * @category migrations
 */
export const migrations = {
  "1_create_memory": Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    // the forget epoch: a write of a run that started before the user's last forget is refused
    yield* sql`CREATE TABLE IF NOT EXISTS react_memory_users (user_id TEXT PRIMARY KEY, epoch INTEGER NOT NULL DEFAULT 0)`
    yield* sql`CREATE TABLE IF NOT EXISTS react_memory_working (
      user_id TEXT PRIMARY KEY,
      value TEXT NOT NULL,
      updated_at TEXT NOT NULL
    )`
    yield* sql`CREATE TABLE IF NOT EXISTS react_memory_updates (
      idempotency_key TEXT PRIMARY KEY,
      user_id TEXT NOT NULL,
      outcome TEXT NOT NULL
    )`
    yield* sql`CREATE INDEX IF NOT EXISTS react_memory_updates_user ON react_memory_updates (user_id)`
    const id = sql.onDialectOrElse({
      pg: () => sql.literal("BIGSERIAL PRIMARY KEY"),
      orElse: () => sql.literal("INTEGER PRIMARY KEY")
    })
    const vector = sql.onDialectOrElse({ pg: () => sql.literal("REAL[]"), orElse: () => sql.literal("BLOB") })
    yield* sql`CREATE TABLE IF NOT EXISTS react_memory_items (
      item_id ${id},
      user_id TEXT NOT NULL,
      conversation_id TEXT NOT NULL,
      run_id TEXT NOT NULL UNIQUE,
      query TEXT NOT NULL,
      answer TEXT NOT NULL,
      created_at TEXT NOT NULL,
      model TEXT NOT NULL,
      sha TEXT NOT NULL,
      dims INTEGER NOT NULL,
      vector ${vector}
    )`
    yield* sql`CREATE INDEX IF NOT EXISTS react_memory_items_user ON react_memory_items (user_id, model, sha)`
  })
}

interface ItemRow {
  readonly item_id: number | string
  readonly user_id: string
  readonly conversation_id: string
  readonly run_id: string
  readonly query: string
  readonly answer: string
  readonly created_at: string
  readonly model: string
  readonly sha: string
  readonly dims: number | string
}

/** The most hits one search asks the index for (`sqlite-vec` answers at most 4096). */
const widest = 1024

const toItem = (row: ItemRow): StoredItem => ({
  user_id: row.user_id,
  conversation_id: row.conversation_id,
  run_id: row.run_id,
  query: row.query,
  answer: row.answer,
  at: row.created_at,
  model: row.model,
  sha: row.sha
})

/** Chooses the vector index the database offers, and makes deletes leave nothing behind (SQLite). */
const chooseIndex = (sql: SqlClient.SqlClient): Effect.Effect<Index.VectorIndex> =>
  sql.onDialectOrElse({
    pg: () =>
      sql`CREATE EXTENSION IF NOT EXISTS vector`.pipe(
        Effect.as(Index.pgVector(sql)),
        Effect.orElseSucceed(() => Index.pgScan(sql))
      ),
    orElse: () =>
      Effect.gen(function*() {
        yield* Effect.orDie(sql`PRAGMA secure_delete = ON`)
        const sqlite = yield* Effect.serviceOption(SqliteClient.SqliteClient)
        if (Option.isNone(sqlite)) return Index.sqliteScan(sql)
        const loaded = yield* Effect.either(Effect.flatMap(
          Effect.try(() => sqliteVecModule.getLoadablePath()),
          (path) => sqlite.value.loadExtension(path)
        ))
        if (Either.isLeft(loaded)) return Index.sqliteScan(sql)
        const version = yield* sql<{ v: string }>`SELECT vec_version() AS v`.pipe(
          Effect.map((rows) => rows[0]?.v ?? "?"),
          Effect.orElseSucceed(() => "?")
        )
        return Index.sqliteVec(sql, version)
      })
  })

/**
 * The store over the `SqlClient` in context (runs its migrations, loads
 * `sqlite-vec` into a SQLite connection, tries `CREATE EXTENSION vector` on
 * PostgreSQL).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeStore: Effect.Effect<Store, Memory.MemoryError, SqlClient.SqlClient> = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* Migrator.make({})({ loader: Migrator.fromRecord(migrations), table: "react_engine_memory_migrations" }).pipe(
    Effect.mapError(failed("memory migration failed"))
  )
  const index = yield* chooseIndex(sql)
  const isPg = sql.onDialectOrElse({ pg: () => true, orElse: () => false })
  const forUpdate = isPg ? sql.literal("FOR UPDATE") : sql.literal("")

  /** The user's row locked for the transaction (created when missing): its epoch. */
  const lockEpoch = (userId: string) =>
    Effect.zipRight(
      sql`INSERT INTO react_memory_users (user_id, epoch) VALUES (${userId}, 0) ON CONFLICT (user_id) DO NOTHING`,
      sql<{ epoch: number | string }>`SELECT epoch FROM react_memory_users WHERE user_id = ${userId} ${forUpdate}`
    ).pipe(Effect.map((rows) => Number(rows[0]?.epoch ?? 0)))

  const workingOf = (userId: string) =>
    sql<{ value: string }>`SELECT value FROM react_memory_working WHERE user_id = ${userId}`.pipe(
      Effect.map((rows): WorkingMemory => (rows[0] === undefined ? {} : JSON.parse(rows[0].value) as WorkingMemory))
    )

  const itemsOf = (ids: ReadonlyArray<number>) =>
    ids.length === 0
      ? Effect.succeed([] as ReadonlyArray<ItemRow>)
      : sql<ItemRow>`SELECT * FROM react_memory_items WHERE ${sql.in("item_id", ids)}`

  const store: Store = {
    description: index.description,
    read: (userId) =>
      Effect.all([
        workingOf(userId),
        sql<{ epoch: number | string }>`SELECT epoch FROM react_memory_users WHERE user_id = ${userId}`
      ]).pipe(
        Effect.map(([working, rows]) => ({ working, epoch: Number(rows[0]?.epoch ?? 0) })),
        Effect.mapError(failed("reading the memory failed"))
      ),
    update: (userId, key, epoch, change) =>
      sql.withTransaction(Effect.gen(function*() {
        const current = yield* lockEpoch(userId)
        const done = yield* sql<
          { outcome: string }
        >`SELECT outcome FROM react_memory_updates WHERE idempotency_key = ${key}`
        if (done[0] !== undefined) return JSON.parse(done[0].outcome) as UpdateOutcome
        if (current !== epoch) {
          return { _tag: "Refused", message: "the user's memory was forgotten since this run started" } as const
        }
        const result = change(yield* workingOf(userId))
        const outcome: UpdateOutcome = Either.isLeft(result)
          ? { _tag: "Refused", message: result.left }
          : { _tag: "Applied", updated: result.right }
        if (outcome._tag === "Applied") {
          const now = new Date().toISOString()
          const value = JSON.stringify(outcome.updated.working)
          yield* sql`INSERT INTO react_memory_working (user_id, value, updated_at) VALUES (${userId}, ${value}, ${now})
            ON CONFLICT (user_id) DO UPDATE SET value = ${value}, updated_at = ${now}`
        }
        yield* sql`INSERT INTO react_memory_updates (idempotency_key, user_id, outcome) VALUES (${key}, ${userId}, ${
          JSON.stringify(outcome)
        })`
        return outcome
      })).pipe(Effect.mapError(failed("updating the memory failed"))),
    vectorOf: (userId, sha, model) =>
      sql<{ item_id: number | string; dims: number | string }>`SELECT item_id, dims FROM react_memory_items
        WHERE user_id = ${userId} AND model = ${model} AND sha = ${sha} ORDER BY item_id LIMIT 1`.pipe(
        Effect.flatMap((rows) =>
          rows[0] === undefined
            ? Effect.succeed(Option.none())
            : index.vectorOf(Number(rows[0].item_id), Number(rows[0].dims))
        ),
        Effect.mapError(failed("reading a vector failed"))
      ),
    insert: (item, vector, epoch) =>
      sql.withTransaction(Effect.gen(function*() {
        if ((yield* lockEpoch(item.user_id)) !== epoch) return false
        const rows = yield* sql<{ item_id: number | string }>`INSERT INTO react_memory_items
          (user_id, conversation_id, run_id, query, answer, created_at, model, sha, dims)
          VALUES (${item.user_id}, ${item.conversation_id}, ${item.run_id}, ${item.query}, ${item.answer}, ${item.at}, ${item.model},
            ${item.sha}, ${vector.length})
          ON CONFLICT (run_id) DO NOTHING RETURNING item_id`
        const id = rows[0]?.item_id
        if (id === undefined) return false
        yield* index.add(Number(id), item, vector)
        return true
      })).pipe(Effect.mapError(failed("indexing the turn failed"))),
    search: (search) => {
      // A turn said again word for word (the same text: the same sha) is one memory, the latest: its copies
      // share one vector (an indexed text's vector is reused), so they come together and would take the k
      // places of other memories. The index is asked for more until k distinct texts, the threshold or the
      // end of the user's items is reached (at most `widest` hits: one text repeated more often may hide
      // texts less similar than it).
      const round = (asked: number): Effect.Effect<ReadonlyArray<{ item: StoredItem; score: number }>, SqlError> =>
        Effect.flatMap(index.search({ ...search, k: asked }), (hits) => {
          const kept = hits.filter((hit) => hit.score >= search.minScore)
          return Effect.flatMap(itemsOf(kept.map((hit) => hit.id)), (rows) => {
            const byId = new Map(rows.map((row) => [Number(row.item_id), row]))
            const bySha = new Map<string, { row: ItemRow; score: number }>()
            for (const hit of kept) {
              const row = byId.get(hit.id)
              // the user is checked again on the item itself: an index row never crosses users
              if (row === undefined || row.user_id !== search.userId) continue
              const seen = bySha.get(row.sha)
              if (seen === undefined) bySha.set(row.sha, { row, score: hit.score })
              else if (Number(row.item_id) > Number(seen.row.item_id)) seen.row = row
            }
            const distinct = [...bySha.values()].slice(0, search.k)
            const exhausted = hits.length < asked || kept.length < hits.length || asked >= widest
            return distinct.length >= search.k || exhausted
              ? Effect.succeed(distinct.map(({ row, score }) => ({ item: toItem(row), score })))
              : round(Math.min(asked * 4, widest))
          })
        })
      return round(search.k).pipe(Effect.mapError(failed("searching the memory failed")))
    },
    items: (userId) =>
      sql<ItemRow>`SELECT * FROM react_memory_items WHERE user_id = ${userId} ORDER BY item_id`.pipe(
        Effect.map((rows) => rows.map(toItem)),
        Effect.mapError(failed("reading the memory failed"))
      ),
    forget: (userId) =>
      sql.withTransaction(Effect.gen(function*() {
        yield* lockEpoch(userId)
        yield* sql`UPDATE react_memory_users SET epoch = epoch + 1 WHERE user_id = ${userId}`
        yield* sql`DELETE FROM react_memory_working WHERE user_id = ${userId}`
        yield* sql`DELETE FROM react_memory_updates WHERE user_id = ${userId}`
        const dims = yield* sql<
          { dims: number | string }
        >`SELECT DISTINCT dims FROM react_memory_items WHERE user_id = ${userId}`
        yield* index.remove(userId, dims.map((row) => Number(row.dims)))
        yield* sql`DELETE FROM react_memory_items WHERE user_id = ${userId}`
      })).pipe(
        Effect.zipRight(checkpoint(sql)),
        Effect.mapError(failed("forgetting failed"))
      )
  }
  return store
})

/**
 * SQLite: the WAL copied into the database file and truncated, so that pages
 * holding deleted rows are gone from the WAL file too (a no-op on PostgreSQL).
 *
 * @since 0.1.0
 * @category utils
 */
export const checkpoint = (sql: SqlClient.SqlClient): Effect.Effect<void, SqlError> =>
  sql.onDialectOrElse({ pg: () => Effect.void, orElse: () => Effect.asVoid(sql`PRAGMA wal_checkpoint(TRUNCATE)`) })

/**
 * The memory over the `SqlClient` and the `Embedder` in context; `options`
 * as `Memory.makeUnsafe` takes them.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: Memory.Options = {}
): Layer.Layer<Memory.Memory, Memory.MemoryError, SqlClient.SqlClient | Embedder.Embedder> =>
  Layer.effect(
    Memory.Memory,
    Effect.gen(function*() {
      const store = yield* makeStore
      const memory = Memory.makeUnsafe(store, yield* Embedder.Embedder, options)
      // which index and which embedder run, said once at start-up
      yield* Effect.logInfo(`memory: ${memory.description}`)
      return memory
    })
  )

/**
 * `layer` with the settings of the `REACT_MEMORY*` variables (`Memory.config`;
 * `options.settings` win).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  options: Memory.Options = {}
): Layer.Layer<Memory.Memory, Memory.MemoryError | ConfigError.ConfigError, SqlClient.SqlClient | Embedder.Embedder> =>
  Layer.unwrapEffect(Effect.map(Memory.loadSettings(options), (settings) => layer({ ...options, settings })))
