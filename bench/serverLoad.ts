/**
 * Server under load: N concurrent SSE runs against the real server in a child
 * process (bench/serverProcess.ts) on loopback.
 *
 * Two passes per level, each on a fresh server process:
 * 1. delivery: N runs at once with 20 ms model latency per call; for every frame
 *    that carries a model timestamp (`thinking done`, `answer delta`) the client
 *    records "model reply → frame received"; counts completed runs (`done`).
 * 2. memory: N runs at once with a 10 min model latency, so all N are parked in their
 *    first LLM call however long starting them takes (a durable run stores its start
 *    and first steps); once every client has its first frame the server reports heap
 *    (after a full GC) and RSS; per active run = (that − the idle baseline) / active.
 *    Then every client disconnects and the server must report 0 active runs
 *    (detach grace 0: a dropped client cancels its run).
 *
 * The load generator shares the 2 cores with the server: latencies include the
 * client's own parsing delay.
 *
 * @since 0.1.0
 */
import { createParser } from "eventsource-parser"
import { type ChildProcess, fork } from "node:child_process"
import * as http from "node:http"
import { fileURLToPath } from "node:url"
import { quantile } from "./harness.js"

const now = (): number => performance.timeOrigin + performance.now()

interface Memory {
  readonly heapUsed: number
  readonly rss: number
  readonly active: number
}

/** A server child process. @since 0.1.0 */
export interface ServerChild {
  readonly port: number
  readonly measure: () => Promise<Memory>
  readonly stop: () => Promise<void>
  readonly child: ChildProcess
}

/** Forks bench/serverProcess.ts and waits for its port. @since 0.1.0 */
export const startServerProcess = (env: Record<string, string>): Promise<ServerChild> =>
  new Promise((resolve, reject) => {
    const script = fileURLToPath(new URL("./serverProcess.ts", import.meta.url))
    const child = fork(script, [], {
      // BENCH_CPU_PROF=<dir>: the server writes a V8 CPU profile there when it exits (`node --cpu-prof`)
      execArgv: [
        "--expose-gc",
        "--import",
        "tsx",
        ...(process.env.BENCH_CPU_PROF
          ? ["--cpu-prof", `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`, "--cpu-prof-interval=500"]
          : [])
      ],
      env: { ...process.env, ...env },
      stdio: ["ignore", "inherit", "inherit", "ipc"]
    })
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error("server process did not start within 60 s"))
    }, 60_000)
    const waiters: Array<(m: Memory) => void> = []
    child.on("message", (message: any) => {
      if (message?.type === "ready") {
        clearTimeout(timer)
        resolve({
          port: message.port,
          child,
          measure: () =>
            new Promise<Memory>((res) => {
              waiters.push(res)
              child.send({ type: "measure" })
            }),
          stop: () =>
            new Promise<void>((res) => {
              if (child.exitCode !== null) return res()
              child.once("exit", () => res())
              child.send({ type: "stop" })
              setTimeout(() => child.kill("SIGKILL"), 5000).unref()
            })
        })
      } else if (message?.type === "memory") {
        waiters.shift()?.(message as Memory)
      }
    })
    child.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`server process exited early (code ${code})`))
    })
  })

/** One SSE client run. */
interface ClientRun {
  status: number
  bytes: number
  firstFrame: boolean
  done: boolean
  error?: string
  request?: http.ClientRequest
}

const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity })

const STAMP = /t=(\d+(?:\.\d+)?)/g

const openRun = (
  port: number,
  index: number,
  onLatency: (ms: number) => void,
  onFirstFrame: () => void
): { run: ClientRun; finished: Promise<ClientRun> } => {
  const run: ClientRun = { status: 0, bytes: 0, firstFrame: false, done: false }
  const finished = new Promise<ClientRun>((resolve) => {
    const body = JSON.stringify({ query: `load run ${index}` })
    const req = http.request({
      host: "127.0.0.1",
      port,
      method: "POST",
      path: "/api/react",
      agent,
      headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) }
    }, (res) => {
      run.status = res.statusCode ?? 0
      const parser = createParser({
        onEvent: (event) => {
          const received = now()
          if (!run.firstFrame) {
            run.firstFrame = true
            onFirstFrame()
          }
          if (event.event === "done") run.done = true
          if (event.event === "step" || event.event === "answer") {
            for (const m of event.data.matchAll(STAMP)) onLatency(received - Number(m[1]))
          }
        }
      })
      res.setEncoding("utf8")
      res.on("data", (chunk: string) => {
        run.bytes += chunk.length
        parser.feed(chunk)
      })
      res.on("end", () => resolve(run))
      res.on("error", (e) => {
        run.error = e.message
        resolve(run)
      })
    })
    req.on("error", (e) => {
      run.error = e.message
      resolve(run)
    })
    run.request = req
    req.end(body)
  })
  return { run, finished }
}

/** @since 0.1.0 */
export interface LoadResult {
  readonly concurrency: number
  readonly completed: number
  readonly failed: number
  readonly wallMs: number
  readonly frames: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
  readonly heapPerRunBytes: number
  readonly rssPerRunBytes: number
  readonly activeAtMeasure: number
  readonly activeAfterDisconnect: number
  /** What went wrong for runs that did not complete (statuses, errors). */
  readonly note?: string
  readonly error?: string
}

const describeFailures = (runs: ReadonlyArray<ClientRun>): string | undefined => {
  const bad = runs.filter((r) => !r.done)
  if (bad.length === 0) return undefined
  const kinds = new Map<string, number>()
  for (const r of bad) {
    const k = r.error !== undefined ? `error ${r.error}` : `status ${r.status}, ${r.bytes} bytes, no done`
    kinds.set(k, (kinds.get(k) ?? 0) + 1)
  }
  return [...kinds].slice(0, 3).map(([k, n]) => `${n} × ${k}`).join("; ")
}

const withTimeout = <A>(p: Promise<A>, ms: number, fallback: A): Promise<A> =>
  Promise.race([p, new Promise<A>((r) => setTimeout(() => r(fallback), ms).unref())])

/** Delivery pass. */
const deliveryPass = async (n: number, timeoutMs: number, env: Record<string, string>) => {
  const server = await startServerProcess({ BENCH_LATENCY_MS: "20", BENCH_STEPS: "2", BENCH_CHUNKS: "3", ...env })
  try {
    const latencies: Array<number> = []
    const t0 = now()
    const runs = Array.from({ length: n }, (_, i) => openRun(server.port, i, (ms) => latencies.push(ms), () => {}))
    const all = Promise.all(runs.map((r) => r.finished))
    await withTimeout(all, timeoutMs, [])
    const wallMs = now() - t0
    for (const r of runs) if (!r.run.done) r.run.request?.destroy()
    const completed = runs.filter((r) => r.run.done).length
    const note = describeFailures(runs.map((r) => r.run))
    return {
      ...(note !== undefined ? { note } : {}),
      completed,
      failed: runs.filter((r) => r.run.error !== undefined || (r.run.status !== 0 && r.run.status !== 200)).length,
      wallMs,
      frames: latencies.length,
      p50Ms: quantile(latencies, 0.5),
      p99Ms: quantile(latencies, 0.99),
      maxMs: latencies.length ? Math.max(...latencies) : Number.NaN
    }
  } finally {
    await server.stop()
  }
}

/** Memory pass (and disconnect cleanup check). */
const memoryPass = async (n: number, timeoutMs: number) => {
  // every run executes at once, whatever the default admission (what one active run holds)
  const server = await startServerProcess({
    BENCH_LATENCY_MS: "600000",
    BENCH_STEPS: "1",
    BENCH_CHUNKS: "1",
    REACT_MAX_ACTIVE_RUNS: String(Math.max(n, 1))
  })
  try {
    const baseline = await server.measure()
    let first = 0
    let allStarted!: () => void
    const started = new Promise<void>((r) => (allStarted = r))
    const runs = Array.from({ length: n }, (_, i) =>
      openRun(server.port, i, () => {}, () => {
        if (++first === n) allStarted()
      }))
    await withTimeout(started, timeoutMs, undefined)
    const loaded = await server.measure()
    for (const r of runs) r.run.request?.destroy()
    // wait until the server has cancelled every run (≤ 60 s)
    let after = await server.measure()
    for (let i = 0; i < 600 && after.active > 0; i++) {
      await new Promise((r) => setTimeout(r, 100))
      after = await server.measure()
    }
    const active = Math.max(1, loaded.active)
    return {
      heapPerRunBytes: (loaded.heapUsed - baseline.heapUsed) / active,
      rssPerRunBytes: (loaded.rss - baseline.rss) / active,
      activeAtMeasure: loaded.active,
      activeAfterDisconnect: after.active
    }
  } finally {
    await server.stop()
  }
}

/** Runs both passes for one concurrency level (the delivery pass once more if no run completed). @since 0.1.0 */
export const runLevel = async (
  n: number,
  options: { readonly timeoutMs: number; readonly env?: Record<string, string>; readonly deliveryOnly?: boolean }
): Promise<LoadResult> => {
  const env = options.env ?? {}
  try {
    let delivery = await deliveryPass(n, options.timeoutMs, env)
    if (delivery.completed === 0) {
      const first = delivery.note ?? "no run completed"
      delivery = await deliveryPass(n, options.timeoutMs, env)
      delivery = { ...delivery, note: `first attempt: ${first}; retried${delivery.note ? `: ${delivery.note}` : ""}` }
    }
    const memory = options.deliveryOnly
      ? {
        heapPerRunBytes: Number.NaN,
        rssPerRunBytes: Number.NaN,
        activeAtMeasure: 0,
        activeAfterDisconnect: Number.NaN
      }
      : await memoryPass(n, options.timeoutMs)
    return { concurrency: n, ...delivery, ...memory }
  } catch (e) {
    return {
      concurrency: n,
      completed: 0,
      failed: n,
      wallMs: Number.NaN,
      frames: 0,
      p50Ms: Number.NaN,
      p99Ms: Number.NaN,
      maxMs: Number.NaN,
      heapPerRunBytes: Number.NaN,
      rssPerRunBytes: Number.NaN,
      activeAtMeasure: 0,
      activeAfterDisconnect: Number.NaN,
      error: e instanceof Error ? e.message : String(e)
    }
  }
}
