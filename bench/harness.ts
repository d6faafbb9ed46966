/**
 * Measuring helpers: median timing of interleaved runs, and bytes allocated by a
 * function (V8's sampling heap profiler with collected objects included, i.e.
 * everything allocated, not only what survives).
 *
 * @since 0.1.0
 */
import { Session } from "node:inspector/promises"
import { constants, PerformanceObserver } from "node:perf_hooks"
import * as v8 from "node:v8"
import * as vm from "node:vm"

/**
 * A full-GC function: `globalThis.gc` under `--expose-gc`, else obtained at run
 * time (`v8.setFlagsFromString("--expose-gc")` + a fresh context), so that
 * `npm run bench` needs no extra node flag.
 *
 * @since 0.1.0
 */
export const gc: () => void = (() => {
  const existing = (globalThis as { gc?: () => void }).gc
  if (existing) return existing
  v8.setFlagsFromString("--expose-gc")
  return vm.runInNewContext("gc") as () => void
})()

/** @since 0.1.0 */
export const median = (xs: ReadonlyArray<number>): number => quantile(xs, 0.5)

/** Linear-interpolated quantile (q in [0, 1]). @since 0.1.0 */
export const quantile = (xs: ReadonlyArray<number>, q: number): number => {
  if (xs.length === 0) return Number.NaN
  const s = [...xs].sort((a, b) => a - b)
  const pos = (s.length - 1) * q
  const lo = Math.floor(pos)
  const hi = Math.ceil(pos)
  return s[lo] + (s[hi] - s[lo]) * (pos - lo)
}

/** One timed call: wall time and process CPU time (user + system, all threads), in µs. @since 0.1.0 */
export interface Sample {
  readonly wall: number
  readonly cpu: number
}

/**
 * Times one async call, after a full GC and a 10 ms pause (V8 sweeps concurrently
 * after `gc()`; the pause lets its helper threads finish), so no contender pays
 * for another's garbage.
 *
 * @since 0.1.0
 */
export const timeOnce = async (fn: () => Promise<unknown>): Promise<Sample> => {
  gc()
  await new Promise((resolve) => setTimeout(resolve, 10))
  return measure(fn)
}

/** One timed call, as it comes (no GC before it). */
const measure = async (fn: () => Promise<unknown>): Promise<Sample> => {
  const c0 = process.cpuUsage()
  const t0 = process.hrtime.bigint()
  await fn()
  const wall = Number(process.hrtime.bigint() - t0) / 1000
  const c = process.cpuUsage(c0)
  return { wall, cpu: c.user + c.system }
}

/**
 * Runs every function `samples` rounds round-robin, one run at a time (the
 * starting contender rotates each round, so load spikes from other processes
 * hit every contender alike), after `warmup` untimed rounds; no GC is forced.
 * Each run pays for the garbage collections V8 decides on while it runs, as in
 * a process that keeps running: scavenges, whose cost is what is still alive
 * (the run's own objects; the other contenders' runs are over), and the rare
 * full GC (one per ≈ 200 runs of a 50-step loop on this machine). Returns the
 * samples per function, in the input order. Timed rounds stop early (after at
 * least 10) when `maxMs` has passed.
 *
 * @since 0.1.0
 */
export const interleaved = async (
  fns: ReadonlyArray<() => Promise<unknown>>,
  options: { readonly warmup: number; readonly samples: number; readonly maxMs?: number }
): Promise<Array<Array<Sample>>> => {
  for (let i = 0; i < options.warmup; i++) for (const fn of fns) await fn()
  const out = fns.map(() => [] as Array<Sample>)
  const deadline = options.maxMs === undefined ? Infinity : Date.now() + options.maxMs
  for (let i = 0; i < options.samples; i++) {
    for (let k = 0; k < fns.length; k++) {
      const j = (i + k) % fns.length
      out[j].push(await measure(fns[j]))
    }
    if (Date.now() > deadline && i >= 10) break
  }
  return out
}

/**
 * `rounds` runs of every function, each right after a forced full GC
 * (`timeOnce`), round-robin. A forced full GC makes V8 discard optimized code
 * that embedded objects which died ("weak objects"): what a run pays after one
 * is how much an engine depends on code V8 has to optimize again (an Effect
 * program's fiber runtime: ≈ 3.5 × on a bare `Effect.gen` loop on this machine).
 *
 * @since 0.1.0
 */
export const afterFullGc = async (
  fns: ReadonlyArray<() => Promise<unknown>>,
  rounds: number
): Promise<Array<Array<Sample>>> => {
  const out = fns.map(() => [] as Array<Sample>)
  for (let i = 0; i < rounds; i++) {
    for (let k = 0; k < fns.length; k++) {
      const j = (i + k) % fns.length
      out[j].push(await timeOnce(fns[j]))
    }
  }
  return out
}

/** The garbage collections V8 ran by itself while `f` ran. @since 0.1.0 */
export interface GcCounts {
  readonly minor: number
  readonly full: number
}

/** Runs `f` and counts the garbage collections V8 runs meanwhile (`gc` performance entries). @since 0.1.0 */
export const countingGcs = async <A>(f: () => Promise<A>): Promise<{ readonly result: A; readonly gcs: GcCounts }> => {
  let minor = 0
  let full = 0
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const kind = (entry as PerformanceEntry & { readonly detail?: { readonly kind?: number } | null }).detail?.kind
      if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) full++
      else if (kind === constants.NODE_PERFORMANCE_GC_MINOR) minor++
    }
  })
  observer.observe({ entryTypes: ["gc"] })
  try {
    const result = await f()
    // entries are delivered asynchronously
    await new Promise((resolve) => setTimeout(resolve, 50))
    return { result, gcs: { minor, full } }
  } finally {
    observer.disconnect()
  }
}

let session: Session | undefined

const getSession = async (): Promise<Session> => {
  if (session === undefined) {
    session = new Session()
    session.connect()
    await session.post("HeapProfiler.enable")
  }
  return session
}

/**
 * Bytes allocated while `fn` runs (median over `repeats`), measured with V8's
 * sampling heap profiler (`includeObjectsCollectedByMinorGC/MajorGC`: garbage is
 * counted too). Sampling at 4 KB: figures are statistical, good to a few percent
 * for allocations in the megabytes.
 *
 * @since 0.1.0
 */
export const allocated = async (fn: () => Promise<unknown>, repeats = 5): Promise<number> => {
  const s = await getSession()
  const results: Array<number> = []
  for (let i = 0; i < repeats; i++) {
    gc()
    await s.post("HeapProfiler.startSampling", {
      samplingInterval: 4096,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true
    })
    await fn()
    const { profile } = await s.post("HeapProfiler.stopSampling")
    let total = 0
    const walk = (node: { readonly selfSize: number; readonly children: ReadonlyArray<any> }): void => {
      total += node.selfSize
      for (const child of node.children) walk(child)
    }
    walk(profile.head)
    results.push(total)
  }
  return median(results)
}

/** Retained heap after a full GC, in bytes. @since 0.1.0 */
export const retainedHeap = (): number => {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

/** @since 0.1.0 */
export const fmtUs = (us: number): string =>
  Number.isNaN(us) ? "n/a" : us >= 100 ? us.toFixed(0) : us >= 10 ? us.toFixed(1) : us.toFixed(2)

/** @since 0.1.0 */
export const fmtBytes = (b: number): string =>
  Number.isNaN(b) ? "n/a" : b >= 1024 * 1024 ? `${(b / 1024 / 1024).toFixed(1)} MB` : `${(b / 1024).toFixed(0)} KB`

/** @since 0.1.0 */
export const fmtRatio = (r: number): string => (Number.isFinite(r) ? `${r.toFixed(r >= 10 ? 0 : 1)}×` : "n/a")

/** Renders a markdown table (also readable on a terminal). @since 0.1.0 */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>): string => {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)))
  const line = (cells: ReadonlyArray<string>) => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(" | ")} |`
  return [line(header), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`, ...rows.map(line)].join("\n")
}
