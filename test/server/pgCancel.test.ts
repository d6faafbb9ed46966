/**
 * An interrupted statement on PostgreSQL must not fail another fiber's statement.
 *
 * `@effect/sql-pg` cancels an interrupted statement with `pg_cancel_backend(<pid>)` sent
 * through the pool; when the pool is busy that cancel waits for a connection, the
 * interrupted statement finishes meanwhile, and its connection serves another statement —
 * the one the cancel then hits ("canceling statement due to user request"). Seen under
 * load as runs failing with a `PersistenceError` and a start answered 500
 * (src/server/internal/database.ts). Here the race is made certain: every connection of
 * the pool busy, a statement waiting for one, then the interrupt.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { type AddressInfo, createServer, type Server, type Socket } from "node:net"
import * as Database from "../../src/server/Database.js"
import { findPostgres, type Postgres, startPostgres } from "../utils/postgres.js"

const found = findPostgres()
if ("missing" in found) {
  if (process.env.REQUIRE_POSTGRES === "1") throw new Error(found.missing)
  console.warn(found.missing)
}

/** `pg`'s default pool size (`Database.layer` does not change it). */
const POOL = 10

describe.skipIf("missing" in found)("the PostgreSQL client of Database.layer (real server)", () => {
  let pg: Postgres | undefined
  const database = (name: string) =>
    Effect.promise(async () => {
      pg ??= await startPostgres((found as { bin: string }).bin)
      return pg.createDatabase(name)
    })
  afterAll(() => pg?.stop())

  it.live("does not cancel the statement of another fiber that gets its connection", () =>
    Effect.gen(function*() {
      const url = yield* database("cancel_race")
      const context = yield* Layer.build(Database.layer({ _tag: "Postgres", url: Redacted.make(url) }))
      const sql = Context.get(context, SqlClient.SqlClient)
      // every connection opened beforehand, so that the statements below start at once
      yield* Effect.all(Array.from({ length: POOL }, () => sql`SELECT pg_sleep(0.05)`), { concurrency: "unbounded" })
      // the statement to interrupt, then every other connection busy for 2 s
      const interrupted = yield* Effect.fork(sql`SELECT pg_sleep(1)`)
      const holders = yield* Effect.fork(
        Effect.all(Array.from({ length: POOL - 1 }, () => sql`SELECT pg_sleep(2)`), { concurrency: "unbounded" })
      )
      yield* Effect.sleep("400 millis")
      // a statement waiting for a connection (first in the pool's line) ...
      const other = yield* Effect.fork(sql<{ ok: number }>`SELECT 1 AS ok FROM pg_sleep(1.5)`)
      yield* Effect.sleep("100 millis")
      // ... then the interrupt: a cancel would wait for a connection behind it, and reach the
      // backend when the other statement runs there
      yield* Fiber.interrupt(interrupted)
      const exit = yield* Fiber.await(other)
      yield* Fiber.join(holders)
      assert.isTrue(
        Exit.isSuccess(exit),
        `the other fiber's statement failed: ${Exit.isFailure(exit) ? String(exit.cause) : ""}`
      )
      assert.deepStrictEqual(Exit.isSuccess(exit) ? exit.value.map((r) => Number(r.ok)) : [], [1])
      // the pool is whole afterwards: as many statements at once as it has connections
      const after = yield* Effect.all(Array.from({ length: POOL }, () => sql<{ n: number }>`SELECT 2 AS n`), {
        concurrency: "unbounded"
      })
      assert.strictEqual(after.length, POOL)
    }).pipe(Effect.scoped), 30_000)

  it.live("an interrupted statement inside a transaction is rolled back with it", () =>
    Effect.gen(function*() {
      const url = yield* database("cancel_tx")
      const context = yield* Layer.build(Database.layer({ _tag: "Postgres", url: Redacted.make(url) }))
      const sql = Context.get(context, SqlClient.SqlClient)
      yield* sql`CREATE TABLE t (n integer)`
      const tx = yield* Effect.fork(sql.withTransaction(Effect.zipRight(
        sql`INSERT INTO t VALUES (1)`,
        sql`SELECT pg_sleep(0.8)`
      )))
      yield* Effect.sleep("300 millis")
      yield* Fiber.interrupt(tx)
      // the insert is not kept: the transaction's ROLLBACK follows the statement on its connection
      const rows = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM t`
      assert.strictEqual(rows[0]?.n, 0)
    }).pipe(Effect.scoped), 30_000)

  it.live("a server that is not there: the layer fails naming it", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(Layer.build(Database.layer({
        _tag: "Postgres",
        url: Redacted.make("postgres://postgres@127.0.0.1:1/nothing")
      })))
      assert.isTrue(Exit.isFailure(exit))
      assert.match(
        String(Exit.isFailure(exit) ? exit.cause : ""),
        /cannot connect to postgres:\/\/127\.0\.0\.1:1\/nothing: PgClient: Failed to connect \(connect ECONNREFUSED 127\.0\.0\.1:1\)/
      )
    }).pipe(Effect.scoped))

  it.live(
    "a server that accepts the connection and never answers: the layer fails within 5 s",
    () =>
      Effect.gen(function*() {
        const sockets: Array<Socket> = []
        const silent = yield* Effect.acquireRelease(
          Effect.promise(() =>
            new Promise<Server>((resolve) => {
              // every connection kept open and silent, destroyed when the test ends
              const server = createServer((socket) => void sockets.push(socket))
              server.listen(0, "127.0.0.1", () => resolve(server))
            })
          ),
          (server) =>
            Effect.promise(() =>
              new Promise((resolve) => {
                server.close(resolve)
                for (const socket of sockets) socket.destroy()
              })
            )
        )
        const port = (silent.address() as AddressInfo).port
        const started = Date.now()
        const exit = yield* Effect.exit(
          Layer.build(
            Database.layer({ _tag: "Postgres", url: Redacted.make(`postgres://postgres@127.0.0.1:${port}/x`) })
          )
        )
        assert.isTrue(Exit.isFailure(exit))
        assert.match(String(Exit.isFailure(exit) ? exit.cause : ""), /Failed to connect/)
        assert.match(Exit.isFailure(exit) ? Cause.pretty(exit.cause) : "", /Connection timed out/)
        assert.isAtMost(Date.now() - started, 10_000)
      }).pipe(Effect.scoped),
    30_000
  )

  it.live("a connection the server ends while idle is replaced; the process goes on", () =>
    Effect.gen(function*() {
      const url = yield* database("cancel_idle")
      const context = yield* Layer.build(Database.layer({ _tag: "Postgres", url: Redacted.make(url) }))
      const sql = Context.get(context, SqlClient.SqlClient)
      // a few idle connections in the pool
      yield* Effect.all(Array.from({ length: 3 }, () => sql`SELECT pg_sleep(0.05)`), { concurrency: "unbounded" })
      // the server ends the others (as a restart or an administrator would): the pool gets an error event for each
      const ended = yield* sql<{ n: number }>`SELECT count(pg_terminate_backend(pid))::int AS n FROM pg_stat_activity
        WHERE application_name = 'effect-react-engine' AND pid <> pg_backend_pid()`
      assert.isAtLeast(Number(ended[0]?.n ?? 0), 1)
      yield* Effect.sleep("300 millis")
      const rows = yield* Effect.all(Array.from({ length: 3 }, () => sql<{ n: number }>`SELECT 3 AS n`), {
        concurrency: "unbounded"
      })
      assert.deepStrictEqual(rows.map((r) => Number(r[0]?.n)), [3, 3, 3])
    }).pipe(Effect.scoped), 30_000)
})
