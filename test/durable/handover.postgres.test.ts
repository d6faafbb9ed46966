/**
 * A tool call in flight while its run's shard changes hands, on PostgreSQL with
 * real server processes (SPEC §14 "exactly once", issue 46 item 1). Nobody is
 * killed: the executing instance stays alive, and the call it is running must
 * neither run a second time nor be answered "interrupted" while it still runs —
 * the instance that gets the run next waits for the call's outcome and adopts it.
 *
 * Both cases are forced, not waited for:
 * - **the shard lock lost and got back** (what CPU starvation does when a lock
 *   refresh times out): the test terminates A's shard-lock connection and takes
 *   the run's shard lock (a PostgreSQL advisory lock) itself, until A has
 *   re-acquired every other shard, then lets go; A gets the shard back and
 *   replays the run while the slow tool still runs;
 * - **a second instance joining mid-tool**: B starts while the slow tool runs on
 *   A, on a runner port for which the cluster's hash ring gives B the run's shard
 *   (computed here with the cluster's own `HashRing` and `RunnerAddress`).
 *
 * The slow tool is the recorder's `rec__record` (not idempotent); the recorder
 * writes `start slow` / `end slow` lines with the instance that ran them.
 */
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as HashRing from "effect/HashRing"
import { execFileSync, spawn } from "node:child_process"
import { join } from "node:path"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import {
  assertOneOutcomePerCall,
  assertStoredOnce,
  isEvent,
  MATRIX_ANSWER,
  MATRIX_WORDS,
  matrixModel,
  pgCluster,
  resume,
  waitUntil
} from "../utils/killMatrix.js"
import { findPostgres, type Postgres, startPostgres } from "../utils/postgres.js"
import { freePort, type ServerProcess, startServerProcess } from "../utils/serverProcess.js"
import { openSse, type SseEvent } from "../utils/sse.js"

const found = findPostgres()
if ("missing" in found) {
  if (process.env.REQUIRE_POSTGRES === "1") throw new Error(found.missing)
  console.warn(found.missing)
}
const bin = () => (found as { bin: string }).bin

/** One value of a query (psql, unaligned, tuples only). */
const query = (url: string, sql: string): string =>
  execFileSync(join(bin(), "psql"), [url, "-X", "-qAt", "-v", "ON_ERROR_STOP=1", "-c", sql], { encoding: "utf8" })
    .trim()

/** The shard of the run's workflow entity (the only run of the database). */
const runShard = (url: string): string =>
  query(
    url,
    "SELECT shard_id FROM cluster_messages WHERE tag = 'run' AND entity_type LIKE 'Workflow/%AgentRun' LIMIT 1"
  )

/** The PostgreSQL advisory lock the cluster holds for a shard of group `default` (SqlRunnerStorage: 1000000 + n). */
const lockNumber = (shard: string) => 1_000_000 + Number(shard.split(":")[1])

/**
 * Takes the shard's lock away from its holder: terminates the holder's lock connection (its
 * advisory locks go with it) and takes the lock in a session of its own, before the holder
 * can reconnect, until `release()`.
 */
const stealShardLock = async (url: string, shard: string) => {
  const lock = lockNumber(shard)
  const psql = spawn(join(bin(), "psql"), [url, "-X", "-qAt", "-v", "ON_ERROR_STOP=1"], {
    stdio: ["pipe", "pipe", "pipe"]
  })
  let output = ""
  psql.stdout.on("data", (d) => (output += d.toString()))
  psql.stderr.on("data", (d) => (output += d.toString()))
  const exited = new Promise<void>((resolve) => psql.once("exit", () => resolve()))
  psql.stdin.write(
    `SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND granted AND objid = ${lock};\n` +
      `SELECT pg_advisory_lock(${lock});\nSELECT 'locked ' || pg_backend_pid();\n`
  )
  await waitUntil(() => /locked \d+/.test(output) || psql.exitCode !== null, 20_000, `the lock of ${shard}`)
  const pid = Number(/locked (\d+)/.exec(output)?.[1])
  assert.isFalse(Number.isNaN(pid), `psql: ${output}`)
  return {
    pid,
    release: async () => {
      psql.stdin.end(`SELECT pg_advisory_unlock(${lock});\n`)
      await exited
    }
  }
}

/** The number of shard locks (advisory locks) held by sessions other than `except`. */
const heldLocks = (url: string, except: number) =>
  Number(query(url, `SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted AND pid <> ${except}`))

/** A runner port of 127.0.0.1 for which the hash ring of {`a`, it} gives `shard` to it. */
const portTaking = async (shard: string, a: number): Promise<number> => {
  const index = Number(shard.split(":")[1]) - 1
  for (let i = 0; i < 200; i++) {
    const port = await freePort()
    if (port === a) continue
    const ring = HashRing.make<RunnerAddress.RunnerAddress>()
    HashRing.add(ring, RunnerAddress.make("127.0.0.1", a), { weight: 1 })
    const b = RunnerAddress.make("127.0.0.1", port)
    HashRing.add(ring, b, { weight: 1 })
    const owner = HashRing.getShards(ring, 300)?.[index]
    if (owner !== undefined && owner.port === port) return port
  }
  throw new Error(`no free port takes ${shard}`)
}

/** Follows the run's POST stream in the background (events kept as they come). */
const startRun = (url: string, conversation: string) => {
  const events: Array<SseEvent> = []
  const stream = openSse(`${url}/api/react`, {
    body: { query: "record something", conversation_id: conversation },
    onEvent: (e) => void events.push(e),
    timeoutMs: 120_000
  }).catch(() => undefined)
  return { events, stream }
}

/** What both cases check once the run is done: the slow call ran once, to its end, and the model was told its outcome. */
const assertAdopted = async (o: {
  readonly url: string
  readonly conversation: string
  readonly events: ReadonlyArray<SseEvent>
  readonly records: ReadonlyArray<string>
  readonly requests: number
}) => {
  const lines = o.records.map((l) => l.split(" ").slice(0, 2).join(" "))
  assert.deepStrictEqual(
    lines,
    ["start slow", "end slow", "start fast", "end fast"],
    `each tool ran once: ${o.records.join(" | ")}`
  )
  assertOneOutcomePerCall(o.events)
  const slowDone = o.events.find((e) =>
    isEvent(e, "step", { type: "iteration", status: "done", tool_name: "rec__record" })
  )
  assert.isDefined(slowDone, "the slow call's done")
  assert.strictEqual(
    slowDone!.data.error,
    null,
    `the slow call's real outcome, not the restart error: ${JSON.stringify(slowDone!.data)}`
  )
  assert.include(String(slowDone!.data.observation), "recorded slow")
  assert.strictEqual(
    o.events.filter((e) => isEvent(e, "phase", { phase: "resumed" })).length,
    1,
    "the run moved once (one resumed)"
  )
  assert.strictEqual(o.events[o.events.length - 1]?.event, "done")
  assert.strictEqual(o.events[o.events.length - 1]?.data.answer, MATRIX_ANSWER)
  // three loop calls and the synthesis: nothing asked again
  assert.strictEqual(o.requests, 4, "model requests")
  await assertStoredOnce(o.url, o.conversation)
}

describe.skipIf("missing" in found)(
  "a tool call in flight while its run's shard changes hands (PostgreSQL, nobody killed)",
  () => {
    let pg: Promise<Postgres> | undefined
    afterAll(async () => (await pg)?.stop())

    it.live(
      "the executing instance loses its shard lock mid-tool and gets it back: the call is not run again, its outcome is adopted",
      () =>
        Effect.promise(async () => {
          pg ??= startPostgres(bin())
          // long enough for A to notice, reconnect and re-acquire on a loaded machine (the test checks it still runs)
          const fake = await FakeOpenAi.start(
            matrixModel({ slow: undefined, killed: () => false, words: MATRIX_WORDS, slowToolMs: 20_000 })
          )
          const c = pgCluster(await pg, "handover_lock", fake.url)
          const servers: Array<ServerProcess> = []
          let stolen: Awaited<ReturnType<typeof stealShardLock>> | undefined
          try {
            const a = await startServerProcess(await c.env("A"), 120_000)
            servers.push(a)
            const run = startRun(a.url, "lock-lost")
            await waitUntil(
              () => c.records().some((l) => l.startsWith("start slow")),
              120_000,
              "the slow tool to start"
            )
            const shard = runShard(c.url)
            const locks = heldLocks(c.url, -1)
            stolen = await stealShardLock(c.url, shard)
            // A notices on its next refresh, reconnects and re-acquires every shard but this one
            await waitUntil(
              () => heldLocks(c.url, stolen!.pid) >= locks - 1,
              30_000,
              "A to re-acquire the other shards"
            )
            await new Promise((r) => setTimeout(r, 1500))
            assert.isFalse(
              c.records().some((l) => l.startsWith("end slow")),
              `the slow tool still runs when the shard comes back: ${c.records().join(" | ")}`
            )
            await stolen.release()
            await run.stream
            const events = await resume(a.url, "lock-lost", undefined, 120_000)
            if (process.env.HANDOVER_DEBUG) {
              console.log(events.map((e) => `${e.id}:${e.event}:${JSON.stringify(e.data).slice(0, 150)}`).join("\n"))
            }
            await assertAdopted({
              url: a.url,
              conversation: "lock-lost",
              events,
              records: c.records(),
              requests: fake.requests.length
            })
          } catch (error) {
            if (process.env.HANDOVER_DEBUG) { for (const s of servers) console.log(s.output()) }
            throw error
          } finally {
            await stolen?.release().catch(() => undefined)
            await Promise.all(servers.map((s) => s.kill()))
            await fake.close()
          }
        }),
      { timeout: 300_000 }
    )

    it.live(
      "a second instance joins mid-tool and takes the run's shard: it waits for the call and adopts its outcome",
      () =>
        Effect.promise(async () => {
          pg ??= startPostgres(bin())
          // long enough for B to start on a loaded machine (20-60 s at load 25; the test checks it joined in time)
          const fake = await FakeOpenAi.start(
            matrixModel({ slow: undefined, killed: () => false, words: MATRIX_WORDS, slowToolMs: 60_000 })
          )
          const c = pgCluster(await pg, "handover_join", fake.url)
          const servers: Array<ServerProcess> = []
          try {
            const envA = await c.env("A")
            const a = await startServerProcess(envA, 120_000)
            servers.push(a)
            const run = startRun(a.url, "joined")
            await waitUntil(
              () => c.records().some((l) => l.startsWith("start slow")),
              120_000,
              "the slow tool to start"
            )
            const shard = runShard(c.url)
            const port = await portTaking(shard, Number(envA.CLUSTER_PORT))
            const b = await startServerProcess({ ...(await c.env("B")), CLUSTER_PORT: String(port) }, 120_000)
            servers.push(b)
            assert.isFalse(
              c.records().some((l) => l.startsWith("end slow")),
              `B joined while the slow tool ran: ${c.records().join(" | ")}`
            )
            await run.stream
            const events = await resume(b.url, "joined", undefined, 120_000)
            await assertAdopted({
              url: b.url,
              conversation: "joined",
              events,
              records: c.records(),
              requests: fake.requests.length
            })
            // the rest of the run executed on B (the shard is B's)
            assert.deepStrictEqual(
              c.records().map((l) => l.split(" ")[2]),
              ["A", "A", "B", "B"],
              c.records().join(" | ")
            )
          } finally {
            await Promise.all(servers.map((s) => s.kill()))
            await fake.close()
          }
        }),
      { timeout: 300_000 }
    )
  }
)
