/**
 * The claim of a tool call in storage (`RunLog.claim`, `callClaim.ts`): two
 * attempts of the same call never hold it at once — against the real run log
 * on a SQLite file (two connections, as two processes) and on PostgreSQL (a
 * throwaway cluster, when installed) — a dead holder's claim is taken over
 * once its lease expired, and a holder cut off from storage stops its call
 * before another can take it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll } from "vitest"
import * as Database from "../../src/server/Database.js"
import * as CallClaim from "../../src/server/internal/callClaim.js"
import * as RunLog from "../../src/server/RunLog.js"
import { findPostgres, type Postgres, startPostgres } from "../utils/postgres.js"

/** A run log on its own connection to `where` (as another process would have). */
const openLog = (where: Database.Location): Effect.Effect<RunLog.RunLogService, never, Scope.Scope> =>
  Effect.map(Layer.build(RunLog.layer.pipe(Layer.provide(Database.layer(where)), Layer.orDie)), Context.get(RunLog.RunLog))

/** A claim's answer as a plain value (chai's deep equality does not tell `Option`s apart): the first starter, or null. */
const firstOf = <E>(claim: Effect.Effect<Option.Option<string>, E>) => Effect.map(claim, Option.getOrNull)

const sqliteFile = (): Database.Location => ({ _tag: "Sqlite", filename: join(mkdtempSync(join(tmpdir(), "claims-")), "runs.sqlite") })

const found = findPostgres()
let pg: Postgres | undefined
afterAll(() => pg?.stop())
const pgDatabase = (name: string) =>
  Effect.promise(async (): Promise<Database.Location> => {
    pg ??= await startPostgres((found as { bin: string }).bin)
    return { _tag: "Postgres", url: Redacted.make(pg.createDatabase(name)) }
  })

const settings: CallClaim.ClaimSettings = { leaseMs: 600, renewMs: 100, maxWaitMs: 20_000 }

/** Counts the attempts executing at once (the most seen), and what ran in which order. */
const tracker = () => {
  let active = 0
  const state = { most: 0, log: [] as Array<string> }
  const run = (who: string, ms: number) =>
    Effect.acquireUseRelease(
      Effect.sync(() => {
        state.most = Math.max(state.most, ++active)
        state.log.push(`start ${who}`)
      }),
      () => Effect.sleep(ms),
      (_, exit) => Effect.sync(() => {
        active--
        state.log.push(`${exit._tag === "Success" ? "end" : "stopped"} ${who}`)
      })
    )
  return { state, run }
}

const claimsOn = (label: string, location: (name: string) => Effect.Effect<Database.Location>) => {
  it.scopedLive(`${label}: the statement — free, held by a live holder, its own again, renewed, released, expired, released at boot`, () =>
    Effect.gen(function*() {
      const where = yield* location("statement")
      const a = yield* openLog(where)
      const b = yield* openLog(where)
      assert.strictEqual(yield* firstOf(a.claim("run_1", "tool/1/c", "A", 60_000)), "A")
      assert.strictEqual(yield* firstOf(b.claim("run_1", "tool/1/c", "B", 60_000)), null, "held by a live A")
      assert.strictEqual(yield* firstOf(a.claim("run_1", "tool/1/c", "A", 60_000)), "A", "A again (a retry of its own)")
      assert.isFalse(yield* b.renewClaim("run_1", "tool/1/c", "B", 60_000))
      assert.isTrue(yield* a.renewClaim("run_1", "tool/1/c", "A", 60_000))
      // another call of the run, and the same name in another run, are other claims
      assert.strictEqual(yield* firstOf(b.claim("run_1", "tool/1/d", "B", 60_000)), "B")
      assert.strictEqual(yield* firstOf(b.claim("run_2", "tool/1/c", "B", 60_000)), "B")
      // released (its outcome stored): the next attempt takes it, and learns A started it
      yield* a.releaseClaim("run_1", "tool/1/c", "A")
      assert.strictEqual(yield* firstOf(b.claim("run_1", "tool/1/c", "B", 300)), "A")
      assert.strictEqual(yield* firstOf(a.claim("run_1", "tool/1/c", "A", 60_000)), null, "held by B now")
      // B stops renewing (it died): after its lease, A takes the call over, and B has lost it
      yield* Effect.sleep("450 millis")
      assert.strictEqual(yield* firstOf(a.claim("run_1", "tool/1/c", "A", 60_000)), "A")
      assert.isFalse(yield* b.renewClaim("run_1", "tool/1/c", "B", 60_000))
      // the only instance booting: every claim was the dead process's
      yield* b.releaseAll(Date.now())
      assert.strictEqual(yield* firstOf(b.claim("run_1", "tool/1/c", "B", 60_000)), "A")
    }), 60_000)

  it.scoped(`${label}: attempts racing for one call — exactly one holds it`, () =>
    Effect.gen(function*() {
      const where = yield* location("race")
      const logs = [yield* openLog(where), yield* openLog(where)]
      const boots = Array.from({ length: 12 }, (_, i) => `boot${i}`)
      const won = yield* Effect.forEach(boots, (boot, i) => logs[i % 2].claim("run_r", "tool/1/c", boot, 60_000), {
        concurrency: "unbounded"
      })
      const holders = won.flatMap((first, i) => (Option.isSome(first) ? [boots[i]] : []))
      assert.strictEqual(holders.length, 1, `holders: ${holders.join(",")}`)
      // every one of them learns the same first starter: the winner
      assert.deepStrictEqual(won.flatMap((first) => Option.toArray(first)), holders)
    }), 60_000)

  it.live(`${label}: two attempts of a call never execute at once; a dead holder's call is taken over after its lease`, () =>
    Effect.scoped(Effect.gen(function*() {
      const where = yield* location("exclusive")
      const a = yield* openLog(where)
      const b = yield* openLog(where)
      const t = tracker()
      const call = (log: RunLog.RunLogService, boot: string, ms: number) =>
        CallClaim.exclusive({ log, runId: "run_x", name: "tool/1/c", boot, settings }, () => t.run(boot, ms))
      // A runs for 1.5 s (longer than the lease: it renews it); B tries meanwhile and waits
      const first = yield* Effect.fork(call(a, "A", 1500))
      yield* Effect.sleep("200 millis")
      const second = yield* Effect.fork(Effect.zipRight(call(b, "B", 100), b.releaseClaim("run_x", "tool/1/c", "B")))
      yield* Fiber.join(first)
      yield* a.releaseClaim("run_x", "tool/1/c", "A")
      yield* Fiber.join(second)
      assert.deepStrictEqual(t.state.log, ["start A", "end A", "start B", "end B"])
      assert.strictEqual(t.state.most, 1)
      // A dies during the call (its fiber stops, nothing is released): B waits out the lease, then runs
      const dying = yield* Effect.fork(call(a, "A", 10_000))
      yield* Effect.sleep("300 millis")
      yield* Fiber.interrupt(dying) // a crash: the claim stays with A's last renewal
      const started = Date.now()
      yield* call(b, "B", 50)
      const waited = Date.now() - started
      assert.isAtLeast(waited, 250, `B waited for A's lease (${waited} ms)`)
      assert.isBelow(waited, settings.leaseMs + 4 * settings.renewMs + 500, `not much longer (${waited} ms)`)
      assert.strictEqual(t.state.most, 1)
    })), 60_000)

  it.live(`${label}: a holder cut off from storage stops its call before another takes it over`, () =>
    Effect.scoped(Effect.gen(function*() {
      const where = yield* location("cutoff")
      const a = yield* openLog(where)
      const b = yield* openLog(where)
      // A's connection to storage is lost once it claimed the call: its renewals (and claims) fail
      let reachable = true
      const lost = Effect.fail(new RunLog.RunLogError({ message: "connection lost" }))
      const cut: RunLog.RunLogService = {
        ...a,
        claim: (...args) => Effect.suspend(() => (reachable ? Effect.ensuring(a.claim(...args), Effect.sync(() => (reachable = false))) : lost)),
        renewClaim: () => lost
      }
      const t = tracker()
      const stopped = yield* Effect.fork(
        CallClaim.exclusive({ log: cut, runId: "run_y", name: "tool/1/c", boot: "A", settings }, () => t.run("A", 10_000))
      )
      yield* Effect.sleep("100 millis")
      yield* CallClaim.exclusive({ log: b, runId: "run_y", name: "tool/1/c", boot: "B", settings }, () => t.run("B", 50))
      yield* Fiber.interrupt(stopped)
      assert.deepStrictEqual(t.state.log.slice(0, 4), ["start A", "stopped A", "start B", "end B"])
      assert.strictEqual(t.state.most, 1)
    })), 60_000)
}

describe("tool-call claims (RunLog.claim, callClaim.exclusive)", () => {
  claimsOn("SQLite", () => Effect.sync(sqliteFile))

  it.scoped("SQLite: a database made by the previous version gets the claim columns; its start records stay valid", () =>
    Effect.gen(function*() {
      const where = sqliteFile()
      // the run log's migrations as the previous version had them (the activity starts table last)
      yield* Migrator.make({})({
        loader: Migrator.fromRecord({
          // (of the run log's first tables, only the one a later migration alters)
          "1_create_run_log": Effect.flatMap(SqlClient.SqlClient, (sql) =>
            sql`CREATE TABLE IF NOT EXISTS react_injections (id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, run_id TEXT NOT NULL, content TEXT NOT NULL, state TEXT NOT NULL, created_at BIGINT NOT NULL)`),
          "2_create_approvals": Effect.void,
          "3_create_activity_starts": Effect.flatMap(SqlClient.SqlClient, (sql) =>
            Effect.zipRight(
              sql`CREATE TABLE IF NOT EXISTS react_activity_starts (run_id TEXT NOT NULL, name TEXT NOT NULL, boot TEXT NOT NULL, PRIMARY KEY (run_id, name))`,
              sql`INSERT INTO react_activity_starts (run_id, name, boot) VALUES ('run_old', 'tool/1/c', 'old-boot')`
            ))
        }),
        table: "react_engine_run_log_migrations"
      }).pipe(Effect.provide(Database.layer(where)), Effect.orDie)
      const log = yield* openLog(where)
      assert.strictEqual(yield* firstOf(log.claim("run_old", "tool/1/c", "new-boot", 60_000)), "old-boot")
      assert.strictEqual(yield* log.markStarted("run_old", "tool/1/c", "other"), "old-boot")
      assert.strictEqual(yield* firstOf(log.claim("run_new", "tool/1/c", "new-boot", 60_000)), "new-boot")
    }), 30_000)

  describe.skipIf("missing" in found)("PostgreSQL", () => {
    claimsOn("PostgreSQL", pgDatabase)
  })
})
