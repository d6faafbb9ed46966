/**
 * The cost of durability per loop iteration: the real server (bench/serverProcess.ts,
 * durable runs) on a zero-latency scripted model, one run at a time over HTTP/SSE,
 * a short run (2 tool steps) and a long one (22 steps) interleaved; the marginal
 * wall-clock time of one more iteration = (median long − median short) ÷ 20. Each
 * iteration stores its LLM reply and its tool outcome as workflow activities and
 * its events in the run log, so the figure is what a stored step costs on that
 * database, beside the in-process loop's marginal cost (the loop section).
 *
 * Databases: the embedded SQLite file, and PostgreSQL when it is installed (a
 * fresh cluster in a temporary directory, test/utils/postgres.ts; the server is
 * then a socket runner of a one-runner cluster, as with `DATABASE_URL`).
 *
 * @since 0.1.0
 */
import { execFileSync } from "node:child_process"
import * as http from "node:http"
import * as os from "node:os"
import { fileURLToPath } from "node:url"
import { findPostgres, startPostgres } from "../test/utils/postgres.js"
import { freePort } from "../test/utils/serverProcess.js"
import { quantile } from "./harness.js"
import { startServerProcess } from "./serverLoad.js"

/** @since 0.1.0 */
export interface DurableFigures {
  readonly database: string
  readonly shortMs?: number
  readonly longMs?: number
  /** Marginal wall-clock ms per loop iteration. */
  readonly marginalMs?: number
  readonly runs?: number
  readonly error?: string
}

/** The workflow engine alone (bench/engineAlone.ts). @since 0.1.0 */
export interface EngineFigures {
  /** "SQLite" or "PostgreSQL" (absent in results from before PostgreSQL was measured: SQLite). */
  readonly database?: string
  readonly activityWallMs: number
  readonly activityCpuMs: number
  readonly parkedBytes: number
  /** Heap per workflow parked in its own body, outside any activity (absent in results from before it was measured). */
  readonly parkedInBodyBytes?: number
  readonly activities: number
  readonly parked: number
}

/** @since 0.1.0 */
export interface DurableResults {
  readonly databases: ReadonlyArray<DurableFigures>
  readonly engine: EngineFigures | string
  /** The engine alone on PostgreSQL (absent in results from before it was measured). */
  readonly enginePostgres?: EngineFigures | string
  /** The machine's 1-minute load average at the end of the section (absent in older results). */
  readonly load?: number
}

const SHORT = 2
const LONG = 22

/** One run to its `done`; its wall-clock ms. @since 0.1.0 */
export const runOnce = (port: number, steps: number, index: number): Promise<number> =>
  new Promise((resolve, reject) => {
    const body = JSON.stringify({ query: `durable bench ${index} steps=${steps}` })
    const started = performance.now()
    const req = http.request({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: "/api/react",
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) }
    }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        text += chunk
        if (text.includes("event: done")) {
          const ms = performance.now() - started
          res.destroy()
          resolve(ms)
        }
      })
      res.on(
        "end",
        () => reject(new Error(`stream ended without done (status ${res.statusCode}): ${text.slice(0, 200)}`))
      )
    })
    req.on("error", reject)
    req.end(body)
  })

const measure = async (database: string, env: Record<string, string>, samples: number): Promise<DurableFigures> => {
  const server = await startServerProcess({ BENCH_LATENCY_MS: "0", BENCH_CHUNKS: "1", ...env })
  try {
    // warm-up: JIT, connection pools, prepared statements
    for (let i = 0; i < 3; i++) {
      await runOnce(server.port, SHORT, i)
      await runOnce(server.port, LONG, i)
    }
    const short: Array<number> = []
    const long: Array<number> = []
    for (let i = 0; i < samples; i++) {
      short.push(await runOnce(server.port, SHORT, 100 + i))
      long.push(await runOnce(server.port, LONG, 100 + i))
    }
    const shortMs = quantile(short, 0.5)
    const longMs = quantile(long, 0.5)
    return { database, shortMs, longMs, marginalMs: (longMs - shortMs) / (LONG - SHORT), runs: samples }
  } catch (e) {
    return { database, error: e instanceof Error ? e.message : String(e) }
  } finally {
    await server.stop()
  }
}

const engineAlone = (env: Record<string, string> = {}): EngineFigures | string => {
  try {
    const script = fileURLToPath(new URL("./engineAlone.ts", import.meta.url))
    const out = execFileSync(process.execPath, ["--expose-gc", "--import", "tsx", script], {
      encoding: "utf8",
      timeout: 180_000,
      env: { ...process.env, ...env }
    })
    return JSON.parse(out.trim().split("\n").pop() ?? "") as EngineFigures
  } catch (e) {
    return e instanceof Error ? e.message : String(e)
  }
}

/** SQLite, then PostgreSQL when installed, then the engine alone. @since 0.1.0 */
export const run = async (options: { readonly samples: number }): Promise<DurableResults> => {
  const databases: Array<DurableFigures> = [await measure("SQLite (embedded file)", {}, options.samples)]
  let enginePostgres: EngineFigures | string
  const pg = findPostgres()
  if ("missing" in pg) {
    databases.push({ database: "PostgreSQL", error: pg.missing })
    enginePostgres = pg.missing
  } else {
    const cluster = await startPostgres(pg.bin)
    try {
      const url = cluster.createDatabase("bench")
      databases.push(
        await measure("PostgreSQL (local, socket runner)", {
          BENCH_DATABASE_URL: url,
          BENCH_CLUSTER_PORT: String(await freePort())
        }, options.samples)
      )
      enginePostgres = engineAlone({ ENGINE_DATABASE_URL: cluster.createDatabase("engine") })
    } finally {
      cluster.stop()
    }
  }
  const engine = engineAlone()
  return { databases, engine, enginePostgres, load: os.loadavg()[0] }
}

/** Activities a tool iteration stores: the LLM reply (with the interrupt drain) and the tool outcome. @since 0.1.0 */
export const ACTIVITIES_PER_ITERATION = 2

/**
 * A stored iteration ÷ the engine-alone floor measured in the same run (the engine's
 * activity × the activities per iteration), per database (issue 45 item 2: ≤ 1.5 ×).
 *
 * @since 0.1.0
 */
export const floorRatios = (
  d: DurableResults
): Array<
  { readonly database: string; readonly iterationMs: number; readonly floorMs: number; readonly ratio: number }
> =>
  d.databases.flatMap((x) => {
    const e = x.database.startsWith("PostgreSQL") ? d.enginePostgres : d.engine
    if (x.marginalMs === undefined || Number.isNaN(x.marginalMs) || e === undefined || typeof e === "string") return []
    const floorMs = ACTIVITIES_PER_ITERATION * e.activityWallMs
    return [{ database: x.database, iterationMs: x.marginalMs, floorMs, ratio: x.marginalMs / floorMs }]
  })

/** Terminal lines of the target (issue 45 item 2). @since 0.1.0 */
export const floorLines = (d: DurableResults): Array<string> =>
  floorRatios(d).map((r) =>
    `  target (issue 45 item 2, ${r.database}): a stored iteration ${
      r.iterationMs.toFixed(1)
    } ms ÷ the engine-alone floor ` +
    `${r.floorMs.toFixed(1)} ms (${ACTIVITIES_PER_ITERATION} × activity) = ${r.ratio.toFixed(2)} × ≤ 1.5: ${
      r.ratio <= 1.5 ? "met" : "MISSED"
    }${d.load === undefined ? "" : ` (load ${d.load.toFixed(1)})`}`
  )
