/**
 * Loop overhead, the second method: each engine in its own child process, wall clock,
 * interleaved rounds — what a harness outside the engine sees. Each round runs every engine
 * once, the engines' order rotated from round to round (so a load spike from other processes
 * does not always hit the same engine), each in a fresh plain `node` process
 * (bench/childProcessEntry.ts) that loads the built package or the peer's library, warms up,
 * then times N runs of each loop workload (w1, w2, w3) and reports the marginal wall µs per
 * iteration and the bytes allocated per run. Per engine and workload the figure is the median
 * over the rounds (min and max shown).
 *
 * Every engine runs in both flavours (bench/scenario.ts `Flavour`), each a child of its own in
 * every round: `generate` (non-streamed loop calls) and `stream` (streamed loop calls); ours is
 * compared with the peers of the same flavour only.
 *
 * The child runs compiled JavaScript: the entry and the harness files it imports
 * (bench/peers/*.ts, bench/scenario.ts) are transpiled by TypeScript into bench/.child/ first
 * (type-only syntax removed, nothing else changed), so the child has no tsx loader and no
 * `__name(…)` wrapping in it. `effect-react-engine` resolves to the built package (dist/), as an
 * installed dependency does: `npm run bench` builds it first.
 *
 * @since 0.1.0
 */
import { execFile } from "node:child_process"
import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import * as os from "node:os"
import { dirname, join, normalize, relative } from "node:path"
import { fileURLToPath } from "node:url"
import type * as TypeScript from "typescript"
import type { ChildFigures } from "./childProcessEntry.js"
import { fmtBytes, fmtUs, median, table } from "./harness.js"
import type { Flavour } from "./scenario.js"
import { flavours, loopCases } from "./scenario.js"

const benchDir = fileURLToPath(new URL(".", import.meta.url))
const childDir = join(benchDir, ".child")
const ENTRY = "childProcessEntry.ts"

/** The workloads in label order (w1, w2, w3). */
const workloads = [...loopCases].sort((a, b) => a.label.localeCompare(b.label))

/** The engines, by the key the child takes, in the order of the first round. @since 0.1.0 */
export const engineKeys = ["ours", "aiSdk", "agentsSdk"] as const

/** @since 0.1.0 */
export interface Options {
  readonly rounds: number
  /** Timed runs of each scenario per workload and child (fewer when `maxMsPerWorkload` passes first; at least 10). */
  readonly iterations: number
  /** Untimed runs of each scenario per workload first. */
  readonly warmup: number
  readonly maxMsPerWorkload: number
  readonly log: (line: string) => void
}

/** One engine on one workload, over the rounds. @since 0.1.0 */
export interface WorkloadFigures {
  readonly title: string
  /** Median over the rounds of each child's marginal wall µs per iteration; min and max. */
  readonly marginalUs: number
  readonly marginalMinUs: number
  readonly marginalMaxUs: number
  /** Median over the rounds of the same children's marginal CPU µs per iteration. */
  readonly marginalCpuUs: number
  /** Median over the rounds of the bytes allocated per long run. */
  readonly allocatedBytes: number
  /** Timed runs per child (median). */
  readonly runs: number
}

/** @since 0.1.0 */
export interface EngineFigures {
  readonly engine: string
  /** How this engine made its loop calls (absent in results saved before the flavours: generate). */
  readonly flavour?: Flavour
  readonly workloads: ReadonlyArray<WorkloadFigures>
  /** Children that failed (their message), if any. */
  readonly errors?: ReadonlyArray<string>
}

/** @since 0.1.0 */
export interface Results {
  /** The 1-minute load average when the rounds started and ended (other processes competing for the cores). */
  readonly loadBefore?: number
  readonly loadAfter?: number
  readonly rounds: number
  readonly iterations: number
  readonly warmup: number
  readonly engines: ReadonlyArray<EngineFigures>
}

/** Transpiles the child's entry and the bench files it imports into bench/.child/ (JavaScript, same layout). @since 0.1.0 */
export const prepare = (): string => {
  const ts = createRequire(import.meta.url)("typescript") as typeof TypeScript
  mkdirSync(childDir, { recursive: true })
  writeFileSync(
    join(childDir, ".gitignore"),
    "# bench/childProcess.ts: the child's JavaScript, transpiled from bench/\n*\n"
  )
  const pending = [ENTRY]
  const done = new Set<string>()
  while (pending.length > 0) {
    const file = pending.pop()!
    if (done.has(file)) continue
    done.add(file)
    const source = readFileSync(join(benchDir, file), "utf8")
    for (const { fileName } of ts.preProcessFile(source, true, true).importedFiles) {
      if (!fileName.startsWith(".")) continue
      const target = normalize(join(dirname(file), fileName.replace(/\.js$/, ".ts")))
      if (relative(".", target).startsWith("..")) throw new Error(`${file} imports ${fileName}, outside bench/`)
      pending.push(target)
    }
    const { outputText } = ts.transpileModule(source, {
      fileName: file,
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false }
    })
    const out = join(childDir, file.replace(/\.ts$/, ".js"))
    mkdirSync(dirname(out), { recursive: true })
    writeFileSync(out, outputText)
  }
  return join(childDir, ENTRY.replace(/\.ts$/, ".js"))
}

const runChild = (entry: string, key: string, flavour: Flavour, options: Options): Promise<ChildFigures | string> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      [entry, key, flavour, String(options.iterations), String(options.warmup), String(options.maxMsPerWorkload)],
      { cwd: join(benchDir, ".."), maxBuffer: 16 * 1024 * 1024, timeout: 10 * 60_000 },
      (error, stdout, stderr) => {
        if (error) {
          return resolve(`${key} (${flavour}): ${stderr.trim().split("\n").slice(-3).join(" ") || error.message}`)
        }
        try {
          resolve(JSON.parse(stdout.trim().split("\n").pop() ?? "") as ChildFigures)
        } catch {
          resolve(`${key} (${flavour}): no figures on stdout`)
        }
      }
    )
  })

/** Runs the rounds (bench/.child/ transpiled first). @since 0.1.0 */
export const run = async (options: Options): Promise<Results> => {
  const entry = prepare()
  const loadBefore = os.loadavg()[0]
  // one child per engine and flavour in every round, the order rotated from round to round
  const children = flavours.flatMap((flavour) => engineKeys.map((key) => ({ key, flavour, id: `${key}/${flavour}` })))
  const collected = new Map<
    string,
    { name: string; flavour: Flavour; children: Array<ChildFigures>; errors: Array<string> }
  >(
    children.map(({ flavour, id, key }) => [id, { name: key, flavour, children: [], errors: [] }])
  )
  for (let round = 0; round < options.rounds; round++) {
    const order = children.map((_, i) => children[(i + round) % children.length])
    for (const { flavour, id, key } of order) {
      const started = Date.now()
      const figures = await runChild(entry, key, flavour, options)
      const slot = collected.get(id)!
      if (typeof figures === "string") {
        slot.errors.push(figures)
        options.log(`  round ${round + 1}, ${id}: ${figures}`)
        continue
      }
      slot.name = figures.engine
      slot.children.push(figures)
      options.log(
        `  round ${round + 1}, ${figures.engine}, ${flavour} (${((Date.now() - started) / 1000).toFixed(1)} s): ${
          workloads.map((c) => {
            const w = figures.workloads.find((x) => x.title === c.title)
            return w === undefined
              ? `${c.label} n/a`
              : `${c.label} ${fmtUs(w.marginalUs)} µs wall, ${fmtUs(w.marginalCpuUs)} CPU, ${
                fmtBytes(w.allocatedBytes)
              }`
          }).join(" | ")
        }`
      )
    }
  }
  const engines = [...collected.values()].map(({ children, errors, flavour, name }): EngineFigures => ({
    engine: name,
    flavour,
    workloads: children.length === 0 ? [] : workloads.map((c) => {
      const ws = children.map((child) => child.workloads.find((w) => w.title === c.title)!)
      const marginals = ws.map((w) => w.marginalUs)
      return {
        title: c.title,
        marginalUs: median(marginals),
        marginalMinUs: Math.min(...marginals),
        marginalMaxUs: Math.max(...marginals),
        marginalCpuUs: median(ws.map((w) => w.marginalCpuUs)),
        allocatedBytes: median(ws.map((w) => w.allocatedBytes)),
        runs: median(ws.map((w) => w.runs))
      }
    }),
    ...(errors.length > 0 ? { errors } : {})
  }))
  return {
    loadBefore,
    loadAfter: os.loadavg()[0],
    rounds: options.rounds,
    iterations: options.iterations,
    warmup: options.warmup,
    engines
  }
}

/** The engines of one flavour (results saved before the flavours count as generate). @since 0.1.0 */
export const ofFlavour = (r: Results, flavour: Flavour): ReadonlyArray<EngineFigures> =>
  r.engines.filter((e) => (e.flavour ?? "generate") === flavour)

/** Ours ÷ the fastest peer of the same flavour on one workload (below 1: we are faster), with that peer. @since 0.1.0 */
export const againstFastest = (r: Results, ours: string, title: string, flavour: Flavour) => {
  const figure = (e: EngineFigures) => e.workloads.find((w) => w.title === title)
  const engines = ofFlavour(r, flavour)
  const mine = engines.find((e) => e.engine === ours)
  const oursFigure = mine && figure(mine)
  const peers = engines.filter((e) => e.engine !== ours).flatMap((e) => {
    const f = figure(e)
    return f === undefined || Number.isNaN(f.marginalUs) ? [] : [{ engine: e.engine, ...f }]
  })
  if (oursFigure === undefined || peers.length === 0) return undefined
  const fastest = peers.reduce((a, b) => (b.marginalUs < a.marginalUs ? b : a))
  const lightest = peers.reduce((a, b) => (b.allocatedBytes < a.allocatedBytes ? b : a))
  const leanest = peers.reduce((a, b) => (b.marginalCpuUs < a.marginalCpuUs ? b : a))
  return {
    ours: oursFigure,
    peer: fastest.engine,
    theirs: fastest.marginalUs,
    ratio: oursFigure.marginalUs / fastest.marginalUs,
    cpuPeer: leanest.engine,
    cpuRatio: oursFigure.marginalCpuUs / leanest.marginalCpuUs,
    lightestPeer: lightest.engine,
    allocationRatio: oursFigure.allocatedBytes / lightest.allocatedBytes
  }
}

/** How each flavour is named in the tables. @since 0.1.0 */
export const flavourTitle: Record<Flavour, string> = {
  generate: "generate: non-streamed loop calls (ours: synthesis `always`; AI SDK: `generateText`; Agents SDK: `run`)",
  stream:
    "stream: streamed loop calls (ours: synthesis `auto`, our default; AI SDK: `streamText`; Agents SDK: `run(…, { stream: true })`)"
}

/** The section's tables (markdown, also the terminal's), one set per flavour. @since 0.1.0 */
export const render = (r: Results, ours: string): string => {
  const load = `Load average (1 min) when the rounds started / ended: ${r.loadBefore?.toFixed(1) ?? "n/a"} / ${
    r.loadAfter?.toFixed(1) ?? "n/a"
  }.`
  const present = flavours.filter((f) => ofFlavour(r, f).length > 0)
  return [load, ...present.map((f) => `#### ${flavourTitle[f]}\n\n${renderFlavour(r, ours, f)}`)].join("\n\n")
}

const renderFlavour = (r: Results, ours: string, flavour: Flavour): string => {
  const engines = ofFlavour(r, flavour)
  const titles = workloads.map((c) => c.title)
  const head = workloads.map((c) => `${c.label}: ${c.title}`)
  const cell = (e: EngineFigures, t: string, f: (w: WorkloadFigures) => string) => {
    const w = e.workloads.find((x) => x.title === t)
    return w === undefined ? (e.errors?.[0] ?? "n/a") : f(w)
  }
  const marginal = table(
    ["engine", ...head],
    engines.map((
      e
    ) => [
      e.engine,
      ...titles.map((t) =>
        cell(e, t, (w) => `${fmtUs(w.marginalUs)} (${fmtUs(w.marginalMinUs)}–${fmtUs(w.marginalMaxUs)})`)
      )
    ])
  )
  const cpu = table(
    ["engine", ...head],
    engines.map((e) => [e.engine, ...titles.map((t) => cell(e, t, (w) => fmtUs(w.marginalCpuUs)))])
  )
  const allocation = table(
    ["engine", ...head],
    engines.map((e) => [e.engine, ...titles.map((t) => cell(e, t, (w) => fmtBytes(w.allocatedBytes)))])
  )
  const ratios = table(
    [`ours ÷ fastest peer (${flavour})`, ...head],
    [
      [
        "marginal wall µs / iteration",
        ...titles.map((t) => {
          const a = againstFastest(r, ours, t, flavour)
          return a ? `${a.ratio.toFixed(2)} × (${a.peer})` : "n/a"
        })
      ],
      [
        "marginal CPU µs / iteration",
        ...titles.map((t) => {
          const a = againstFastest(r, ours, t, flavour)
          return a ? `${a.cpuRatio.toFixed(2)} × (${a.cpuPeer})` : "n/a"
        })
      ],
      [
        "allocated / run (÷ lightest peer)",
        ...titles.map((t) => {
          const a = againstFastest(r, ours, t, flavour)
          return a ? `${a.allocationRatio.toFixed(2)} × (${a.lightestPeer})` : "n/a"
        })
      ]
    ]
  )
  const runs = engines.map((e) => `${e.engine} ${e.workloads.map((w) => w.runs).join("/")}`).join(", ")
  return `Marginal wall µs per iteration, median of ${r.rounds} rounds (min–max over the rounds):\n\n${marginal}\n\nMarginal CPU µs per iteration of the same runs (process CPU time, user + system; median of the rounds):\n\n${cpu}\n\nAllocated per long run (median of the rounds):\n\n${allocation}\n\n${ratios}\n\nTimed runs of each scenario per child (w1/w2/w3): ${runs}.`
}
