/**
 * Measuring helpers: median timing of interleaved runs, and bytes allocated by a
 * function (V8's sampling heap profiler with collected objects included, i.e.
 * everything allocated, not only what survives).
 *
 * @since 0.1.0
 */
import { Session } from "node:inspector/promises"
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

/** One batch of runs of a function: each run's sample, the first right after a full GC. @since 0.1.0 */
export interface Batch {
  /** The first run after the full GC. */
  readonly first: Sample
  /** The mean of the other runs of the batch (steady state: the runs pay for their own garbage). */
  readonly steady: Sample
}

/**
 * Times `size` consecutive runs of `fn` after one full GC and a 10 ms pause: the
 * garbage of other contenders is collected before the batch, the batch's own
 * garbage is collected (by V8, when it decides) during it and charged to it. The
 * first run is reported apart: a forced full GC makes V8 discard optimized code
 * that embedded objects which died ("weak objects"), and an Effect program's
 * first run after one pays to warm up again (measured ≈ 3.5 × on a bare
 * `Effect.gen` loop on this machine); the later runs are what a process that
 * keeps running pays.
 *
 * @since 0.1.0
 */
export const timeBatch = async (fn: () => Promise<unknown>, size: number): Promise<Batch> => {
  const first = await timeOnce(fn)
  let wall = 0
  let cpu = 0
  for (let i = 1; i < size; i++) {
    const sample = await measure(fn)
    wall += sample.wall
    cpu += sample.cpu
  }
  return { first, steady: { wall: wall / (size - 1), cpu: cpu / (size - 1) } }
}

/**
 * Runs every function in batches of `size` runs (`timeBatch`), `samples` rounds
 * round-robin (so load spikes from other processes hit every contender alike),
 * after `warmup` untimed rounds. Returns the batches per function, in the input
 * order. Timed rounds stop early (after at least 5) when `maxMs` has passed.
 *
 * @since 0.1.0
 */
export const interleavedBatches = async (
  fns: ReadonlyArray<() => Promise<unknown>>,
  options: { readonly warmup: number; readonly samples: number; readonly size: number; readonly maxMs?: number }
): Promise<Array<Array<Batch>>> => {
  for (let i = 0; i < options.warmup; i++) for (const fn of fns) await fn()
  const out = fns.map(() => [] as Array<Batch>)
  const deadline = options.maxMs === undefined ? Infinity : Date.now() + options.maxMs
  for (let i = 0; i < options.samples; i++) {
    // rotate the starting contender each round
    for (let k = 0; k < fns.length; k++) {
      const j = (i + k) % fns.length
      out[j].push(await timeBatch(fns[j], options.size))
    }
    if (Date.now() > deadline && i >= 4) break
  }
  return out
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
