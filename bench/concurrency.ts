/**
 * Durable runs on the embedded SQLite file, what a user feels (issue 31, items 2 and 3): the real
 * server in a child process (bench/serverProcess.ts) on a zero-latency scripted model.
 *
 * - **starts**: 200 two-step runs started at once (200 POST `/api/react`): time from the request
 *   to the first SSE event (p50 / p99), to `done`, and until the last run is done; the server's CPU
 *   time over the burst (from /proc), ÷ runs.
 * - **sequential**: 2,000 one-tool runs one after another (p50 / p99 per whole run), and the
 *   server's RSS and heap (after a full GC) after the first 100 runs and after all 2,000.
 * - **curve**: three runs of 199 tool steps and their answer (200 loop LLM calls, `max_iterations`
 *   200): the gap between the starts of consecutive iterations as the client receives them, from
 *   step 1 to step 200 (the 200th gap ends at the answer's first frame), each step's median over
 *   the three runs, as an ASCII chart, and step 200 ÷ step 10 (medians of steps 191–200 and 6–15).
 *
 * @since 0.1.0
 */
import { createParser } from "eventsource-parser"
import { readFileSync } from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import { quantile } from "./harness.js"
import { startServerProcess } from "./serverLoad.js"

const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity })

interface RunTimes {
  readonly status: number
  /** ms from the request to the first SSE event. */
  readonly firstMs: number
  /** The first event was the acknowledgement of a run waiting for a free slot (`phase queued`). */
  readonly queued: boolean
  /** ms from the request to `done`. */
  readonly doneMs: number
  /** Receive time (ms, `performance.now()`) of each iteration's start, by iteration. */
  readonly iterationStarts: ReadonlyArray<number>
  /** Receive time of the first answer frame. */
  readonly answerAt: number
  readonly error?: string
}

/** One run to its `done` over SSE. @since 0.1.0 */
export const runOnce = (port: number, query: string, maxIterations?: number): Promise<RunTimes> =>
  new Promise((resolve) => {
    const body = JSON.stringify({ query, ...(maxIterations !== undefined ? { max_iterations: maxIterations } : {}) })
    const started = performance.now()
    let firstMs = Number.NaN
    let queued = false
    let answerAt = Number.NaN
    const iterationStarts: Array<number> = []
    let settled = false
    const finish = (status: number, doneMs: number, error?: string) => {
      if (settled) return
      settled = true
      resolve({ status, firstMs, queued, doneMs, iterationStarts, answerAt, ...(error !== undefined ? { error } : {}) })
    }
    const req = http.request({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: "/api/react",
      agent,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) }
    }, (res) => {
      const status = res.statusCode ?? 0
      const parser = createParser({
        onEvent: (event) => {
          const at = performance.now()
          if (Number.isNaN(firstMs)) {
            firstMs = at - started
            queued = event.event === "phase" && event.data.includes("\"phase\":\"queued\"")
          }
          if (
            event.event === "step" && event.data.includes("\"type\":\"iteration\"") &&
            event.data.includes("\"status\":\"start\"")
          ) {
            const data = JSON.parse(event.data) as { iteration?: number }
            if (typeof data.iteration === "number") iterationStarts[data.iteration - 1] = at
          } else if (event.event === "answer" && Number.isNaN(answerAt)) {
            answerAt = at
          } else if (event.event === "done") {
            res.destroy()
            finish(status, at - started)
          }
        }
      })
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => parser.feed(chunk))
      res.on("end", () => finish(status, Number.NaN, `stream ended without done (status ${status})`))
      res.on("error", (e) => finish(status, Number.NaN, e.message))
    })
    req.on("error", (e) => finish(0, Number.NaN, e.message))
    req.end(body)
  })

/** CPU time (user + system, ms) of a process, from /proc (NaN where there is none). */
const cpuMs = (pid: number | undefined): number => {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
  } catch {
    return Number.NaN
  }
}

const load = () => os.loadavg()[0]

/** @since 0.1.0 */
export interface StartsFigures {
  readonly runs: number
  readonly completed: number
  readonly failures: string | undefined
  readonly firstP50Ms: number
  readonly firstP99Ms: number
  /** Runs whose first event was `queued` (they waited for a slot), and their first event's p99 (absent in older results). */
  readonly queuedRuns?: number
  readonly queuedFirstP99Ms?: number
  /** The first event's p99 of the runs that had a slot at once (their first event is the run's own). */
  readonly slottedFirstP99Ms?: number
  readonly doneP50Ms: number
  readonly doneP99Ms: number
  readonly allDoneMs: number
  /** The server's CPU time over the burst ÷ runs. */
  readonly cpuPerRunMs: number
  readonly load: number
  readonly maxActiveRuns: number
}

/** @since 0.1.0 */
export interface SequentialFigures {
  readonly runs: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly cpuPerRunMs: number
  readonly rssAfter100: number
  readonly rssAfterAll: number
  readonly heapAfter100: number
  readonly heapAfterAll: number
  /** The same after 60 s idle (V8 gives committed heap back when allocation stops). */
  readonly rssIdle: number
  readonly heapIdle: number
  readonly load: number
}

/** @since 0.1.0 */
export interface CurveFigures {
  /** Gap (ms) before each step's start, step 1 … 200. */
  readonly gapsMs: ReadonlyArray<number>
  readonly step10Ms: number
  readonly step200Ms: number
  readonly ratio: number
  readonly totalMs: number
  readonly load: number
}

/** @since 0.1.0 */
export interface ConcurrencyResults {
  readonly starts?: StartsFigures | string
  readonly sequential?: SequentialFigures | string
  readonly curve?: CurveFigures | string
}

const describe = (runs: ReadonlyArray<RunTimes>): string | undefined => {
  const kinds = new Map<string, number>()
  for (const r of runs) {
    if (r.error === undefined && r.status === 200) continue
    const k = r.error ?? `status ${r.status}`
    kinds.set(k, (kinds.get(k) ?? 0) + 1)
  }
  return kinds.size === 0 ? undefined : [...kinds].map(([k, n]) => `${n} × ${k}`).join("; ")
}

/** 200 two-step runs started at once. @since 0.1.0 */
export const starts = async (n = 200, env: Record<string, string> = {}): Promise<StartsFigures> => {
  const server = await startServerProcess({ BENCH_LATENCY_MS: "0", BENCH_STEPS: "2", BENCH_CHUNKS: "1", ...env })
  try {
    for (let i = 0; i < 5; i++) await runOnce(server.port, `warm ${i}`)
    const cpu0 = cpuMs(server.child.pid)
    const t0 = performance.now()
    const runs = await Promise.all(Array.from({ length: n }, (_, i) => runOnce(server.port, `start ${i}`)))
    const allDoneMs = performance.now() - t0
    const cpu = cpuMs(server.child.pid) - cpu0
    const ok = runs.filter((r) => r.error === undefined && r.status === 200)
    return {
      runs: n,
      completed: ok.length,
      failures: describe(runs),
      firstP50Ms: quantile(ok.map((r) => r.firstMs), 0.5),
      firstP99Ms: quantile(ok.map((r) => r.firstMs), 0.99),
      queuedRuns: ok.filter((r) => r.queued).length,
      queuedFirstP99Ms: quantile(ok.filter((r) => r.queued).map((r) => r.firstMs), 0.99),
      slottedFirstP99Ms: quantile(ok.filter((r) => !r.queued).map((r) => r.firstMs), 0.99),
      doneP50Ms: quantile(ok.map((r) => r.doneMs), 0.5),
      doneP99Ms: quantile(ok.map((r) => r.doneMs), 0.99),
      allDoneMs,
      cpuPerRunMs: cpu / n,
      load: load(),
      maxActiveRuns: Number(env.REACT_MAX_ACTIVE_RUNS ?? 128)
    }
  } finally {
    await server.stop()
  }
}

/** 2,000 one-tool runs one after another, and the memory curve. @since 0.1.0 */
export const sequential = async (n = 2000): Promise<SequentialFigures> => {
  const server = await startServerProcess({ BENCH_LATENCY_MS: "0", BENCH_STEPS: "1", BENCH_CHUNKS: "1" })
  try {
    const times: Array<number> = []
    let after100 = { rss: Number.NaN, heapUsed: Number.NaN }
    const cpu0 = cpuMs(server.child.pid)
    for (let i = 0; i < n; i++) {
      const r = await runOnce(server.port, `sequential ${i}`)
      if (r.error !== undefined) throw new Error(`run ${i}: ${r.error}`)
      times.push(r.doneMs)
      if (i === 99) after100 = await server.measure()
    }
    const cpu = cpuMs(server.child.pid) - cpu0
    const afterAll = await server.measure()
    const busyLoad = load()
    await new Promise((resolve) => setTimeout(resolve, IDLE_MS))
    const idle = await server.measure()
    return {
      runs: n,
      p50Ms: quantile(times, 0.5),
      p99Ms: quantile(times, 0.99),
      cpuPerRunMs: cpu / n,
      rssAfter100: after100.rss,
      rssAfterAll: afterAll.rss,
      heapAfter100: after100.heapUsed,
      heapAfterAll: afterAll.heapUsed,
      rssIdle: idle.rss,
      heapIdle: idle.heapUsed,
      load: busyLoad
    }
  } finally {
    await server.stop()
  }
}

const STEPS = 200
const IDLE_MS = 60_000
const CURVE_RUNS = 3

/** One 200-step run: the gap before each step. @since 0.1.0 */
export const curve = async (): Promise<CurveFigures> => {
  const server = await startServerProcess({ BENCH_LATENCY_MS: "0", BENCH_STEPS: "1", BENCH_CHUNKS: "1" })
  try {
    for (let i = 0; i < 3; i++) await runOnce(server.port, `warm ${i} steps=20`)
    // each step's gap is its median over CURVE_RUNS runs: one run on a shared machine is mostly noise
    const runs: Array<ReadonlyArray<number>> = []
    const totals: Array<number> = []
    for (let k = 0; k < CURVE_RUNS; k++) {
      const t0 = performance.now()
      const r = await runOnce(server.port, `curve ${k} steps=${STEPS - 1}`, STEPS)
      if (r.error !== undefined) throw new Error(r.error)
      // step k's gap: from step k-1's start (the request, for step 1) to step k's start; the 200th
      // LLM call is the answer
      const starts = [...r.iterationStarts.slice(0, STEPS - 1), r.answerAt]
      const gaps = starts.map((at, i) => at - (i === 0 ? t0 : starts[i - 1]))
      if (gaps.length !== STEPS || gaps.some((g) => Number.isNaN(g))) {
        throw new Error(`expected ${STEPS} steps, got ${r.iterationStarts.length}`)
      }
      runs.push(gaps)
      totals.push(r.doneMs)
    }
    const gapsMs = Array.from({ length: STEPS }, (_, i) => quantile(runs.map((gaps) => gaps[i]), 0.5))
    const step10Ms = quantile(gapsMs.slice(5, 15), 0.5)
    const step200Ms = quantile(gapsMs.slice(190, 200), 0.5)
    return { gapsMs, step10Ms, step200Ms, ratio: step200Ms / step10Ms, totalMs: quantile(totals, 0.5), load: load() }
  } finally {
    await server.stop()
  }
}

/** The per-step gaps as an ASCII chart: one column per 5 steps (their median), 12 rows. @since 0.1.0 */
export const chart = (gapsMs: ReadonlyArray<number>, rows = 12, per = 5): string => {
  const columns: Array<number> = []
  for (let i = 0; i < gapsMs.length; i += per) columns.push(quantile(gapsMs.slice(i, i + per), 0.5))
  const top = Math.max(...columns) * 1.05
  const lines: Array<string> = []
  for (let row = rows; row >= 1; row--) {
    const level = (top * row) / rows
    const label = row === rows || row === Math.ceil(rows / 2) || row === 1
      ? `${level.toFixed(1).padStart(6)} ms ┤`
      : "          │"
    lines.push(label + columns.map((c) => (c >= level - top / rows / 2 ? "█" : " ")).join(""))
  }
  lines.push("          └" + "─".repeat(columns.length))
  const axis = Array.from({ length: columns.length }, () => " ")
  for (const step of [1, 50, 100, 150, 200]) {
    const text = String(step)
    const col = Math.min(columns.length - text.length, Math.floor((step - 1) / per))
    for (let k = 0; k < text.length && col + k < axis.length; k++) axis[col + k] = text[k]
  }
  lines.push("           " + axis.join("") + "  (step; each column the median of 5 steps)")
  return lines.join("\n")
}

const mb = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MB`
const f = (x: number) => (Number.isNaN(x) ? "n/a" : x >= 100 ? x.toFixed(0) : x.toFixed(1))

/** Terminal lines of each part. @since 0.1.0 */
export const lines = (r: ConcurrencyResults): Array<string> => {
  const out: Array<string> = []
  if (r.starts !== undefined) {
    const s = r.starts
    out.push(
      typeof s === "string"
        ? `200 starts: not measured: ${s}`
        : `${s.runs} starts at once: ${s.completed} completed${s.failures ? ` (${s.failures})` : ""}; first event p50 ${
          f(s.firstP50Ms)
        } ms, p99 ${f(s.firstP99Ms)} ms${
          s.queuedRuns === undefined
            ? ""
            : ` (${s.queuedRuns} acknowledged as queued: p99 ${f(s.queuedFirstP99Ms ?? Number.NaN)} ms; ${
              s.completed - s.queuedRuns
            } with a slot at once: p99 ${f(s.slottedFirstP99Ms ?? Number.NaN)} ms)`
        }; done p50 ${f(s.doneP50Ms)} ms, p99 ${f(s.doneP99Ms)} ms; all done in ${f(s.allDoneMs)} ms; server CPU ${
          f(s.cpuPerRunMs)
        } ms per run (load ${s.load.toFixed(1)})\n` +
          `  targets (issue 45 item 1): first event p99 ${f(s.firstP99Ms)} ms ≤ 1000: ${
            s.firstP99Ms <= 1000 ? "met" : "MISSED"
          }; all done ${f(s.allDoneMs)} ms ≤ 10000: ${s.allDoneMs <= 10_000 ? "met" : "MISSED"}; refused or reset: ${
            s.runs - s.completed
          }`
    )
  }
  if (r.sequential !== undefined) {
    const s = r.sequential
    out.push(
      typeof s === "string"
        ? `sequential: not measured: ${s}`
        : `${s.runs} sequential one-tool runs: p50 ${f(s.p50Ms)} ms, p99 ${f(s.p99Ms)} ms, server CPU ${
          f(s.cpuPerRunMs)
        } ms per run; RSS ${mb(s.rssAfter100)} after 100 → ${mb(s.rssAfterAll)} after ${s.runs} + GC → ${
          mb(s.rssIdle)
        } 60 s later (heap ${mb(s.heapAfter100)} → ${mb(s.heapAfterAll)} → ${mb(s.heapIdle)}) (load ${
          s.load.toFixed(1)
        })\n` +
          `  target (issue 45 item 4): RSS 60 s after the last run − after 100 = ${
            mb(s.rssIdle - s.rssAfter100)
          } ≤ 50 MB: ${s.rssIdle - s.rssAfter100 <= 50 * 1024 * 1024 ? "met" : "MISSED"}; heap ${
            mb(s.heapIdle - s.heapAfter100)
          }`
    )
  }
  if (r.curve !== undefined) {
    const c = r.curve
    if (typeof c === "string") out.push(`curve: not measured: ${c}`)
    else {
      out.push(
        `${STEPS}-step runs (each step's median of ${CURVE_RUNS}): ${f(c.totalMs)} ms per run; step 10 ${
          f(c.step10Ms)
        } ms, step 200 ${f(c.step200Ms)} ms: ${c.ratio.toFixed(2)} × (load ${c.load.toFixed(1)})`
      )
      out.push(chart(c.gapsMs))
    }
  }
  return out
}

/** The section of docs/benchmarks.md. @since 0.1.0 */
export const section = (r: ConcurrencyResults): string => {
  const parts = [`## Durable runs: concurrent starts, sequential runs, cost per step over a long run

The real server (bench/serverProcess.ts) on the embedded SQLite file and a zero-latency scripted
model, every run a durable workflow (bench/concurrency.ts). **200 starts**: 200 two-step runs
POSTed at once; time from each request to its first SSE event and to its \`done\`, and until the last
is done; the server's CPU time over the burst (/proc) ÷ runs. **Sequential**: 2,000 one-tool runs one
after another; RSS and heap (after a full GC) after the first 100, after all of them, and 60 s later. **Per step**:
three runs of 199 tool steps and their answer; the gap between consecutive iteration starts as the client
receives them, each step's median over the three runs. Targets (SPEC §13, issue 31): first event p50 ≤ 300 ms and p99 ≤ 1 s, all 200 done within
10 s; ≤ 20 ms per sequential run (p50); RSS after 2,000 within 50 MB of the level after 100; step 200
≤ 1.2 × step 10.`]
  parts.push("```\n" + lines(r).join("\n") + "\n```")
  return parts.join("\n\n")
}

const verdict = (ok: boolean | undefined) => (ok === undefined ? "not measured" : ok ? "met" : "**missed**")

/** Rows of the targets table: issue 31's durability targets. @since 0.1.0 */
export const targets = (
  r: ConcurrencyResults | undefined,
  durable: {
    readonly databases: ReadonlyArray<
      { readonly database: string; readonly marginalMs?: number; readonly error?: string }
    >
  } | undefined
): Array<Array<string>> => {
  const perIteration = (prefix: string, limit: number) => {
    const d = durable?.databases.find((x) => x.database.startsWith(prefix))
    const ok = d !== undefined && d.error === undefined && d.marginalMs !== undefined
    return [
      `a stored loop iteration ≤ ${limit} ms (${prefix}, one run at a time)`,
      ok ? `${d.marginalMs!.toFixed(1)} ms` : "n/a",
      verdict(ok ? d.marginalMs! <= limit : undefined)
    ]
  }
  const s = typeof r?.starts === "object" ? r.starts : undefined
  const q = typeof r?.sequential === "object" ? r.sequential : undefined
  const c = typeof r?.curve === "object" ? r.curve : undefined
  const growth = q ? q.rssAfterAll - q.rssAfter100 : Number.NaN
  return [
    perIteration("SQLite", 5),
    perIteration("PostgreSQL", 10),
    [
      `${
        s?.runs ?? 200
      } durable runs started at once (SQLite): first event p50 ≤ 300 ms, p99 ≤ 1 s; all done within 10 s`,
      s
        ? `${s.completed}/${s.runs} done; p50 ${f(s.firstP50Ms)} ms, p99 ${f(s.firstP99Ms)} ms; all in ${
          (s.allDoneMs / 1000).toFixed(1)
        } s`
        : "n/a",
      verdict(
        s ? s.completed === s.runs && s.firstP50Ms <= 300 && s.firstP99Ms <= 1000 && s.allDoneMs <= 10_000 : undefined
      )
    ],
    [
      "2,000 sequential one-tool durable runs ≤ 20 ms each (p50)",
      q ? `p50 ${f(q.p50Ms)} ms` : "n/a",
      verdict(q ? q.p50Ms <= 20 : undefined)
    ],
    [
      "RSS after 2,000 runs + GC within 50 MB of the level after 100",
      q ? `${mb(q.rssAfter100)} → ${mb(q.rssAfterAll)} (${growth >= 0 ? "+" : ""}${mb(growth)})` : "n/a",
      verdict(q ? growth <= 50 * 1024 * 1024 : undefined)
    ],
    [
      "the same, 60 s after the last run (V8 gives its committed heap back once allocation stops)",
      q && q.rssIdle !== undefined
        ? `${mb(q.rssAfter100)} → ${mb(q.rssIdle)} (${q.rssIdle >= q.rssAfter100 ? "+" : ""}${
          mb(q.rssIdle - q.rssAfter100)
        })`
        : "n/a",
      verdict(q && q.rssIdle !== undefined ? q.rssIdle - q.rssAfter100 <= 50 * 1024 * 1024 : undefined)
    ],
    [
      "step 200 of a 200-step durable run ≤ 1.2 × step 10",
      c ? `${f(c.step200Ms)} / ${f(c.step10Ms)} ms: ${c.ratio.toFixed(2)} ×` : "n/a",
      verdict(c ? c.ratio <= 1.2 : undefined)
    ]
  ]
}
