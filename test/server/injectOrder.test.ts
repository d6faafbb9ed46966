/**
 * Interrupts are a queue (SPEC §8): messages queued within one millisecond
 * are drained in the order they were queued — the run log used to break
 * `created_at` ties by the message's random id. On a SQLite file and on a real
 * PostgreSQL (when its binaries are installed), where concurrent injects into
 * one conversation are serialised by a row lock.
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Database from "../../src/server/Database.js"
import * as RunLog from "../../src/server/RunLog.js"
import { findPostgres, type Postgres, startPostgres } from "../utils/postgres.js"

const openLog = (where: Database.Location) =>
  Effect.map(
    Layer.build(RunLog.layer.pipe(Layer.provide(Database.layer(where)), Layer.orDie)),
    Context.get(RunLog.RunLog)
  )

const found = findPostgres()
let pg: Postgres | undefined
afterAll(() => pg?.stop())

const cases: ReadonlyArray<readonly [string, boolean, () => Effect.Effect<Database.Location>]> = [
  [
    "SQLite",
    false,
    () =>
      Effect.sync(() => ({
        _tag: "Sqlite",
        filename: join(mkdtempSync(join(tmpdir(), "inject-order-")), "runs.sqlite")
      }))
  ],
  ["PostgreSQL", "missing" in found, () =>
    Effect.promise(async (): Promise<Database.Location> => {
      pg ??= await startPostgres((found as { bin: string }).bin)
      return { _tag: "Postgres", url: Redacted.make(pg.createDatabase(`inject_${Date.now()}`)) }
    })]
]

describe("interrupt queue order (RunLog.inject / drain)", () => {
  for (const [name, skip, location] of cases) {
    it.scoped.skipIf(skip)(
      `${name}: messages queued within one millisecond are drained in the order they were queued`,
      () =>
        Effect.gen(function*() {
          const log = yield* openLog(yield* location())
          yield* Effect.orDie(log.start({ runId: "r1", conversationId: "c1", query: "q" }))
          // well under a millisecond each on SQLite: most of them share one with the message before
          const texts = Array.from({ length: 40 }, (_, i) => `message ${i}`)
          const queued = yield* Effect.forEach(
            texts,
            (text) => Effect.map(Effect.orDie(log.inject("c1", text)), Option.getOrThrow)
          )
          assert.deepStrictEqual((yield* Effect.orDie(log.drain("c1", "k1"))).map((m) => m.content), texts)
          // the keyed re-read after a crash: the same messages, in the same order
          assert.deepStrictEqual((yield* Effect.orDie(log.drain("c1", "k1"))).map((m) => m.id), queued.map((m) => m.id))
        }),
      60_000
    )

    it.scoped.skipIf(skip)(
      `${name}: two clients queueing at once — each one's messages keep their order, none is lost`,
      () =>
        Effect.gen(function*() {
          const log = yield* openLog(yield* location())
          yield* Effect.orDie(log.start({ runId: "r1", conversationId: "c1", query: "q" }))
          const client = (who: string) =>
            Effect.forEach(
              Array.from({ length: 20 }, (_, i) => `${who} ${i}`),
              (text) => Effect.orDie(log.inject("c1", text))
            )
          yield* Effect.all([client("a"), client("b")], { concurrency: 2 })
          const drained = (yield* Effect.orDie(log.drain("c1"))).map((m) => m.content)
          assert.strictEqual(drained.length, 40)
          for (const who of ["a", "b"]) {
            assert.deepStrictEqual(
              drained.filter((t) => t.startsWith(`${who} `)),
              Array.from({ length: 20 }, (_, i) => `${who} ${i}`)
            )
          }
        }),
      60_000
    )
  }
})
