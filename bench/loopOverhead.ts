/**
 * Loop overhead vs peers: the same scripted conversations run by every engine,
 * interleaved round-robin in one process. Reports, per engine and scenario:
 *
 * - per iteration: median run time / loop LLM calls (steps + final answer);
 * - marginal per iteration: (median T(long) − median T(short)) / (extra steps),
 *   which cancels fixed per-run costs (setup, our synthesis call);
 * - bytes allocated per long run (V8 sampling heap profiler, garbage included).
 *
 * Runs are timed in batches (one full GC before each batch, then consecutive
 * runs that pay for their own garbage, as in a process that keeps running); the
 * first run of a batch is reported apart (`harness.timeBatch`).
 *
 * Times are taken both as wall time and as process CPU time (user + system):
 * with a zero-latency model a run is pure CPU work, and CPU time is what stays
 * meaningful when other processes compete for the cores.
 *
 * @since 0.1.0
 */
import type { Engine, Scenario } from "./scenario.js"
import { verify } from "./scenario.js"
import { allocated, fmtBytes, fmtRatio, fmtUs, interleavedBatches, median, table } from "./harness.js"

/** @since 0.1.0 */
export interface Case {
  readonly title: string
  readonly long: Scenario
  readonly short: Scenario
}

/** @since 0.1.0 */
export const cases: ReadonlyArray<Case> = [
  {
    title: "50 sequential single-tool steps",
    long: { name: "seq50", steps: 50, calls: 1, resultChars: 0 },
    short: { name: "seq10", steps: 10, calls: 1, resultChars: 0 }
  },
  {
    title: "50 sequential steps, 20 KB tool results",
    long: { name: "seq50-20k", steps: 50, calls: 1, resultChars: 20 * 1024 },
    short: { name: "seq10-20k", steps: 10, calls: 1, resultChars: 20 * 1024 }
  },
  {
    title: "10 steps × 4 parallel tool calls",
    long: { name: "par10x4", steps: 10, calls: 4, resultChars: 0 },
    short: { name: "par2x4", steps: 2, calls: 4, resultChars: 0 }
  }
]

/** @since 0.1.0 */
export interface EngineFigures {
  readonly engine: string
  /** Median CPU time of a long run. */
  readonly runUs: number
  /** CPU µs per loop LLM call. */
  readonly perIterationUs: number
  /** CPU µs per extra step (slope between the long and the short run). */
  readonly marginalUs: number
  /** Wall-clock µs per loop LLM call. */
  readonly wallPerIterationUs: number
  /** CPU µs per extra step of the first run after a full GC (V8 has discarded optimized code). */
  readonly afterGcMarginalUs?: number
  readonly allocatedBytes: number
  readonly samples: number
  readonly error?: string
}

/** @since 0.1.0 */
export interface CaseResult {
  readonly case: Case
  readonly figures: ReadonlyArray<EngineFigures>
}

/** @since 0.1.0 */
export interface Options {
  readonly warmup: number
  readonly samples: number
  /** Time cap for the timed rounds of one case. */
  readonly maxMsPerCase: number
  readonly allocRepeats: number
  /** Runs per timed batch (the first after a full GC, reported apart). */
  readonly batch: number
  readonly log: (line: string) => void
}

const failed = (engine: string, error: unknown): EngineFigures => ({
  engine,
  runUs: Number.NaN,
  perIterationUs: Number.NaN,
  marginalUs: Number.NaN,
  wallPerIterationUs: Number.NaN,
  allocatedBytes: Number.NaN,
  samples: 0,
  error: error instanceof Error ? error.message : String(error)
})

/** @since 0.1.0 */
export const runCase = async (engines: ReadonlyArray<Engine>, c: Case, options: Options): Promise<CaseResult> => {
  const ready: Array<{ engine: Engine; long: () => Promise<unknown>; short: () => Promise<unknown> }> = []
  const figures: Array<EngineFigures> = []
  for (const engine of engines) {
    try {
      const long = await engine.prepare(c.long)
      const short = await engine.prepare(c.short)
      verify(engine.name, c.long, await long())
      verify(engine.name, c.short, await short())
      ready.push({ engine, long, short })
    } catch (e) {
      options.log(`  ${engine.name}: ${e instanceof Error ? e.message : String(e)}`)
      figures.push(failed(engine.name, e))
    }
  }
  const fns = ready.flatMap((r) => [r.long, r.short])
  const samples = await interleavedBatches(fns, {
    warmup: options.warmup,
    samples: options.samples,
    size: options.batch,
    maxMs: options.maxMsPerCase
  })
  const iterations = c.long.steps + 1
  const extra = c.long.steps - c.short.steps
  for (let i = 0; i < ready.length; i++) {
    const long = median(samples[2 * i].map((x) => x.steady.cpu))
    const short = median(samples[2 * i + 1].map((x) => x.steady.cpu))
    const wall = median(samples[2 * i].map((x) => x.steady.wall))
    const afterGc = (median(samples[2 * i].map((x) => x.first.cpu)) - median(samples[2 * i + 1].map((x) => x.first.cpu))) / extra
    const alloc = await allocated(ready[i].long, options.allocRepeats)
    figures.push({
      engine: ready[i].engine.name,
      runUs: long,
      perIterationUs: long / iterations,
      marginalUs: (long - short) / extra,
      wallPerIterationUs: wall / iterations,
      afterGcMarginalUs: afterGc,
      allocatedBytes: alloc,
      samples: samples[2 * i].length
    })
  }
  figures.sort((a, b) => engines.findIndex((e) => e.name === a.engine) - engines.findIndex((e) => e.name === b.engine))
  return { case: c, figures }
}

/** The markdown table of one case; ratios are peer ÷ ours (> 1 means we are faster / lighter). @since 0.1.0 */
export const render = (result: CaseResult, ours: string): string => {
  const base = result.figures.find((f) => f.engine === ours)
  const ratio = (x: number, b: number | undefined) => (b === undefined || Number.isNaN(b) ? "n/a" : fmtRatio(x / b))
  const rows = result.figures.map((f) =>
    f.error !== undefined
      ? [f.engine, "failed", "", "", "", "", "", "", "", "", ""]
      : [
        f.engine,
        fmtUs(f.runUs / 1000),
        fmtUs(f.perIterationUs),
        f.engine === ours ? "—" : ratio(f.perIterationUs, base?.perIterationUs),
        fmtUs(f.marginalUs),
        f.engine === ours ? "—" : ratio(f.marginalUs, base?.marginalUs),
        f.afterGcMarginalUs === undefined ? "n/a" : fmtUs(f.afterGcMarginalUs),
        fmtUs(f.wallPerIterationUs),
        fmtBytes(f.allocatedBytes),
        f.engine === ours ? "—" : ratio(f.allocatedBytes, base?.allocatedBytes),
        String(f.samples)
      ]
  )
  return table(
    [
      "engine",
      "CPU ms / run",
      "CPU µs / iteration",
      "peer ÷ ours",
      "marginal CPU µs / step",
      "peer ÷ ours",
      "marginal, 1st run after full GC",
      "wall µs / iteration",
      "allocated / run",
      "peer ÷ ours",
      "runs"
    ],
    rows
  )
}
