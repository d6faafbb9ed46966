/**
 * The server's memory store on a real SQLite file (`sqlite-vec` loaded into
 * the database's connection) and a real PostgreSQL (exact scan here: pgvector
 * is not installed on this machine; the start-up description says so): the
 * same answers as the in-memory store (the searches run on it too) — search per user, other conversations
 * only, the threshold, updates once per key, the forget epoch, forget deleting
 * everything of the user and nothing of another's.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { mkdtempSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as Embedder from "../../src/Embedder.js"
import * as Memory from "../../src/Memory.js"
import * as Database from "../../src/server/Database.js"
import * as SqlMemory from "../../src/server/SqlMemory.js"
import { findPostgres, type Postgres, startPostgres } from "../utils/postgres.js"

const found = findPostgres()
let pg: Postgres | undefined
afterAll(() => pg?.stop())

const sqliteFile = (): Effect.Effect<Database.Location> =>
  Effect.sync(() => ({ _tag: "Sqlite", filename: join(mkdtempSync(join(tmpdir(), "memory-")), "react.sqlite") }))
const pgDatabase = (name: string) =>
  Effect.promise(async (): Promise<Database.Location> => {
    pg ??= await startPostgres((found as { bin: string }).bin)
    return { _tag: "Postgres", url: Redacted.make(pg.createDatabase(name)) }
  })

const openStore = (
  where: Database.Location
): Effect.Effect<{ store: Memory.Store; sql: SqlClient.SqlClient }, never, Scope.Scope> =>
  Effect.gen(function*() {
    const context = yield* Layer.build(Database.layer(where).pipe(Layer.orDie))
    const sql = Context.get(context, SqlClient.SqlClient)
    const store = yield* Effect.provide(Effect.orDie(SqlMemory.makeStore), context)
    return { store, sql }
  })

const embedder = Embedder.makeLocal()
const vec = (text: string) => Effect.runSync(embedder.embed([text])).vectors[0]

const item = (userId: string, conversationId: string, runId: string, query: string): Memory.StoredItem => ({
  user_id: userId,
  conversation_id: conversationId,
  run_id: runId,
  query,
  answer: `answer to ${query}`,
  at: new Date().toISOString(),
  model: embedder.model,
  sha: runId
})

type Open = (name: string) => Effect.Effect<{ store: Memory.Store; sql?: SqlClient.SqlClient }, never, Scope.Scope>

const onDatabase = (location: (name: string) => Effect.Effect<Database.Location>): Open => (name) =>
  Effect.flatMap(location(name), openStore)

/** The in-memory store (`Memory.layerMemory`'s): the same answers to the same searches. */
const inMemory: Open = () => Effect.sync(() => ({ store: Memory.makeStoreUnsafe() }))

const storeOn = (label: string, open: Open, index: RegExp) => {
  it.scoped(`${label}: search is per user and outside the run's conversation, above the threshold, most similar first`, () =>
    Effect.gen(function*() {
      const { store } = yield* open("search")
      assert.match(store.description, index)
      const texts = [
        "the dog Biscuit eats carrots",
        "the cat Pixel sleeps on the sofa",
        "carrots for the dog Biscuit again"
      ]
      for (const [i, text] of texts.entries()) {
        assert.isTrue(yield* Effect.orDie(store.insert(item("ada", `c${i}`, `r${i}`, text), vec(text), 0)))
      }
      // the same words for another user
      assert.isTrue(yield* Effect.orDie(store.insert(item("grace", "g0", "rg", texts[0]), vec(texts[0]), 0)))
      // a run indexed twice (its step re-run after a crash) is one item
      assert.isFalse(yield* Effect.orDie(store.insert(item("ada", "c0", "r0", texts[0]), vec(texts[0]), 0)))
      const hits = yield* Effect.orDie(store.search({
        userId: "ada",
        excludeConversationId: "c2",
        model: embedder.model,
        vector: vec("what does the dog Biscuit eat"),
        k: 4,
        minScore: 0.2
      }))
      assert.deepStrictEqual(hits.map((h) => h.item.conversation_id), ["c0"])
      assert.isTrue(hits.every((h) => h.item.user_id === "ada" && h.score >= 0.2 && h.score <= 1.0001))
      const all = yield* Effect.orDie(store.search({
        userId: "ada",
        excludeConversationId: "none",
        model: embedder.model,
        vector: vec("carrots for the dog Biscuit again"),
        k: 2,
        minScore: -1
      }))
      assert.deepStrictEqual(all.map((h) => h.item.run_id), ["r2", "r0"])
      assert.isAbove(all[0].score, 0.99)
      // another embedding model's vectors are never compared
      const other = yield* Effect.orDie(store.search({
        userId: "ada",
        excludeConversationId: "none",
        model: "another-model",
        vector: vec("carrots"),
        k: 4,
        minScore: -1
      }))
      assert.strictEqual(other.length, 0)
      const known = yield* Effect.orDie(store.vectorOf("ada", "r1", embedder.model))
      assert.isTrue(Option.isSome(known) && Math.abs(known.value[0] - vec(texts[1])[0]) < 1e-6)
    }))

  it.scoped(`${label}: a turn repeated word for word is one memory (the latest), however often it was said`, () =>
    Effect.gen(function*() {
      const { store } = yield* open("repeats")
      const asked = "what is my favourite fruit"
      // ten copies of one turn (one sha), then two other turns: the copies come first in the index. Copies share
      // one vector, except when two runs indexed the same text at once (each embedded it): the first copy here
      // has a vector of its own, the most similar, the latest one another, less similar, and the rest a third:
      // the text takes the place and score of its most similar copy and is recalled as last said
      for (let i = 0; i < 10; i++) {
        const copy = { ...item("ada", `c${i}`, `r${i}`, asked), sha: "same-turn" }
        const text = i === 0 ? asked : i === 9 ? `${asked} now` : `${asked} now please`
        assert.isTrue(yield* Effect.orDie(store.insert(copy, vec(text), 0)))
      }
      const told = "my favourite fruit is the quince"
      const other = "the cat Pixel sleeps on the sofa"
      assert.isTrue(yield* Effect.orDie(store.insert(item("ada", "t", "rt", told), vec(told), 0)))
      assert.isTrue(yield* Effect.orDie(store.insert(item("ada", "o", "ro", other), vec(other), 0)))
      const search = (k: number, minScore: number) =>
        Effect.orDie(store.search({
          userId: "ada",
          excludeConversationId: "none",
          model: embedder.model,
          vector: vec(asked),
          k,
          minScore
        }))
      const two = yield* search(2, -1)
      assert.deepStrictEqual(two.map((h) => h.item.run_id), ["r9", "rt"])
      assert.isAbove(two[0].score, 0.999)
      assert.isAbove(two[0].score, two[1].score)
      const all = yield* search(4, -1)
      assert.deepStrictEqual(all.map((h) => h.item.run_id), ["r9", "rt", "ro"])
      // the threshold ends the search as before: above the told turn's score only the copies are left
      const close = yield* search(4, all[1].score + 0.001)
      assert.deepStrictEqual(close.map((h) => h.item.run_id), ["r9"])
      // a score equal to the threshold is kept
      const equal = yield* search(4, all[1].score)
      assert.deepStrictEqual(equal.map((h) => h.item.run_id), ["r9", "rt"])

      // a wider search finds more distinct texts than asked for: k of them, the most similar
      for (let i = 0; i < 3; i++) {
        yield* Effect.orDie(store.insert({ ...item("bob", `b${i}`, `b${i}`, asked), sha: "bob-same" }, vec(asked), 0))
      }
      yield* Effect.orDie(store.insert(item("bob", "bt", "bt", told), vec(told), 0))
      yield* Effect.orDie(store.insert(item("bob", "bo", "bo", other), vec(other), 0))
      const bob = yield* Effect.orDie(store.search({
        userId: "bob",
        excludeConversationId: "none",
        model: embedder.model,
        vector: vec(asked),
        k: 2,
        minScore: -1
      }))
      assert.deepStrictEqual(bob.map((h) => h.item.run_id), ["b2", "bt"])
    }))

  it.scoped(`${label}: an update applies once per key; a forget deletes the user's memory only and fences older runs`, () =>
    Effect.gen(function*() {
      const { sql, store } = yield* open("forget")
      const set = (n: number) => (current: Memory.WorkingMemory) =>
        Either.right({ keys: ["n"], working: { ...current, n } })
      const first = yield* Effect.orDie(store.update("ada", "k1", 0, set(1)))
      yield* Effect.orDie(store.update("ada", "k2", 0, set(2)))
      assert.deepStrictEqual(yield* Effect.orDie(store.update("ada", "k1", 0, set(1))), first)
      assert.deepStrictEqual((yield* Effect.orDie(store.read("ada"))).working, { n: 2 })
      yield* Effect.orDie(store.update("grace", "k3", 0, set(7)))
      yield* Effect.orDie(store.insert(item("ada", "c", "r1", "Biscuit"), vec("Biscuit"), 0))
      yield* Effect.orDie(store.insert(item("grace", "g", "r2", "Pixel"), vec("Pixel"), 0))

      yield* Effect.orDie(store.forget("ada"))
      const read = yield* Effect.orDie(store.read("ada"))
      assert.deepStrictEqual(read, { working: {}, epoch: 1 })
      assert.deepStrictEqual(yield* Effect.orDie(store.items("ada")), [])
      assert.strictEqual((yield* Effect.orDie(store.items("grace"))).length, 1)
      assert.deepStrictEqual((yield* Effect.orDie(store.read("grace"))).working, { n: 7 })
      // a run that started before the forget (epoch 0) writes nothing more
      const late = yield* Effect.orDie(store.update("ada", "k4", 0, set(9)))
      assert.strictEqual(late._tag, "Refused")
      assert.isFalse(yield* Effect.orDie(store.insert(item("ada", "c", "r3", "late"), vec("late"), 0)))
      assert.deepStrictEqual(yield* Effect.orDie(store.items("ada")), [])
      // the user's rows are gone from every table (the vectors too)
      if (sql !== undefined) {
        const left = yield* Effect.orDie(sql<{ n: number | string }>`SELECT
          (SELECT COUNT(*) FROM react_memory_items WHERE user_id = 'ada') +
          (SELECT COUNT(*) FROM react_memory_working WHERE user_id = 'ada') +
          (SELECT COUNT(*) FROM react_memory_updates WHERE user_id = 'ada') AS n`)
        assert.strictEqual(Number(left[0].n), 0)
      }
      const hits = yield* Effect.orDie(store.search({
        userId: "ada",
        excludeConversationId: "x",
        model: embedder.model,
        vector: vec("Biscuit"),
        k: 4,
        minScore: -1
      }))
      assert.strictEqual(hits.length, 0)
    }))
}

describe("SqlMemory", () => {
  storeOn("in memory", inMemory, /^in-memory exact scan$/)
  storeOn("SQLite", onDatabase(() => sqliteFile()), /^sqlite-vec v0\.1\.9$/)

  // the index is asked for at most 1024 hits: a text repeated more often hides what is less similar than it
  // (the search ends there, it does not ask again)
  it.scoped("SQLite: a text repeated beyond the widest search ends the search", () =>
    Effect.gen(function*() {
      const { store } = yield* openStore(yield* sqliteFile())
      const asked = "what is my favourite fruit"
      for (let i = 0; i < 1030; i++) {
        yield* Effect.orDie(store.insert({ ...item("ada", `c${i}`, `r${i}`, asked), sha: "same" }, vec(asked), 0))
      }
      yield* Effect.orDie(store.insert(item("ada", "t", "rt", "my favourite fruit is the quince"), vec("quince"), 0))
      const hits = yield* Effect.orDie(store.search({
        userId: "ada",
        excludeConversationId: "none",
        model: embedder.model,
        vector: vec(asked),
        k: 2,
        minScore: -1
      }))
      assert.deepStrictEqual(hits.map((h) => h.item.sha), ["same"])
    }), 120_000)

  // each user is a partition of the vec0 table with chunks of its own: a user with one turn must not cost megabytes
  it.scoped("SQLite: many users with a turn each keep the file small (1536 dimensions)", () =>
    Effect.gen(function*() {
      const where = yield* sqliteFile()
      const { sql, store } = yield* openStore(where)
      const v = new Float32Array(1536).fill(1 / Math.sqrt(1536))
      for (let u = 0; u < 20; u++) yield* Effect.orDie(store.insert(item(`user-${u}`, "c", `r${u}`, "a turn"), v, 0))
      yield* Effect.orDie(SqlMemory.checkpoint(sql))
      const megabytes = statSync((where as { filename: string }).filename).size / 1e6
      assert.isBelow(megabytes, 20, `${megabytes.toFixed(1)} MB for 20 users with one turn each`)
    }), 120_000)
  describe.skipIf("missing" in found)("PostgreSQL", () => {
    storeOn("PostgreSQL", onDatabase(pgDatabase), /^(pgvector|exact scan \(pgvector not available\))$/)
  })
})
