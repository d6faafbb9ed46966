/**
 * `npm run bench`: every benchmark, side by side with the peers, printed as
 * tables and written to docs/benchmarks.md. Bounded in time (< 10 minutes on the
 * project's 2-core machine).
 *
 * Env: `BENCH_QUICK=1` (fewer samples, smaller load levels — a smoke run),
 * `BENCH_ONLY=loop,process,alone,round,guard,selection,first,primitives,latency,durable,starts,sequential,curve,followers,cache,load,agents,memory` (a subset; the doc is only
 * written for a full run, or with `--merge`), `BENCH_LOAD_LEVELS=100,500,1000`, `BENCH_STARTS=1000` (the starts section's burst), and the latency
 * section's `BENCH_LATENCY_TTFT_MS`, `BENCH_LATENCY_TPS`, `BENCH_LATENCY_REPS`,
 * `BENCH_LATENCY_POLICIES` (bench/latency.ts).
 *
 * A full run also saves its raw figures to bench/results.json; `npm run bench --
 * --render` rewrites docs/benchmarks.md from that file without measuring again
 * (after editing bench/analysis.md). `BENCH_ONLY=… npm run bench -- --merge` measures only
 * those sections, replaces them in bench/results.json (the other sections keep their saved
 * figures) and rewrites the doc.
 *
 * @since 0.1.0
 */
import { readFileSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import { fileURLToPath } from "node:url"
import * as Agents from "./agents.js"
import * as Alone from "./alone.js"
import * as ChildProcess from "./childProcess.js"
import * as Concurrency from "./concurrency.js"
import * as ContextGuardBench from "./contextGuard.js"
import * as DurableStep from "./durableStep.js"
import * as FirstToken from "./firstToken.js"
import * as Followers from "./followers.js"
import { fmtUs, table } from "./harness.js"
import * as Latency from "./latency.js"
import * as Loop from "./loopOverhead.js"
import * as MemoryBench from "./memory.js"
import * as ParallelRound from "./parallelRound.js"
import * as agentsSdk from "./peers/agentsSdk.js"
import * as aiSdk from "./peers/aiSdk.js"
import * as ours from "./peers/ours.js"
import * as Primitives from "./primitives.js"
import * as PromptCache from "./promptCache.js"
import * as Report from "./report.js"
import type { Engine, Flavour } from "./scenario.js"
import { flavours } from "./scenario.js"
import * as ServerLoad from "./serverLoad.js"

const quick = process.env.BENCH_QUICK === "1"
const only = process.env.BENCH_ONLY?.split(",").map((s) => s.trim()).filter(Boolean)
const wants = (section: string) => only === undefined || only.includes(section)
/** How many runs the starts section POSTs at once (`BENCH_STARTS`, default 200). */
const starts = Number(process.env.BENCH_STARTS ?? (quick ? 50 : 200))
const levels = (process.env.BENCH_LOAD_LEVELS ?? (quick ? "50,100" : "100,500,1000")).split(",").map(Number)

const log = (line = "") => console.log(line)
const started = Date.now()
const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)} s`

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e))

const docPath = fileURLToPath(new URL("../docs/benchmarks.md", import.meta.url))
const resultsPath = fileURLToPath(new URL("./results.json", import.meta.url))

const main = async () => {
  if (process.argv.includes("--render")) {
    const saved = JSON.parse(readFileSync(resultsPath, "utf8")) as Report.Results
    writeFileSync(docPath, Report.markdown(saved))
    MemoryBench.splice(docPath)
    log(`rewrote ${docPath} from ${resultsPath}`)
    return
  }
  const loadBefore = os.loadavg()
  log(
    `Benchmarks — Node ${process.version}, ${os.cpus().length} × ${os.cpus()[0]?.model ?? "cpu"}, load ${
      loadBefore[0].toFixed(1)
    }`
  )
  log(quick ? "(quick mode: fewer samples)" : "")

  const results: {
    loop: Array<Loop.CaseResult>
    childProcess?: ChildProcess.Results
    round?: Array<ParallelRound.RoundFigures>
    guard?: Array<ContextGuardBench.GuardFigures>
    selection?: Report.Results["selection"]
    firstToken?: Report.Results["firstToken"]
    load?: Array<ServerLoad.LoadResult>
    primitives?: Array<Primitives.PrimitiveFigure>
    alone?: Array<Alone.AloneFigures>
    latency?: Report.Results["latency"]
    durable?: Report.Results["durable"]
    concurrency?: Concurrency.ConcurrencyResults
    promptCache?: Report.Results["promptCache"]
    followers?: Followers.FollowerFigures
    agents?: Report.Results["agents"]
  } = { loop: [] }
  if (wants("agents")) results.agents = await Agents.run(quick)

  if (wants("loop")) {
    // like with like: every engine of a case makes its loop calls the same way (bench/scenario.ts `Flavour`)
    const loopEngines: Record<Flavour, ReadonlyArray<Engine>> = {
      generate: [ours.engine, aiSdk.engine, agentsSdk.engine],
      stream: [ours.streamEngine, aiSdk.streamEngine, agentsSdk.streamEngine]
    }
    for (const flavour of flavours) {
      for (const c of Loop.cases) {
        log(`\n## Loop overhead (${flavour}): ${c.title} [${elapsed()}]`)
        const result = await Loop.runCase(loopEngines[flavour], c, {
          flavour,
          // 250 rounds where runs are short: the 10 × 4 case's slope comes from 8 extra steps, and with
          // 80 rounds its median moved by a quarter from one run of the bench to the next
          warmup: quick ? 2 : 20,
          samples: quick ? 12 : 250,
          afterGcRounds: quick ? 2 : 5,
          maxMsPerCase: quick ? 15_000 : 45_000,
          allocRepeats: quick ? 1 : 3,
          log
        })
        results.loop.push(result)
        log(Loop.render(result, ours.engine.name))
      }
    }
  }

  if (wants("process")) {
    // the second method of the loop figures: each engine in a fresh node process, wall clock, interleaved rounds
    log(`\n## Loop overhead, each engine in its own child process, wall clock, interleaved rounds [${elapsed()}]`)
    results.childProcess = await ChildProcess.run({
      rounds: quick ? 2 : 5,
      iterations: quick ? 12 : 50,
      warmup: quick ? 3 : 20,
      maxMsPerWorkload: quick ? 2_000 : 6_000,
      log
    })
    log(ChildProcess.render(results.childProcess, ours.engine.name))
  }

  if (wants("alone")) {
    log(`\n## Loop overhead, each engine alone in its own process [${elapsed()}]`)
    results.alone = await Alone.runAlone({ quick })
    for (const a of results.alone) {
      log(
        a.error
          ? `${a.engine}: ${a.error}`
          : `${a.engine}: ${
            a.cases.map((c) => `${c.title}: ${fmtUs(c.perIterationUs)} µs/iteration, marginal ${fmtUs(c.marginalUs)}`)
              .join("; ")
          }`
      )
    }
  }

  if (wants("round")) {
    log(`\n## Parallel tool round (8 × 50 ms) [${elapsed()}]`)
    results.round = await ParallelRound.run(quick ? 3 : 10)
    log(
      table(
        ["engine", "round (ms)", "÷ 50 ms"],
        results.round.map((r) => [r.engine, r.error ?? r.medianMs.toFixed(1), r.ratio.toFixed(2)])
      )
    )
  }

  if (wants("guard")) {
    log(`\n## Context guard cost [${elapsed()}]`)
    results.guard = ContextGuardBench.run({ checks: quick ? 50 : 200 })
    log(
      table(
        ["messages", "warm µs", "cold µs"],
        results.guard.map((g) => [String(g.messages), fmtUs(g.warmUs), fmtUs(g.coldUs)])
      )
    )
  }

  if (wants("selection")) {
    log(`\n## Tool selection [${elapsed()}]`)
    try {
      const selection = await import("./toolSelection.js")
      const figures = await selection.run({ samples: quick ? 50 : 300 })
      results.selection = figures
      log(selection.render(figures))
    } catch (e) {
      results.selection = errorText(e)
      log(`not measured: ${results.selection}`)
    }
  }

  if (wants("first")) {
    log(`\n## First-token forwarding [${elapsed()}]`)
    try {
      const f = await FirstToken.run(quick ? 10 : 40)
      results.firstToken = f
      log(`p50 ${f.p50Ms.toFixed(2)} ms, p99 ${f.p99Ms.toFixed(2)} ms, max ${f.maxMs.toFixed(2)} ms`)
    } catch (e) {
      results.firstToken = errorText(e)
      log(`not measured: ${results.firstToken}`)
    }
  }

  if (wants("primitives")) {
    log(`\n## Effect primitives on this machine [${elapsed()}]`)
    results.primitives = await Primitives.run(quick)
    log(table(["operation", "CPU µs"], results.primitives.map((p) => [p.name, fmtUs(p.us)])))
  }

  if (wants("latency")) {
    const settings = Latency.settingsFrom(process.argv.slice(2), process.env, quick)
    log(
      `\n## Latency a user feels: TTFT ${settings.ttftMs} ms, ${settings.tokensPerSecond} tokens/s, ${settings.reps} runs each [${elapsed()}]`
    )
    try {
      const f = await Latency.run(settings, log)
      results.latency = f
      log(Latency.render(f))
      for (const n of f.notes) log(n)
    } catch (e) {
      results.latency = errorText(e)
      log(`not measured: ${results.latency}`)
    }
  }

  if (wants("durable")) {
    log(`\n## Cost of durability per loop iteration [${elapsed()}]`)
    const d = await DurableStep.run({ samples: quick ? 3 : 10 })
    results.durable = d
    for (const x of d.databases) {
      log(
        x.error !== undefined
          ? `${x.database}: ${x.error}`
          : `${x.database}: ${x.marginalMs!.toFixed(1)} ms per iteration (2 steps ${
            x.shortMs!.toFixed(0)
          } ms, 22 steps ${x.longMs!.toFixed(0)} ms)`
      )
    }
    for (const [where, e] of [["SQLite", d.engine], ["PostgreSQL", d.enginePostgres]] as const) {
      if (e === undefined) continue
      log(
        typeof e === "string"
          ? `engine alone (${where}): ${e}`
          : `engine alone (${where}): ${e.activityWallMs.toFixed(2)} ms wall / ${
            e.activityCpuMs.toFixed(2)
          } ms CPU per activity, ${(e.parkedBytes / 1024).toFixed(0)} KB per workflow parked in an activity${
            e.parkedInBodyBytes === undefined ? "" : `, ${(e.parkedInBodyBytes / 1024).toFixed(0)} KB in its body`
          }`
      )
    }
    for (const line of DurableStep.floorLines(d)) log(line)
  }

  // durable runs on SQLite as a user feels them: 200 starts at once, 2,000 in a row, one of 200 steps
  const parts: Array<[string, string, () => Promise<unknown>]> = [
    [
      "starts",
      `${starts} durable runs started at once`,
      () =>
        Concurrency.starts(
          starts,
          process.env.REACT_MAX_ACTIVE_RUNS ? { REACT_MAX_ACTIVE_RUNS: process.env.REACT_MAX_ACTIVE_RUNS } : {}
        )
    ],
    [
      "sequential",
      "2,000 sequential durable runs and the memory curve",
      () => Concurrency.sequential(quick ? 300 : 2000)
    ],
    ["curve", "cost per step over one 200-step durable run", () => Concurrency.curve()]
  ]
  for (const [key, title, measure] of parts) {
    if (!wants(key)) continue
    log(`\n## ${title} [${elapsed()}]`)
    const figure = await measure().catch(errorText)
    results.concurrency = { ...results.concurrency, [key]: figure }
    for (const line of Concurrency.lines({ [key]: figure })) log(line)
  }

  if (wants("followers")) {
    log(`\n## Idle followers: what one more SSE client of a run costs the server [${elapsed()}]`)
    results.followers = await Followers.run({ runs: 10, followers: quick ? 200 : 1000 })
    log(Followers.line(results.followers))
  }

  if (wants("cache")) {
    log(
      `\n## Prompt caching: ${PromptCache.TURNS} turns × ${PromptCache.ROUNDS} tool rounds, ${PromptCache.TOOLS} tools, Anthropic fake [${elapsed()}]`
    )
    try {
      const c = await PromptCache.run()
      results.promptCache = c
      log(PromptCache.render(c))
    } catch (e) {
      results.promptCache = errorText(e)
      log(`not measured: ${results.promptCache}`)
    }
  }

  if (wants("load")) {
    results.load = []
    for (const n of levels) {
      log(`\n## Server under load: ${n} concurrent SSE runs [${elapsed()}]`)
      const r = await ServerLoad.runLevel(n, { timeoutMs: quick ? 30_000 : n >= 1000 ? 300_000 : 90_000 })
      results.load.push(r)
      log(
        r.error
          ? `error: ${r.error}`
          : `completed ${r.completed}/${n} in ${(r.wallMs / 1000).toFixed(1)} s, delivery p50 ${
            r.p50Ms.toFixed(1)
          } ms p99 ${r.p99Ms.toFixed(1)} ms, heap/run ${(r.heapPerRunBytes / 1024).toFixed(0)} KB, rss/run ${
            (r.rssPerRunBytes / 1024).toFixed(0)
          } KB, active after disconnect ${r.activeAfterDisconnect}${r.note ? ` (${r.note})` : ""}`
      )
    }
  }

  if (wants("memory")) {
    log(`\n## Memory recall [${elapsed()}]`)
    const figures = await MemoryBench.run(quick)
    MemoryBench.save(figures, docPath)
    log(MemoryBench.render(figures))
  }

  const loadAfter = os.loadavg()
  const report: Report.Results = {
    env: {
      date: new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC",
      node: process.version,
      cpu: os.cpus()[0]?.model ?? "cpu",
      cores: os.cpus().length,
      loadBefore,
      loadAfter,
      totalSeconds: (Date.now() - started) / 1000
    },
    ours: ours.engine.name,
    ...results
  }
  log("\n## Ratios (peer ÷ ours; > 1× means we are faster / lighter)")
  for (const line of Report.summary(report)) log(line)
  if (only === undefined) {
    writeFileSync(resultsPath, JSON.stringify(report, null, 1))
    writeFileSync(docPath, Report.markdown(report))
    MemoryBench.splice(docPath)
    log(`\nwrote ${docPath} and ${resultsPath} [${elapsed()}]`)
  } else if (process.argv.includes("--merge")) {
    // Only the sections measured now are replaced; the rest (and the run header) stay as saved.
    const saved = JSON.parse(readFileSync(resultsPath, "utf8")) as Report.Results
    const measured = Object.fromEntries(
      Object.entries(results).filter(([key, value]) => value !== undefined && !(key === "loop" && !wants("loop")))
    )
    const now = new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC"
    const merged: Report.Results = {
      ...saved,
      ...measured,
      // the durable-run parts (starts, sequential, curve) are measured one by one
      ...(results.concurrency !== undefined ? { concurrency: { ...saved.concurrency, ...results.concurrency } } : {}),
      env: {
        ...saved.env,
        merged: { ...saved.env.merged, ...Object.fromEntries(Object.keys(measured).map((key) => [key, now])) }
      }
    }
    writeFileSync(resultsPath, JSON.stringify(merged, null, 1))
    writeFileSync(docPath, Report.markdown(merged))
    MemoryBench.splice(docPath)
    log(`\nmerged ${Object.keys(measured).join(", ")} into ${resultsPath} and rewrote ${docPath} [${elapsed()}]`)
  } else {
    log(`\n(BENCH_ONLY set: docs/benchmarks.md not written) [${elapsed()}]`)
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  }
)
