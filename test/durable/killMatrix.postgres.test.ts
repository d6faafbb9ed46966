/**
 * The kill-point matrix with two instances on one PostgreSQL database and a
 * takeover (SPEC §14, issue 26): the matrix's 3-iteration run (test/utils/
 * killMatrix.ts) is started through instance A; at the kill point the instance
 * that executes it (the recorder's lines name it: shards decide, A or B) is
 * killed with its whole process group; the survivor takes its shards over
 * (locks expire after 6 s) and finishes the run; the client resumes through the
 * survivor with its last event id. The same checks as on SQLite: model requests
 * after the kill start from the stored history, no completed tool runs again,
 * event ids continue, one `resumed`, `done`, the stored conversation paired and
 * without duplicates — and the rest of the run executes on the survivor.
 *
 * A subset of the points: those after the first tool started (the executing
 * instance is known from the recorder's first line). PostgreSQL is started by
 * the test (test/utils/postgres.ts); when it is not installed the tests are
 * skipped with that message, unless REQUIRE_POSTGRES=1 (then they fail).
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { spawn } from "node:child_process"
import { join } from "node:path"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import {
  assertKillPoint,
  describeIds,
  describeRecords,
  instanceOf,
  KILL_POINTS,
  type KillPoint,
  limit,
  MATRIX_WORDS,
  matrixModel,
  matrixReport,
  pgCluster,
  resume,
  runToKillPoint,
  shape,
  startTwo,
  waitUntil
} from "../utils/killMatrix.js"
import { findPostgres, type Postgres, startPostgres } from "../utils/postgres.js"
import type { ServerProcess } from "../utils/serverProcess.js"

const found = findPostgres()
if ("missing" in found) {
  // CI installs PostgreSQL and sets REQUIRE_POSTGRES: there a missing server is a failure, not a skip
  if (process.env.REQUIRE_POSTGRES === "1") throw new Error(found.missing)
  console.warn(found.missing)
}

const POINTS = [
  "during the slow tool",
  "between the slow tool's end and model call 2",
  "during the fast tool (idempotent: runs again)",
  "during the answer stream (synthesis)"
].map((name) => KILL_POINTS.find((p) => p.name === name)!)

const report = matrixReport(
  "Kill-point matrix, PostgreSQL (two instances, kill -9 of the executing one's group, takeover by the other)",
  "kill-matrix-postgres.md"
)
afterAll(() => report.print())

// each point runs two server processes
const slots = limit(Number(process.env.KILL_MATRIX_PG_CONCURRENCY ?? 2))

/**
 * Holds `LOCK TABLE <table> IN EXCLUSIVE MODE` in a transaction of its own (a `psql` session)
 * until `release()`: writes to the table wait, reads go on — a database slow to store one
 * kind of row, on purpose.
 */
const holdTableLock = async (url: string, table: string) => {
  const psql = spawn(join((found as { bin: string }).bin, "psql"), [url, "-X", "-q", "-v", "ON_ERROR_STOP=1"], {
    stdio: ["pipe", "pipe", "pipe"]
  })
  let output = ""
  psql.stdout.on("data", (d) => (output += d.toString()))
  psql.stderr.on("data", (d) => (output += d.toString()))
  const exited = new Promise<void>((resolve) => psql.once("exit", () => resolve()))
  psql.stdin.write(`BEGIN;\nLOCK TABLE ${table} IN EXCLUSIVE MODE;\nSELECT 'locked';\n`)
  await waitUntil(() => output.includes("locked") || psql.exitCode !== null, 10_000, `the lock on ${table}`)
  assert.include(output, "locked", `psql: ${output}`)
  let released = false
  return {
    release: async () => {
      if (released) return
      released = true
      psql.stdin.end("ROLLBACK;\n")
      await exited
    }
  }
}

describe.skipIf("missing" in found)("kill-point matrix on PostgreSQL (two instances, takeover)", () => {
  let pg: Promise<Postgres> | undefined
  afterAll(async () => (await pg)?.stop())

  /**
   * `holdOutcome`: while the slow tool runs, the test locks `cluster_replies` (where an
   * activity's result is written) and lets go 3 s after the tool ended, or at the kill: a
   * `done` of the tool that reaches the client while the lock is held went out before the
   * tool's outcome was stored.
   */
  const killAt = (point: KillPoint, conversation: string, database: string, holdOutcome = false) =>
    slots(async () => {
      pg ??= startPostgres((found as { bin: string }).bin)
      const started = Date.now()
      let killed = false
      const fake = await FakeOpenAi.start(matrixModel({
        slow: point.slow,
        killed: () => killed,
        words: MATRIX_WORDS,
        ...(holdOutcome ? { slowToolMs: 4000 } : {})
      }))
      const c = pgCluster(await pg, database, fake.url)
      const row = { requests: "", firstAfter: "", tools: "", ids: "" }
      let servers: ReadonlyArray<ServerProcess> = []
      let requestsBefore: number | undefined
      let lock: { readonly release: () => Promise<void> } | undefined
      let doneWhileHeld: boolean | undefined
      let executor = ""
      try {
        const [a, b] = await startTwo(c)
        servers = [a, b]
        const byName: Record<string, ServerProcess> = { A: a, B: b }
        let killing = false
        const gate = holdOutcome
          ? (async () => {
            await waitUntil(
              () => c.records().some((l) => l.startsWith("start slow")),
              60_000,
              "the slow tool to start"
            )
            lock = await holdTableLock(c.url, "cluster_replies")
            await waitUntil(
              () => killing || c.records().some((l) => l.startsWith("end slow")),
              60_000,
              "the slow tool to end"
            )
            const ended = Date.now()
            await waitUntil(() => killing || Date.now() - ended > 3000, 10_000, "the kill or 3 s")
            doneWhileHeld = killing
            await lock.release()
          })()
          : Promise.resolve()
        const before = await runToKillPoint({
          url: a.url,
          conversation,
          point,
          state: () => ({ requests: fake.requests.length, records: c.records() }),
          // its events reach the executing instance's own clients first: the client follows it there
          follow: () => byName[instanceOf(c.records()[0] ?? "")]?.url,
          kill: async () => {
            killing = true
            // the instance whose recorder ran the first tool executes the run
            executor = instanceOf(c.records()[0] ?? "")
            assert.include(["A", "B"], executor, `the executing instance is known: ${c.records().join(" | ")}`)
            await byName[executor].kill("SIGKILL")
          }
        })
        await gate
        if (holdOutcome) row.ids = `done ${doneWhileHeld ? "while" : "after"} the write was held; `
        requestsBefore = fake.requests.length
        const recordsBefore = c.records()
        killed = true
        const survivorName = executor === "A" ? "B" : "A"
        const survivor = byName[survivorName]
        // the survivor takes the run over once the dead instance's shard locks expire
        const after = await resume(survivor.url, conversation, before[before.length - 1].id, 120_000)
        const records = c.records()
        const expected = point.expectRequests
        row.requests = `${requestsBefore} / ${fake.requests.length - requestsBefore} (${
          [expected.before].flat().join(" or ")
        } / ${expected.after})`
        row.firstAfter = `\`${shape(fake.requests[requestsBefore]?.body)}\``
        row.tools = describeRecords(records)
        row.ids += describeIds(before, after)
        await assertKillPoint(point, {
          before,
          after,
          requestsBefore,
          requests: fake.requests,
          url: survivor.url,
          conversation,
          recordsBefore,
          records
        })
        // before the kill one instance ran the tools, after it the survivor
        assert.isTrue(
          recordsBefore.every((l) => instanceOf(l) === executor),
          `one instance before the kill: ${records.join(" | ")}`
        )
        assert.isTrue(
          records.slice(recordsBefore.length).every((l) => instanceOf(l) === survivorName),
          `the survivor after it: ${records.join(" | ")}`
        )
        report.add({
          point: `${point.name} — killed ${executor}`,
          ...row,
          result: "pass",
          seconds: (Date.now() - started) / 1000
        })
      } catch (error) {
        if (row.requests === "") {
          row.requests = `${requestsBefore ?? "?"} / ${fake.requests.length - (requestsBefore ?? 0)}`
        }
        if (row.tools === "") row.tools = describeRecords(c.records())
        const message = String(error instanceof Error ? error.message : error).split("\n")[0].replaceAll("|", "\\|")
          .slice(0, 200)
        report.add({
          point: `${point.name}${executor ? ` — killed ${executor}` : ""}`,
          ...row,
          result: `FAIL: ${message}`,
          seconds: (Date.now() - started) / 1000
        })
        // what the instances said (A then B): their warnings and errors, and their lines about the run — a lease
        // lost under load, a step that failed
        servers.forEach((server, i) => {
          const lines = server.output().split("\n").filter((line) =>
            /\bWARN\b|\bERROR\b|level=(WARN|ERROR)/.test(line) || line.includes(conversation)
          )
          console.log(`--- instance ${"AB"[i]}: ${lines.length} lines\n${lines.slice(-40).join("\n")}`)
        })
        throw error
      } finally {
        await lock?.release()
        await Promise.all(servers.map((p) => p.kill()))
        await fake.close()
      }
    })

  it.live.each(
    POINTS.map((point, i) => ({ ...point, conversation: `pg-kill-point-${i + 1}`, database: `kill_matrix_${i + 1}` }))
  )(
    "kill -9 of the executing instance $name: the other takes the run over from its stored steps",
    (point) => Effect.promise(() => killAt(point, point.conversation, point.database)),
    { timeout: 300_000, concurrent: true }
  )

  const between = KILL_POINTS.find((p) => p.name === "between the slow tool's end and model call 2")!
  it.live(
    "a tool's done does not go out before its outcome is stored: kill -9 at the done while the outcome's write waits (cluster_replies locked), the outcome is not lost",
    () =>
      Effect.promise(() =>
        killAt(
          { ...between, name: `${between.name} (its outcome's write held)` },
          "pg-held-outcome",
          "kill_matrix_held",
          true
        )
      ),
    { timeout: 300_000, concurrent: true }
  )
})
