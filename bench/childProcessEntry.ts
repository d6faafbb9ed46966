/**
 * The child of the child-process loop benchmark (bench/childProcess.ts): one engine, in a fresh
 * plain `node` process, loading the built package (`effect-react-engine`, dist/) or the peer's
 * published library through its harness (bench/peers/*.ts, transpiled to JavaScript by the parent:
 * no tsx, no loader hook in this process). For each loop workload (w1, w2, w3: the cases of
 * bench/scenario.ts) it warms up (`warmup` runs of each scenario, at least 3, fewer when half of
 * `maxMsPerWorkload` has passed), then times `iterations` runs of the long and of the short
 * scenario, alternating, with the wall clock (at least 10 each, fewer than `iterations` when
 * `maxMsPerWorkload` has passed), and prints one JSON line:
 *
 * - marginal µs per iteration: (mean wall time of a long run − of a short run) ÷ the extra steps,
 *   and the same with the process's CPU time (what stays meaningful when other processes compete
 *   for the cores);
 * - allocated bytes per long run: after the timing, 5 long runs in a row; bytes freed by every GC
 *   meanwhile plus the heap's growth over them (`v8.GCProfiler`), ÷ 5 — no inspector, no forced GC.
 *
 * The flavour (bench/scenario.ts `Flavour`) says how the engine makes its loop calls: `generate`
 * (non-streamed) or `stream` (streamed, the stream consumed in full).
 *
 * `node bench/.child/childProcessEntry.js <ours|aiSdk|agentsSdk> <generate|stream> <iterations> <warmup> <maxMsPerWorkload>`
 *
 * @since 0.1.0
 */
import * as v8 from "node:v8"
import * as agentsSdk from "./peers/agentsSdk.js"
import * as aiSdk from "./peers/aiSdk.js"
import * as ours from "./peers/ours.js"
import type { Engine, Flavour } from "./scenario.js"
import { flavours, loopCases, verify } from "./scenario.js"

const byFlavour = (m: { readonly engine: Engine; readonly streamEngine: Engine }): Record<Flavour, Engine> => ({
  generate: m.engine,
  stream: m.streamEngine
})
const engines: Record<string, Record<Flavour, Engine>> = {
  ours: byFlavour(ours),
  aiSdk: byFlavour(aiSdk),
  agentsSdk: byFlavour(agentsSdk)
}

/** One workload's figures in one child. @since 0.1.0 */
export interface ChildWorkload {
  readonly title: string
  /** Mean wall µs of a long / short run. */
  readonly longUs: number
  readonly shortUs: number
  /** (longUs − shortUs) ÷ extra steps. */
  readonly marginalUs: number
  /** The same slope with the process's CPU time (user + system) of the same runs. */
  readonly marginalCpuUs: number
  /** Bytes allocated per long run. */
  readonly allocatedBytes: number
  /** Timed runs of each scenario. */
  readonly runs: number
}

/** What a child prints. @since 0.1.0 */
export interface ChildFigures {
  readonly engine: string
  readonly flavour: Flavour
  readonly workloads: ReadonlyArray<ChildWorkload>
}

/** Bytes allocated while `f` runs: freed by the GCs in between plus the heap's growth. */
const allocatedDuring = async (f: () => Promise<void>): Promise<number> => {
  const profiler = new v8.GCProfiler()
  profiler.start()
  const before = v8.getHeapStatistics().used_heap_size
  await f()
  const after = v8.getHeapStatistics().used_heap_size
  const { statistics } = profiler.stop()
  let freed = 0
  for (const gc of statistics) freed += gc.beforeGC.heapStatistics.usedHeapSize - gc.afterGC.heapStatistics.usedHeapSize
  return freed + after - before
}

const main = async (engine: Engine, flavour: Flavour, iterations: number, warmup: number, maxMs: number) => {
  const workloads: Array<ChildWorkload> = []
  for (const c of loopCases) {
    const long = await engine.prepare(c.long)
    const short = await engine.prepare(c.short)
    verify(engine.name, c.long, await long())
    verify(engine.name, c.short, await short())
    const warm = performance.now() + maxMs / 2
    for (let i = 0; i < warmup && (i < 3 || performance.now() < warm); i++) {
      await long()
      await short()
    }
    let longTotal = 0
    let shortTotal = 0
    let longCpu = 0
    let shortCpu = 0
    let runs = 0
    const deadline = performance.now() + maxMs
    while (runs < iterations && (runs < 10 || performance.now() < deadline)) {
      const c0 = process.cpuUsage()
      const t0 = performance.now()
      await long()
      const t1 = performance.now()
      const c1 = process.cpuUsage()
      await short()
      const t2 = performance.now()
      const c2 = process.cpuUsage()
      longTotal += t1 - t0
      shortTotal += t2 - t1
      longCpu += c1.user + c1.system - c0.user - c0.system
      shortCpu += c2.user + c2.system - c1.user - c1.system
      runs++
    }
    const allocRuns = Math.min(5, runs)
    const allocated = await allocatedDuring(async () => {
      for (let i = 0; i < allocRuns; i++) await long()
    })
    const longUs = (longTotal / runs) * 1000
    const shortUs = (shortTotal / runs) * 1000
    workloads.push({
      title: c.title,
      longUs,
      shortUs,
      marginalUs: (longUs - shortUs) / (c.long.steps - c.short.steps),
      marginalCpuUs: (longCpu - shortCpu) / runs / (c.long.steps - c.short.steps),
      allocatedBytes: allocated / allocRuns,
      runs
    })
  }
  const figures: ChildFigures = { engine: engine.name, flavour, workloads }
  process.stdout.write(`${JSON.stringify(figures)}\n`)
}

const [key = "", flavourArg = "", iterations = "50", warmup = "20", maxMs = "5000"] = process.argv.slice(2)
const flavour = flavours.find((f) => f === flavourArg)
const engine = flavour === undefined ? undefined : engines[key]?.[flavour]
if (engine === undefined || flavour === undefined) {
  process.stderr.write(
    `usage: childProcessEntry.js ${Object.keys(engines).join("|")} ${
      flavours.join("|")
    } [iterations] [warmup] [maxMsPerWorkload]\n`
  )
  process.exit(2)
}
main(engine, flavour, Number(iterations), Number(warmup), Number(maxMs)).then(() => process.exit(0), (e) => {
  process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`)
  process.exit(1)
})
