/**
 * `SQLITE_SYNCHRONOUS`: the embedded file's commits reach the disk as
 * configured, on a fresh file as on a reopened one (without the pragma the
 * driver gives a new file `FULL` and a reopened WAL file `NORMAL`).
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Database from "../../src/server/Database.js"

const fresh = () => join(mkdtempSync(join(tmpdir(), "db-sync-")), "runs.sqlite")

/** The connection's `synchronous` (0 OFF, 1 NORMAL, 2 FULL) and journal mode. */
const pragmas = (where: Database.Location) =>
  Effect.scoped(Effect.flatMap(Layer.build(Layer.orDie(Database.layer(where))), (context) =>
    Effect.provide(
      Effect.flatMap(SqlClient.SqlClient, (sql) =>
        Effect.all({
          synchronous: Effect.map(sql<{ synchronous: number }>`PRAGMA synchronous`, (r) => Number(r[0]?.synchronous)),
          journal: Effect.map(sql<{ journal_mode: string }>`PRAGMA journal_mode`, (r) => r[0]?.journal_mode)
        })),
      context
    ))).pipe(Effect.orDie)

const locationFrom = (env: Record<string, string>) =>
  Effect.withConfigProvider(Effect.either(Database.location), ConfigProvider.fromMap(new Map(Object.entries(env))))

describe("SQLITE_SYNCHRONOUS", () => {
  it.effect("NORMAL by default, on a new file and on the same file reopened", () =>
    Effect.gen(function*() {
      const location = yield* locationFrom({ DATABASE_PATH: fresh() })
      assert.isTrue(Either.isRight(location))
      if (Either.isLeft(location)) return
      assert.deepStrictEqual(yield* pragmas(location.right), { synchronous: 1, journal: "wal" })
      assert.deepStrictEqual(yield* pragmas(location.right), { synchronous: 1, journal: "wal" })
    }))

  it.effect("FULL when asked, also on a file that is already in WAL mode", () =>
    Effect.gen(function*() {
      const filename = fresh()
      yield* pragmas({ _tag: "Sqlite", filename })
      const location = yield* locationFrom({ DATABASE_PATH: filename, SQLITE_SYNCHRONOUS: "FULL" })
      assert.isTrue(Either.isRight(location))
      if (Either.isLeft(location)) return
      assert.deepStrictEqual(yield* pragmas(location.right), { synchronous: 2, journal: "wal" })
    }))

  it.effect("anything else stops start-up with a clear error", () =>
    Effect.gen(function*() {
      const location = yield* locationFrom({ SQLITE_SYNCHRONOUS: "OFF" })
      assert.isTrue(Either.isLeft(location))
      if (Either.isRight(location)) return
      assert.include(String(location.left), "SQLITE_SYNCHRONOUS")
    }))
})
