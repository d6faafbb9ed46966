/**
 * Where the server's memory keeps its vectors and how it searches them
 * (`SqlMemory`): SQLite through `sqlite-vec` (a `vec0` table per vector size,
 * the user as its partition key, cosine distance), PostgreSQL through
 * `pgvector` when `CREATE EXTENSION vector` succeeds, else an exact scan of the
 * user's items (in SQL on PostgreSQL, in the process on SQLite without
 * `sqlite-vec`). Every query names its user.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { StoredItem } from "../../Memory.js"

/** A search: the user's items of `model` outside one conversation, most similar to `vector`. */
export interface Search {
  readonly userId: string
  readonly excludeConversationId: string
  readonly model: string
  readonly vector: Float32Array
  readonly k: number
}

export interface VectorIndex {
  /** For the start-up line: `sqlite-vec 0.1.9`, `pgvector`, `exact scan`. */
  readonly description: string
  /** Stores the vector of item `id` (inside the caller's transaction). */
  readonly add: (id: number, item: StoredItem, vector: Float32Array) => Effect.Effect<void, SqlError>
  readonly vectorOf: (id: number, dims: number) => Effect.Effect<Option.Option<Float32Array>, SqlError>
  /** Item ids and cosine similarities, most similar first (at most `k`). */
  readonly search: (
    search: Search
  ) => Effect.Effect<ReadonlyArray<{ readonly id: number; readonly score: number }>, SqlError>
  /** Deletes the vectors of the user's items (before the items themselves). */
  readonly remove: (userId: string, dims: ReadonlyArray<number>) => Effect.Effect<void, SqlError>
}

const bytesOf = (vector: Float32Array): Uint8Array =>
  new Uint8Array(vector.buffer, vector.byteOffset, vector.byteLength)

/** A vector stored as little-endian float32 bytes. */
export const vectorOfBytes = (bytes: Uint8Array): Float32Array => {
  const copy = new Uint8Array(bytes.byteLength)
  copy.set(bytes)
  return new Float32Array(copy.buffer)
}

const dot = (a: Float32Array, b: Float32Array): number => {
  let sum = 0
  for (let i = 0; i < a.length; i++) sum += (a[i] ?? 0) * (b[i] ?? 0)
  return sum
}

/** A PostgreSQL array (and pgvector) literal of a vector. */
const literal = (vector: Float32Array, open: string, close: string): string =>
  `${open}${Array.from(vector).join(",")}${close}`

/**
 * `sqlite-vec`: one `vec0` table per vector size, created when the first vector of that size comes. Chunks of 64
 * vectors, not the default 1024: each user (partition) has chunks of its own, and a default chunk is allocated
 * whole — 100 users with 10 turns each made a 631 MB file at 1536 dimensions, 40 MB with chunks of 64.
 */
export const sqliteVec = (sql: SqlClient.SqlClient, version: string): VectorIndex => {
  const made = new Set<number>()
  const table = (dims: number) => `react_memory_vec_${Math.floor(dims)}`
  const ensure = (dims: number) =>
    made.has(dims) ? Effect.void : sql`CREATE VIRTUAL TABLE IF NOT EXISTS ${sql(table(dims))} USING vec0(
      item_id INTEGER PRIMARY KEY, user_id TEXT PARTITION KEY, conversation_id TEXT, model TEXT,
      embedding FLOAT[${sql.literal(String(Math.floor(dims)))}] distance_metric=cosine, chunk_size=64)`.pipe(
      Effect.tap(() => Effect.sync(() => made.add(dims)))
    )
  return {
    description: `sqlite-vec ${version}`,
    add: (id, item, vector) =>
      Effect.zipRight(
        ensure(vector.length),
        sql`INSERT INTO ${sql(table(vector.length))} (item_id, user_id, conversation_id, model, embedding)
          VALUES (CAST(${id} AS INTEGER), ${item.user_id}, ${item.conversation_id}, ${item.model}, ${bytesOf(vector)})`
      ),
    vectorOf: (id, dims) =>
      Effect.zipRight(
        ensure(dims),
        sql<{ embedding: Uint8Array }>`SELECT embedding FROM ${sql(table(dims))} WHERE item_id = CAST(${id} AS INTEGER)`
      ).pipe(Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), (row) => vectorOfBytes(row.embedding)))),
    search: (search) =>
      Effect.zipRight(
        ensure(search.vector.length),
        sql<{ item_id: number; distance: number }>`SELECT item_id, distance FROM ${sql(table(search.vector.length))}
          WHERE embedding MATCH ${bytesOf(search.vector)} AND k = ${search.k} AND user_id = ${search.userId}
            AND model = ${search.model} AND conversation_id != ${search.excludeConversationId} ORDER BY distance`
      ).pipe(Effect.map((rows) => rows.map((row) => ({ id: Number(row.item_id), score: 1 - Number(row.distance) })))),
    remove: (userId, dims) =>
      Effect.forEach(dims, (d) =>
        Effect.zipRight(
          ensure(d),
          sql`DELETE FROM ${sql(table(d))} WHERE user_id = ${userId}
            AND item_id IN (SELECT item_id FROM react_memory_items WHERE user_id = ${userId})`
        ), { discard: true })
  }
}

/** SQLite without `sqlite-vec`: the vector in the item's row, the user's items scanned in the process. */
export const sqliteScan = (sql: SqlClient.SqlClient): VectorIndex => ({
  description: "exact scan (sqlite-vec not loaded)",
  add: (id, _item, vector) =>
    sql`UPDATE react_memory_items SET vector = ${bytesOf(vector)} WHERE item_id = ${id}`.pipe(Effect.asVoid),
  vectorOf: (id) =>
    sql<{ vector: Uint8Array | null }>`SELECT vector FROM react_memory_items WHERE item_id = ${id}`.pipe(
      Effect.map((rows) => Option.map(Option.fromNullable(rows[0]?.vector), vectorOfBytes))
    ),
  search: (search) =>
    sql<{ item_id: number; vector: Uint8Array | null }>`SELECT item_id, vector FROM react_memory_items
      WHERE user_id = ${search.userId} AND model = ${search.model} AND conversation_id <> ${search.excludeConversationId}`
      .pipe(
        Effect.map((rows) =>
          rows.flatMap((row) => (row.vector === null
            ? []
            : [{ id: Number(row.item_id), score: dot(vectorOfBytes(row.vector), search.vector) }])
          )
            .sort((a, b) => b.score - a.score)
            .slice(0, search.k)
        )
      ),
  remove: () => Effect.void
})

/** PostgreSQL without pgvector: the vector a `REAL[]` of the item's row, the user's items scanned in SQL. */
export const pgScan = (sql: SqlClient.SqlClient): VectorIndex => ({
  description: "exact scan (pgvector not available)",
  add: (id, _item, vector) =>
    sql`UPDATE react_memory_items SET vector = ${literal(vector, "{", "}")}::real[] WHERE item_id = ${id}`.pipe(
      Effect.asVoid
    ),
  vectorOf: (id) =>
    sql<{ vector: ReadonlyArray<number> | null }>`SELECT vector FROM react_memory_items WHERE item_id = ${id}`.pipe(
      Effect.map((rows) => Option.map(Option.fromNullable(rows[0]?.vector), (v) => Float32Array.from(v)))
    ),
  search: (search) =>
    sql<{ item_id: number | string; score: number | string }>`SELECT item_id, score FROM (
        SELECT item_id, (SELECT SUM(a * b) FROM unnest(vector, ${
      literal(search.vector, "{", "}")
    }::real[]) AS t(a, b)) AS score
        FROM react_memory_items
        WHERE user_id = ${search.userId} AND model = ${search.model} AND conversation_id <> ${search.excludeConversationId}
          AND vector IS NOT NULL
      ) AS scored ORDER BY score DESC LIMIT ${search.k}`.pipe(
      Effect.map((rows) => rows.map((row) => ({ id: Number(row.item_id), score: Number(row.score) })))
    ),
  remove: () => Effect.void
})

/** PostgreSQL with pgvector: one table per vector size, searched with the cosine distance operator. */
export const pgVector = (sql: SqlClient.SqlClient): VectorIndex => {
  const made = new Set<number>()
  const table = (dims: number) => `react_memory_pgvec_${Math.floor(dims)}`
  const ensure = (dims: number) =>
    made.has(dims) ? Effect.void : Effect.zipRight(
      sql`CREATE TABLE IF NOT EXISTS ${sql(table(dims))} (item_id BIGINT PRIMARY KEY, user_id TEXT NOT NULL,
        conversation_id TEXT NOT NULL, model TEXT NOT NULL, embedding vector(${
        sql.literal(String(Math.floor(dims)))
      }) NOT NULL)`,
      sql`CREATE INDEX IF NOT EXISTS ${sql(`${table(dims)}_user`)} ON ${sql(table(dims))} (user_id, model)`
    ).pipe(Effect.tap(() => Effect.sync(() => made.add(dims))))
  return {
    description: "pgvector",
    add: (id, item, vector) =>
      Effect.zipRight(
        ensure(vector.length),
        sql`INSERT INTO ${sql(table(vector.length))} (item_id, user_id, conversation_id, model, embedding)
          VALUES (${id}, ${item.user_id}, ${item.conversation_id}, ${item.model}, ${literal(vector, "[", "]")}::vector)`
      ),
    vectorOf: (id, dims) =>
      Effect.zipRight(
        ensure(dims),
        sql<{ embedding: string }>`SELECT embedding::text AS embedding FROM ${sql(table(dims))} WHERE item_id = ${id}`
      ).pipe(
        Effect.map((rows) =>
          Option.map(
            Option.fromNullable(rows[0]),
            (row) => Float32Array.from(JSON.parse(row.embedding) as Array<number>)
          )
        )
      ),
    search: (search) =>
      Effect.zipRight(
        ensure(search.vector.length),
        sql<{ item_id: number | string; distance: number | string }>`SELECT item_id, distance FROM (
            SELECT item_id, embedding <=> ${literal(search.vector, "[", "]")}::vector AS distance FROM ${
          sql(table(search.vector.length))
        }
            WHERE user_id = ${search.userId} AND model = ${search.model} AND conversation_id <> ${search.excludeConversationId}
          ) AS near ORDER BY distance LIMIT ${search.k}`
      ).pipe(Effect.map((rows) => rows.map((row) => ({ id: Number(row.item_id), score: 1 - Number(row.distance) })))),
    remove: (userId, dims) =>
      Effect.forEach(
        dims,
        (d) => Effect.zipRight(ensure(d), sql`DELETE FROM ${sql(table(d))} WHERE user_id = ${userId}`),
        { discard: true }
      )
  }
}
