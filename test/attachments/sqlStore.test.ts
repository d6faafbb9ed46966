/**
 * The server's attachment store on both databases (a SQLite file and a real
 * PostgreSQL cluster): each content is one row whatever the names it is given
 * and however many puts race for it, the bytes come back exactly (BLOB /
 * BYTEA), a refused file leaves no row, the migrations have their own table,
 * and a run's attachments are recorded once, in order.
 */
import * as PgClient from "@effect/sql-pg/PgClient"
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as SqlAttachments from "../../src/server/SqlAttachments.js"
import * as Files from "../utils/attachmentFiles.js"
import { findPostgres, type Postgres, startPostgres } from "../utils/postgres.js"

const found = findPostgres()
let pg: Postgres | undefined
afterAll(() => pg?.stop())

const PNG = Files.png(30, 20, [1, 2, 3])
const PDF = Files.pdf(3)

const databases: ReadonlyArray<readonly [string, boolean, () => Promise<Layer.Layer<SqlClient.SqlClient, unknown>>]> = [
  [
    "SQLite",
    false,
    async () => SqliteClient.layer({ filename: join(mkdtempSync(join(tmpdir(), "react-att-")), "a.sqlite") })
  ],
  ["PostgreSQL", "missing" in found, async () => {
    pg ??= await startPostgres((found as { bin: string }).bin)
    return PgClient.layer({ url: Redacted.make(pg.createDatabase("attachments")) })
  }]
]

const count = (table: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM ${sql(table)}`)
    .pipe(
      Effect.map((rows) => Number(rows[0].n))
    )

describe("SqlAttachments", () => {
  for (const [name, skip, client] of databases) {
    it.skipIf(skip)(`${name}: one row per content, the bytes back exactly, a run's files recorded once`, async () => {
      const layer = await client()
      await Effect.runPromise(
        Effect.gen(function*() {
          const { attachments: store, runs } = yield* SqlAttachments.make(1024 * 1024)
          // the same bytes under two names, and eight puts racing: one row
          const first = yield* store.put(PNG, { name: "first.png" })
          const second = yield* store.put(PNG, { name: "second.png" })
          yield* Effect.all(Array.from({ length: 8 }, (_, i) => store.put(PNG, { name: `race-${i}.png` })), {
            concurrency: "unbounded"
          })
          assert.strictEqual(second.sha256, first.sha256)
          assert.strictEqual(second.name, "second.png", "a put answers the name it was given")
          assert.deepInclude(first, { media_type: "image/png", size: PNG.length, width: 30, height: 20 })
          assert.strictEqual(yield* count("react_attachments"), 1)
          // unnamed: the name stored first
          assert.strictEqual((yield* store.put(PNG)).name, "first.png")
          const pdf = yield* store.put(PDF, { name: "report.pdf" })
          assert.strictEqual(pdf.pages, 3)
          // the bytes back, byte for byte
          const got = yield* store.get(pdf.sha256!)
          assert.deepStrictEqual(got.bytes, PDF)
          assert.deepStrictEqual((yield* store.get(first.sha256!)).bytes, PNG)
          // refused: nothing stored
          const refused = yield* Effect.flip(store.put(PNG, { mediaType: "image/jpeg", name: "liar.jpg" }))
          assert.strictEqual(refused.code, "unsupported_media_type")
          const tooLarge = yield* Effect.flip(
            store.put(new Uint8Array(1024 * 1024 + 1).fill(65), { mediaType: "text/plain" })
          )
          assert.strictEqual(tooLarge.code, "attachment_too_large")
          assert.strictEqual(yield* count("react_attachments"), 2)
          assert.strictEqual((yield* Effect.flip(store.get("f".repeat(64)))).code, "attachment_not_found")
          // the migrations in their own table
          assert.strictEqual(yield* count("react_engine_attachments_migrations"), 1)
          // a run's files: recorded again (a replayed step) changes nothing
          yield* runs.link("run-1", [first, pdf])
          yield* runs.link("run-1", [first, pdf])
          const of = yield* runs.ofRuns(["run-1", "run-2"])
          assert.deepStrictEqual(of.get("run-1")?.map((r) => r.name), ["first.png", "report.pdf"])
          assert.isFalse(of.has("run-2"))
          assert.strictEqual(yield* count("react_run_attachments"), 2)
        }).pipe(Effect.provide(layer), Effect.scoped)
      )
    }, 120_000)
  }
})
