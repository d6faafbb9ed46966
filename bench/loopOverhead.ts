/**
 * Loop overhead vs peers: the same scripted conversations run by every engine,
 * interleaved round-robin in one process. Reports, per engine and scenario:
 *
 * - per iteration: median run time / loop LLM calls (steps + final answer);
 * - marginal per iteration: (median T(long) − median T(short)) / (extra steps),
 *   which cancels fixed per-run costs (setup, our synthesis call);
 * - bytes allocated per long run (V8 sampling heap profiler, garbage included).
 *
 * A case is run once per flavour (bench/scenario.ts `Flavour`): every engine of a run makes its
 * loop calls the same way, non-streamed (`generate`) or streamed (`stream`).
 *
 * Runs are timed one at a time, round-robin across the engines, without forced
 * GCs: each run pays for the collections V8 runs while it goes, as in a process
 * that keeps running (`harness.interleaved`). The first run after a forced full
 * GC is timed apart and reported in its own column (`harness.afterFullGc`).
 *
 * Times are taken both as wall time and as process CPU time (user + system):
 * with a zero-latency model a run is pure CPU work, and CPU time is what stays
 * meaningful when other processes compete for the cores.
 *
 * @since 0.1.0
 */
import type { GcCounts } from "./harness.js"
import {
  afterFullGc,
  allocated,
  countingGcs,
  fmtBytes,
  fmtRatio,
  fmtUs,
  interleaved,
  median,
  table
} from "./harness.js"
import type { Case, Engine, Flavour } from "./scenario.js"
import { loopCases, verify } from "./scenario.js"

/** The loop workloads (w1, w2, w3), defined in bench/scenario.ts. @since 0.1.0 */
export type { Case } from "./scenario.js"
/** @since 0.1.0 */
export const cases = loopCases

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
  /** How every engine of this case made its loop calls (absent in results saved before the flavours: generate). */
  readonly flavour?: Flavour
  readonly figures: ReadonlyArray<EngineFigures>
  /** The collections V8 ran by itself during the timed runs (warm-up included), and how many runs. */
  readonly gcs?: GcCounts & { readonly runs: number }
}

/** @since 0.1.0 */
export interface Options {
  readonly flavour: Flavour
  readonly warmup: number
  readonly samples: number
  /** Time cap for the timed rounds of one case. */
  readonly maxMsPerCase: number
  readonly allocRepeats: number
  /** Runs of each function right after a forced full GC (reported apart). */
  readonly afterGcRounds: number
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
  const { gcs, result: samples } = await countingGcs(() =>
    interleaved(fns, {
      warmup: options.warmup,
      samples: options.samples,
      maxMs: options.maxMsPerCase
    })
  )
  const cold = await afterFullGc(fns, options.afterGcRounds)
  const iterations = c.long.steps + 1
  const extra = c.long.steps - c.short.steps
  const cpu = (xs: ReadonlyArray<{ readonly cpu: number }>) => median(xs.map((x) => x.cpu))
  for (let i = 0; i < ready.length; i++) {
    const long = cpu(samples[2 * i])
    const short = cpu(samples[2 * i + 1])
    const wall = median(samples[2 * i].map((x) => x.wall))
    const afterGc = (cpu(cold[2 * i]) - cpu(cold[2 * i + 1])) / extra
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
  const runs = options.warmup * fns.length + samples.reduce((n, xs) => n + xs.length, 0)
  return { case: c, flavour: options.flavour, figures, gcs: { ...gcs, runs } }
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
  const gcs = result.gcs
  const note = gcs === undefined
    ? ""
    : `\n\nGCs V8 ran by itself during the ${gcs.runs} runs (warm-up included, all engines): ${gcs.minor} minor, ${gcs.full} full.`
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
  ) + note
}
