/**
 * The claim of a tool call in storage (`RunLog.claim`, `callClaim.ts`): two
 * attempts of the same call never hold it at once — against the real run log
 * on a SQLite file (two connections, as two processes) and on PostgreSQL (a
 * throwaway cluster, when installed) — a dead holder's claim is taken over
 * once its lease expired, and a holder cut off from storage stops its call
 * before another can take it.
 */
import * as Migrator from "@effect/sql/Migrator"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
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
  Effect.map(
    Layer.build(RunLog.layer.pipe(Layer.provide(Database.layer(where)), Layer.orDie)),
    Context.get(RunLog.RunLog)
  )

/** A claim's answer as a plain value (chai's deep equality does not tell `Option`s apart): the first starter, or null. */
const firstOf = <E>(claim: Effect.Effect<Option.Option<string>, E>) => Effect.map(claim, Option.getOrNull)

const sqliteFile = (): Database.Location => ({
  _tag: "Sqlite",
  filename: join(mkdtempSync(join(tmpdir(), "claims-")), "runs.sqlite")
})

const found = findPostgres()
let pg: Postgres | undefined
afterAll(() => pg?.stop())
const pgDatabase = (name: string) =>
  Effect.promise(async (): Promise<Database.Location> => {
    pg ??= await startPostgres((found as { bin: string }).bin)
    return { _tag: "Postgres", url: Redacted.make(pg.createDatabase(name)) }
  })

const settings: CallClaim.ClaimSettings = { leaseMs: 600, renewMs: 100, maxWaitMs: 20_000 }

/** How the tests' calls store their outcome (a string, or a string failure). */
const outcome = Schema.Exit({ success: Schema.String, failure: Schema.String, defect: Schema.Defect })

/** A call of run `run_x` by execution `holder` (execute and cut given by the test). */
const callOf = (log: RunLog.RunLogService, holder: string, name: string, idempotent: boolean) =>
  ({ log, runId: "run_x", name, holder, settings, idempotent, outcome }) as const

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
      (_, exit) =>
        Effect.sync(() => {
          active--
          state.log.push(`${exit._tag === "Success" ? "end" : "stopped"} ${who}`)
        })
    )
  return { state, run }
}

const claimsOn = (label: string, location: (name: string) => Effect.Effect<Database.Location>) => {
  it.scopedLive(
    `${label}: the statement — free, held by a live holder, its own again, renewed, released, expired, released at boot`,
    () =>
      Effect.gen(function*() {
        const where = yield* location("statement")
        const a = yield* openLog(where)
        const b = yield* openLog(where)
        assert.strictEqual(yield* firstOf(a.claim("run_1", "tool/1/c", "A", 60_000)), "A")
        assert.strictEqual(yield* firstOf(b.claim("run_1", "tool/1/c", "B", 60_000)), null, "held by a live A")
        assert.strictEqual(
          yield* firstOf(a.claim("run_1", "tool/1/c", "A", 60_000)),
          "A",
          "A again (a retry of its own)"
        )
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
        // the outcome: stored once, by its holder only; then the call is never claimed again
        assert.isFalse(yield* a.settleCall("run_1", "tool/1/c", "A", "by A"), "A does not hold it")
        assert.isTrue(Option.isNone(yield* a.callOutcome("run_1", "tool/1/c")))
        assert.isTrue(yield* b.settleCall("run_1", "tool/1/c", "B", "by B"))
        assert.isFalse(yield* b.settleCall("run_1", "tool/1/c", "B", "by B again"), "stored once")
        assert.strictEqual(Option.getOrNull(yield* a.callOutcome("run_1", "tool/1/c")), "by B")
        assert.strictEqual(
          yield* firstOf(b.claim("run_1", "tool/1/c", "B", 60_000)),
          null,
          "settled: never claimed again"
        )
        assert.isFalse(yield* b.renewClaim("run_1", "tool/1/c", "B", 60_000))
        yield* Effect.sleep("700 millis")
        assert.strictEqual(
          yield* firstOf(a.claim("run_1", "tool/1/c", "A", 60_000)),
          null,
          "not even once its lease would have expired"
        )
      }),
    60_000
  )

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

  it.live(
    `${label}: two attempts of a call never execute at once — the second adopts the first's outcome; a dead holder's call is taken over after its lease`,
    () =>
      Effect.scoped(Effect.gen(function*() {
        const where = yield* location("exclusive")
        const a = yield* openLog(where)
        const b = yield* openLog(where)
        // a process that died releases nothing: its interruption is a crash here
        const crashed: RunLog.RunLogService = { ...a, releaseClaim: () => Effect.void }
        const t = tracker()
        // a lease an idempotent holder keeps on a loaded machine (a holder starved for longer than the lease less one
        // renewal stops its call by design: the cut-off test below)
        const held = { leaseMs: 3000, renewMs: 500, maxWaitMs: 20_000 }
        const call = (log: RunLog.RunLogService, holder: string, ms: number, name = "tool/1/c") =>
          CallClaim.attempt({
            ...callOf(log, holder, name, true),
            settings: held,
            execute: () => Effect.as(t.run(holder, ms), `ran by ${holder}`)
          })
        // A runs for 4 s (longer than the lease: it renews it); B tries meanwhile, waits, and gets A's outcome
        const first = yield* Effect.fork(call(a, "A", 4000))
        yield* Effect.sleep("200 millis")
        const second = yield* Effect.fork(call(b, "B", 100))
        assert.strictEqual(yield* Fiber.join(first), "ran by A")
        assert.strictEqual(yield* Fiber.join(second), "ran by A", "B adopted A's outcome")
        assert.deepStrictEqual(t.state.log, ["start A", "end A"])
        // A dies during another call (its fiber stops, nothing is released): B waits out the lease, then runs it again
        const dying = yield* Effect.fork(call(crashed, "A", 10_000, "tool/1/d"))
        yield* Effect.sleep("300 millis")
        yield* Fiber.interrupt(dying)
        const started = Date.now()
        assert.strictEqual(yield* call(b, "B", 50, "tool/1/d"), "ran by B")
        const waited = Date.now() - started
        assert.isAtLeast(waited, 2500, `B waited for A's lease (${waited} ms)`)
        assert.isBelow(waited, held.leaseMs + 4 * held.renewMs + 2000, `not much longer (${waited} ms)`)
        assert.strictEqual(t.state.most, 1)
      })),
    60_000
  )

  it.live(
    `${label}: a call that is not idempotent runs once — a second attempt adopts its outcome; once its holder died, it is answered cut`,
    () =>
      Effect.scoped(Effect.gen(function*() {
        const where = yield* location("once")
        const a = yield* openLog(where)
        const b = yield* openLog(where)
        const crashed: RunLog.RunLogService = { ...a, releaseClaim: () => Effect.void }
        const t = tracker()
        const call = (log: RunLog.RunLogService, holder: string, ms: number, name: string) =>
          CallClaim.attempt({
            ...callOf(log, holder, name, false),
            execute: () => Effect.as(t.run(holder, ms), `ran by ${holder}`),
            cut: () => Effect.succeed(`cut for ${holder}`)
          })
        const first = yield* Effect.fork(call(a, "A", 1000, "tool/1/p"))
        yield* Effect.sleep("200 millis")
        assert.strictEqual(yield* call(b, "B", 100, "tool/1/p"), "ran by A", "B waited for A's outcome")
        assert.strictEqual(yield* Fiber.join(first), "ran by A")
        // stored: a later attempt (a replay after a restart) adopts it without waiting
        assert.strictEqual(yield* call(b, "C", 100, "tool/1/p"), "ran by A")
        // A dies mid-call: B answers in its place once A's lease expired, and never runs it
        const dying = yield* Effect.fork(call(crashed, "A", 10_000, "tool/1/q"))
        yield* Effect.sleep("300 millis")
        yield* Fiber.interrupt(dying)
        assert.strictEqual(yield* call(b, "B", 100, "tool/1/q"), "cut for B")
        assert.strictEqual(yield* call(a, "A2", 100, "tool/1/q"), "cut for A2", "the cut is the call's stored outcome")
        assert.deepStrictEqual(t.state.log, ["start A", "end A", "start A", "stopped A"])
        // a failure and a defect are outcomes too: adopted as they were
        const failing = CallClaim.attempt({
          ...callOf(a, "A", "tool/1/f", false),
          execute: () => Effect.fail("no funds")
        })
        assert.deepStrictEqual(yield* Effect.flip(failing), "no funds")
        const again = CallClaim.attempt({
          ...callOf(b, "B", "tool/1/f", false),
          execute: () => Effect.succeed("ran again")
        })
        assert.deepStrictEqual(yield* Effect.flip(again), "no funds")
      })),
    60_000
  )

  it.live(
    `${label}: a holder cut off from storage stops its call before another takes it over`,
    () =>
      Effect.scoped(Effect.gen(function*() {
        const where = yield* location("cutoff")
        const a = yield* openLog(where)
        const b = yield* openLog(where)
        // A's connection to storage is lost once it claimed the call: everything after fails
        let reachable = true
        const lost = Effect.fail(new RunLog.RunLogError({ message: "connection lost" }))
        const cut: RunLog.RunLogService = {
          ...a,
          claim: (...args) =>
            Effect.suspend(
              () => (reachable ? Effect.ensuring(a.claim(...args), Effect.sync(() => (reachable = false))) : lost)
            ),
          renewClaim: () => lost,
          settleCall: () => lost,
          callOutcome: () => lost,
          releaseClaim: () => lost
        }
        const t = tracker()
        const stopped = yield* Effect.fork(
          CallClaim.attempt({
            ...callOf(cut, "A", "tool/1/c", true),
            execute: () => Effect.as(t.run("A", 10_000), "A")
          })
        )
        yield* Effect.sleep("100 millis")
        assert.strictEqual(
          yield* CallClaim.attempt({
            ...callOf(b, "B", "tool/1/c", true),
            execute: () => Effect.as(t.run("B", 50), "B")
          }),
          "B"
        )
        yield* Fiber.interrupt(stopped)
        assert.deepStrictEqual(t.state.log.slice(0, 4), ["start A", "stopped A", "start B", "end B"])
        assert.strictEqual(t.state.most, 1)
      })),
    60_000
  )
}

describe("tool-call claims (RunLog.claim, callClaim.attempt)", () => {
  claimsOn("SQLite", () => Effect.sync(sqliteFile))

  it.scoped(
    "SQLite: a database made by the previous version gets the claim columns; its start records stay valid",
    () =>
      Effect.gen(function*() {
        const where = sqliteFile()
        // the run log's migrations as the previous version had them (the activity starts table last)
        yield* Migrator.make({})({
          loader: Migrator.fromRecord({
            // (of the run log's first tables, only those later migrations alter)
            "1_create_run_log": Effect.flatMap(
              SqlClient.SqlClient,
              (sql) =>
                Effect.zipRight(
                  sql`CREATE TABLE IF NOT EXISTS react_injections (id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, run_id TEXT NOT NULL, content TEXT NOT NULL, state TEXT NOT NULL, created_at BIGINT NOT NULL)`,
                  sql`CREATE TABLE IF NOT EXISTS react_runs (run_id TEXT PRIMARY KEY, conversation_id TEXT NOT NULL, query TEXT NOT NULL, status TEXT NOT NULL, started_at BIGINT NOT NULL, last_seq INTEGER NOT NULL DEFAULT 0, cancel_requested INTEGER NOT NULL DEFAULT 0, leases INTEGER NOT NULL DEFAULT 0, detached_at BIGINT, waiting INTEGER NOT NULL DEFAULT 0)`
                )
            ),
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
      }),
    30_000
  )

  describe.skipIf("missing" in found)("PostgreSQL", () => {
    claimsOn("PostgreSQL", pgDatabase)
  })
})
