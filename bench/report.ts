/**
 * Renders the benchmark results as docs/benchmarks.md (and the terminal tables).
 *
 * @since 0.1.0
 */
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import type { AgentsResults } from "./agents.js"
import { section as agentsSection } from "./agents.js"
import type { AloneFigures } from "./alone.js"
import type { Results as ChildProcessResults } from "./childProcess.js"
import { againstFastest as childAgainstFastest, ofFlavour, render as renderChildProcess } from "./childProcess.js"
import * as Concurrency from "./concurrency.js"
import type { GuardFigures } from "./contextGuard.js"
import type { DurableResults, EngineFigures } from "./durableStep.js"
import { floorRatios } from "./durableStep.js"
import type { FirstTokenFigures } from "./firstToken.js"
import type { FollowerFigures } from "./followers.js"
import { section as followersSection } from "./followers.js"
import { fmtBytes, fmtRatio, fmtUs, table } from "./harness.js"
import type { LatencyFigures } from "./latency.js"
import { markdownSection as latencySection, targetRows as latencyTargets } from "./latency.js"
import type { CaseResult } from "./loopOverhead.js"
import { render as renderLoop } from "./loopOverhead.js"
import type { RoundFigures } from "./parallelRound.js"
import type { PrimitiveFigure } from "./primitives.js"
import type { PromptCacheResults } from "./promptCache.js"
import { render as renderPromptCache } from "./promptCache.js"
import type { Flavour } from "./scenario.js"
import { flavours } from "./scenario.js"
import type { LoadResult } from "./serverLoad.js"
import type { ToolSelectionFigures } from "./toolSelection.js"
import { render as renderSelection } from "./toolSelection.js"

/** @since 0.1.0 */
export interface Environment {
  readonly date: string
  readonly node: string
  readonly cpu: string
  readonly cores: number
  readonly loadBefore: ReadonlyArray<number>
  readonly loadAfter: ReadonlyArray<number>
  readonly totalSeconds: number
  /** Sections re-measured after the run (`BENCH_ONLY=… --merge`), with when. */
  readonly merged?: Readonly<Record<string, string>>
}

/** @since 0.1.0 */
export interface Results {
  readonly env: Environment
  readonly ours: string
  readonly loop: ReadonlyArray<CaseResult>
  readonly round?: ReadonlyArray<RoundFigures>
  readonly guard?: ReadonlyArray<GuardFigures>
  readonly selection?: ToolSelectionFigures | string
  readonly firstToken?: FirstTokenFigures | string
  readonly load?: ReadonlyArray<LoadResult>
  readonly primitives?: ReadonlyArray<PrimitiveFigure>
  readonly alone?: ReadonlyArray<AloneFigures>
  /** The loop figures' second method: each engine in its own child process, wall clock (bench/childProcess.ts). */
  readonly childProcess?: ChildProcessResults
  readonly latency?: LatencyFigures | string
  readonly durable?: DurableResults
  readonly concurrency?: Concurrency.ConcurrencyResults
  readonly promptCache?: PromptCacheResults | string
  /** Heap and RSS per idle SSE follower (bench/followers.ts). */
  readonly followers?: FollowerFigures
  /** Sub-agents and A2A against a direct tool call (bench/agents.ts). */
  readonly agents?: AgentsResults
}

const ms = (x: number) => (Number.isNaN(x) ? "n/a" : x >= 100 ? x.toFixed(0) : x.toFixed(1))

/** A peer's figure beside ours, where we lose. @since 0.1.0 */
export interface Loss {
  readonly what: string
  readonly peer: string
  readonly ours: string
  readonly theirs: string
}

/** How a case's engines made their loop calls (results saved before the flavours: generate). */
const flavourOf = (c: CaseResult): Flavour => c.flavour ?? "generate"

/** Every figure where a peer does better than us. @since 0.1.0 */
export const losses = (r: Results): Array<Loss> => {
  const out: Array<Loss> = []
  for (const c of r.loop) {
    const base = c.figures.find((f) => f.engine === r.ours)
    if (base === undefined || base.error !== undefined) continue
    const title = `${c.case.title} (${flavourOf(c)})`
    for (const f of c.figures) {
      if (f.engine === r.ours || f.error !== undefined) continue
      if (f.perIterationUs < base.perIterationUs) {
        out.push({
          what: `${title}: CPU µs / iteration`,
          peer: f.engine,
          ours: fmtUs(base.perIterationUs),
          theirs: fmtUs(f.perIterationUs)
        })
      }
      if (f.marginalUs < base.marginalUs) {
        out.push({
          what: `${title}: marginal CPU µs / step`,
          peer: f.engine,
          ours: fmtUs(base.marginalUs),
          theirs: fmtUs(f.marginalUs)
        })
      }
      if (f.allocatedBytes < base.allocatedBytes) {
        out.push({
          what: `${title}: allocated / run`,
          peer: f.engine,
          ours: fmtBytes(base.allocatedBytes),
          theirs: fmtBytes(f.allocatedBytes)
        })
      }
    }
  }
  for (const flavour of r.childProcess ? flavours : []) {
    const engines = ofFlavour(r.childProcess!, flavour)
    const mine = engines.find((e) => e.engine === r.ours)
    for (const w of mine?.workloads ?? []) {
      for (const e of engines) {
        const f = e.engine === r.ours ? undefined : e.workloads.find((x) => x.title === w.title)
        if (f === undefined) continue
        if (f.marginalUs < w.marginalUs) {
          out.push({
            what: `${w.title} (${flavour}): marginal wall µs / iteration, own process`,
            peer: e.engine,
            ours: fmtUs(w.marginalUs),
            theirs: fmtUs(f.marginalUs)
          })
        }
        if (f.allocatedBytes < w.allocatedBytes) {
          out.push({
            what: `${w.title} (${flavour}): allocated / run, own process`,
            peer: e.engine,
            ours: fmtBytes(w.allocatedBytes),
            theirs: fmtBytes(f.allocatedBytes)
          })
        }
      }
    }
  }
  if (typeof r.latency === "object") {
    for (const mine of r.latency.rows.filter((x) => x.engine.startsWith("ours") && x.error === undefined)) {
      for (
        const peer of r.latency.rows.filter((x) =>
          x.scenario === mine.scenario && !x.engine.startsWith("ours") && x.error === undefined
        )
      ) {
        const what = `latency (${mine.scenario}), ${mine.engine}`
        if (peer.firstTokenMs.median < mine.firstTokenMs.median) {
          out.push({
            what: `${what}: first answer token`,
            peer: peer.engine,
            ours: `${ms(mine.firstTokenMs.median)} ms`,
            theirs: `${ms(peer.firstTokenMs.median)} ms`
          })
        }
        if (peer.totalMs.median < mine.totalMs.median) {
          out.push({
            what: `${what}: total`,
            peer: peer.engine,
            ours: `${ms(mine.totalMs.median)} ms`,
            theirs: `${ms(peer.totalMs.median)} ms`
          })
        }
      }
    }
  }
  const ourRound = r.round?.find((x) => x.engine === r.ours)
  for (const x of r.round ?? []) {
    if (ourRound && x.engine !== r.ours && !x.engine.startsWith("baseline") && x.medianMs < ourRound.medianMs) {
      out.push({
        what: "parallel round (8 × 50 ms)",
        peer: x.engine,
        ours: `${ms(ourRound.medianMs)} ms`,
        theirs: `${ms(x.medianMs)} ms`
      })
    }
  }
  return out
}

const analysis = (): string => {
  try {
    return readFileSync(fileURLToPath(new URL("./analysis.md", import.meta.url)), "utf8").trim()
  } catch {
    return ""
  }
}

const loaded = (env: Environment) => Math.max(env.loadBefore[0], env.loadAfter[0]) > env.cores * 0.75

const FAULTS = `## Fault tests (in \`npm test\`)

Deterministic and fast (≈ 20 s together); \`npx vitest run test/fault\`.

| file | what it proves |
|---|---|
| test/fault/chaos.test.ts | 120 native-mode and 60 JSON-mode runs against a seeded chaos LLM (test/utils/chaosLlm.ts: 429, 500, timeouts, connection errors, non-retryable 400s, invalid or non-object tool arguments, unknown tools, empty and garbage replies, synthesis streams failing before the first token or cut midway): every run ends with exactly one \`Done\` as its last event, never dies, every started tool call gets its \`ToolDone\`, and no request the model received — nor the final transcript — holds an unpaired or misplaced tool call. A failing seed reproduces. |
| test/fault/chaosHttp.test.ts | One level down: 30 seeded runs over the real \`OpenAiLlm\` (openai SDK, retries, client timeout) against the fake OpenAI HTTP server answering 429 with Retry-After, 500, 503, dropped connections, 200s with an HTML body, hangs, invalid arguments, unknown tools, streams breaking with an error event or garbage midway: every run ends with one \`Done\` last, never dies, and no request the provider received holds an unpaired tool call. |
| test/fault/toolTimeout.test.ts | Hanging handlers (\`Effect.never\`, a promise that never settles) are cut by the per-tool timeout — agent option \`toolTimeout\`, default **60 s**, env \`REACT_TOOL_TIMEOUT_MS\`; a tool's own \`timeout\` wins — and answered as error observations in request order; the other calls of the round and the run go on. |
| test/fault/server.test.ts | Hostile HTTP inputs against the real server — 2 MB body, 25k-level JSON, wrong types, null/empty/truncated bodies, \`__proto__\`, invalid UTF-8, lone surrogates, 20 KB header, 10,000 headers, garbage request line, lying or duplicated Content-Length, Content-Length with chunked, malformed chunks, form bodies, a 5,000-level object inside a field — each gets a 4xx (or Node closes the connection), starts no LLM work, and \`/health\` stays ok with a normal run still working afterwards. A client disconnect (detach grace 0) aborts the LLM request, interrupts a running tool and leaves no active run. |
| test/fault/shutdown.test.ts | SIGTERM with 5 runs in flight: the server process (bench/serverProcess.ts) closes its scope, every SSE stream ends, and the process then exits **by itself** (no \`process.exit\`), code 0 — any leaked socket, timer or sleeping fiber would keep it alive. |

A bug these tests found, since fixed: a body whose field held a 5,000-level nested object got a
500 (the 400 issue formatter overflowed the stack); bodies nested deeper than 32 levels are now a
400 before any decoding (src/server/ApiError.ts).

## Running it

\`npm run bench\` (≈ 12 minutes on 2 cores, all sections, plus ≈ 10 for the child-process loop method). The loop figures come twice:
in one process, CPU time, the engines interleaved run by run (the loop tables), and per engine in a fresh child process,
wall clock, in interleaved rounds (\`BENCH_ONLY=process\`, bench/childProcess.ts); each in two flavours, generate
(non-streamed loop calls) and stream (streamed; our default), every engine making the same kind of call. It builds the package first and measures our engine as
installed (dist/, imported by its package name), as the peers run their published JavaScript: run from source
through tsx, whose transform wraps every function created at run time in \`__name(…)\`, the engine costs
≈ 1.6 × as much per iteration (the server-load section still runs the app from source). \`BENCH_QUICK=1\` for a smoke run,
\`BENCH_ONLY=loop,process,round,guard,selection,first,latency,durable,cache,load\` for a subset (the doc is then not rewritten, unless
\`npm run bench -- --merge\`: the sections measured replace theirs in bench/results.json), \`BENCH_LOAD_LEVELS=100,500,1000\`. A full run saves its
raw figures to bench/results.json; \`npm run bench -- --render\` rewrites this page from them
(after editing bench/analysis.md, the hand-written part of "Where we lose").`

/** The in-process loop tables' heading per flavour. */
const loopFlavourTitle: Record<Flavour, string> = {
  generate: "generate: non-streamed loop calls (ours: synthesis `always`; AI SDK: `generateText`; Agents SDK: `run`)",
  stream:
    "stream: streamed loop calls (ours: synthesis `auto`, our default; AI SDK: `streamText`; Agents SDK: `run(…, { stream: true })`)"
}

const verdict = (ok: boolean | undefined) => (ok === undefined ? "not measured" : ok ? "met" : "**missed**")

/** Our marginal CPU per step beside the fastest peer's (same flavour), for one loop case. */
const againstFastest = (r: Results, title: string, flavour: Flavour) => {
  const c = r.loop.find((x) => x.case.title === title && flavourOf(x) === flavour)
  const ours = c?.figures.find((f) => f.engine === r.ours && f.error === undefined)
  const peers = (c?.figures ?? []).filter((f) =>
    f.engine !== r.ours && f.error === undefined && !Number.isNaN(f.marginalUs)
  )
  if (ours === undefined || Number.isNaN(ours.marginalUs) || peers.length === 0) return undefined
  const fastest = peers.reduce((a, b) => (b.marginalUs < a.marginalUs ? b : a))
  return {
    ours: ours.marginalUs,
    peer: fastest.engine,
    theirs: fastest.marginalUs,
    ratio: ours.marginalUs / fastest.marginalUs
  }
}

/** The performance targets against this run's figures. @since 0.1.0 */
export const targets = (r: Results): string => {
  // the allocation target is read on our default (stream), or on the only flavour measured
  const ours = (title: string) =>
    (r.loop.find((c) => c.case.title === title && flavourOf(c) === "stream") ??
      r.loop.find((c) => c.case.title === title))?.figures.find((f) => f.engine === r.ours)
  const big = ours("50 sequential steps, 20 KB tool results")
  const round = r.round?.find((x) => x.engine === r.ours)
  const first = typeof r.firstToken === "object" ? r.firstToken : undefined
  const top = r.load?.find((l) => l.concurrency === 1000)
  const stretch = (ratio: number) => ` (stretch ≤ 0.5 ×: ${ratio <= 0.5 ? "met" : "missed"})`
  const marginalRow = (label: string, title: string, flavour: Flavour) => {
    const m = againstFastest(r, title, flavour)
    return [
      `${flavour}: marginal CPU per loop iteration below the fastest ${flavour} peer's, in one process (${label})`,
      m
        ? `${fmtUs(m.ours)} µs vs ${fmtUs(m.theirs)} µs (${m.peer}): ${m.ratio.toFixed(2)} ×${stretch(m.ratio)}`
        : "n/a",
      verdict(m ? m.ratio < 1 : undefined)
    ]
  }
  const processRow = (label: string, title: string, flavour: Flavour) => {
    const m = r.childProcess && childAgainstFastest(r.childProcess, r.ours, title, flavour)
    return [
      `${flavour}: marginal wall per loop iteration below the fastest ${flavour} peer's, each engine in its own process (${label})`,
      m
        ? `${fmtUs(m.ours.marginalUs)} µs vs ${fmtUs(m.theirs)} µs (${m.peer}): ${m.ratio.toFixed(2)} ×${
          stretch(m.ratio)
        }`
        : "n/a",
      verdict(m ? m.ratio < 1 : undefined)
    ]
  }
  const workloadRows = (row: (label: string, title: string, flavour: Flavour) => Array<string>, flavour: Flavour) => [
    row("w1: 50 single-tool steps", "50 sequential single-tool steps", flavour),
    row("w2: 10 steps × 4 parallel calls", "10 steps × 4 parallel tool calls", flavour),
    row("w3: 50 steps, 20 KB results", "50 sequential steps, 20 KB tool results", flavour)
  ]
  const rows: Array<Array<string>> = [
    // the floor, per flavour and method: below the fastest peer making the same kind of calls
    ...flavours.flatMap((f) => [...workloadRows(marginalRow, f), ...workloadRows(processRow, f)]),
    [
      "heap allocated per 50-step run with 20 KB results ≤ 5 MB",
      big ? fmtBytes(big.allocatedBytes) : "n/a",
      verdict(big && !Number.isNaN(big.allocatedBytes) ? big.allocatedBytes <= 5 * 1024 * 1024 : undefined)
    ],
    [
      "parallel round ≤ 1.1 × its slowest tool",
      round && !round.error ? `${round.ratio.toFixed(2)} ×` : "n/a",
      verdict(round && !round.error ? round.ratio <= 1.1 : undefined)
    ],
    [
      "first answer token forwarded within 5 ms",
      first ? `p99 ${first.p99Ms.toFixed(2)} ms` : "n/a",
      verdict(first ? first.p99Ms <= 5 : undefined)
    ],
    [
      "1,000 concurrent durable runs (SQLite), p99 delivery < 50 ms, ≤ 300 KB heap per active run",
      top && !top.error
        ? `${top.completed}/1000 completed, p99 ${ms(top.p99Ms)} ms, ${fmtBytes(top.heapPerRunBytes)} / run`
        : "n/a",
      verdict(
        top && !top.error ? top.completed === 1000 && top.p99Ms < 50 && top.heapPerRunBytes <= 300 * 1024 : undefined
      )
    ],
    ...Concurrency.targets(r.concurrency, r.durable),
    ...(r.durable === undefined ? [] : floorRatios(r.durable)).map((x) => [
      `a stored iteration ≤ 1.5 × the engine-alone floor of the same run (${x.database})`,
      `${x.iterationMs.toFixed(1)} ÷ ${x.floorMs.toFixed(1)} ms = ${x.ratio.toFixed(2)} ×`,
      verdict(x.ratio <= 1.5)
    ]),
    ...latencyTargets(typeof r.latency === "object" ? r.latency : undefined),
    ...cacheTargets(typeof r.promptCache === "object" ? r.promptCache : undefined)
  ]
  return `## Targets\n\nThe engine's own cost must vanish beside the model's latency, measured against the peers in the same run (absolute figures drift 25–45 % between runs on shared machines; the ratios are what to read).\n\n${
    table(["target", "this run", ""], rows)
  }`
}

const cacheTargets = (c: PromptCacheResults | undefined): Array<Array<string>> => {
  const ours = c?.engines[0]
  const ok = ours !== undefined && ours.error === undefined
  return [
    [
      "prompt cache (20 turns × 2 tool rounds, 40 tools, Anthropic fake): reads ≥ 80 % of input tokens",
      ok ? `${(100 * ours.readShare).toFixed(1)} %` : "n/a",
      verdict(ok ? ours.readShare >= 0.8 : undefined)
    ],
    [
      "prompt cache: billed input (read 0.1×, write 1.25×) ≤ 30 % of uncached",
      ok ? `${(100 * ours.billedVsUncached).toFixed(1)} %` : "n/a",
      verdict(ok ? ours.billedVsUncached <= 0.3 : undefined)
    ]
  ]
}

/** Prompt caching (bench/promptCache.ts). @since 0.1.0 */
export const promptCacheSection = (c: PromptCacheResults | string): string =>
  typeof c === "string"
    ? `## Prompt caching\n\nNot measured: ${c}`
    : `## Prompt caching

SPEC §20's conversation: ${c.turns} turns, ${c.rounds} tool rounds per turn, ${c.tools} tools, against the fake
Anthropic Messages API (test/utils/fakeAnthropicServer.ts), which caches prefixes honestly: a read only where
the request's prefix up to a breakpoint (looking back up to 20 blocks, as the API does) equals one written
before, at least 1,024 tokens (ceil(bytes ÷ 4) per block), within 5 minutes. Ours: the real \`ReactAgent\`
over \`EffectAiLlm\` and the real \`@effect/ai-anthropic\` client; history between turns is each turn's query
and answer, as the server keeps it; tool selection off, so every call advertises the 40 tools. Billed input
weighs cache reads 0.1× and writes 1.25× (Anthropic's prices), relative to the same conversation without
caching (${c.uncachedInputTokens.toLocaleString("en-US")} input tokens).

${renderPromptCache(c)}`

/** The cost of durability (bench/durableStep.ts, bench/engineAlone.ts). @since 0.1.0 */
export const durableSection = (d: DurableResults): string => {
  const alone = (e: EngineFigures | string | undefined, where: string, label: string) =>
    e === undefined
      ? ""
      : typeof e === "string"
      ? ` ${label}: not measured (${e.split("\n")[0]}).`
      : ` ${label} (${where}): one trivial activity costs ${e.activityWallMs.toFixed(2)} ms wall and ${
        e.activityCpuMs.toFixed(2)
      } ms CPU (${e.activities} in a row), so the two activities a tool iteration stores cost ${
        (2 * e.activityWallMs).toFixed(1)
      } ms wall of the engine alone; one workflow parked in an activity holds ${fmtBytes(e.parkedBytes)} of heap${
        e.parkedInBodyBytes === undefined
          ? ""
          : `, one parked in its own body (outside any activity) ${fmtBytes(e.parkedInBodyBytes)}`
      } (${e.parked} parked each way).`
  const engine =
    `The workflow engine alone (bench/engineAlone.ts: \`@effect/workflow\` on \`@effect/cluster\`'s \`SingleRunner\`, no agent, no server).${
      alone(d.engine, "the server's embedded engine: one shard, `synchronous=NORMAL`", "On SQLite")
    }${alone(d.enginePostgres, "local, 300 shards, no socket between runners", "On PostgreSQL")}`
  const perIteration = d.databases.flatMap((
    x
  ) => (x.error === undefined && x.marginalMs !== undefined && !Number.isNaN(x.marginalMs) ? [x] : []))
  const share = perIteration.length === 0
    ? ""
    : ` Beside a model that takes a second per call this is ${
      perIteration.map((x) => `${(x.marginalMs! / 10).toFixed(1)} % (${x.database})`).join(", ")
    } of an iteration.`
  return `## Cost of durability

Every server run is a durable workflow: each loop LLM reply, each tool outcome, each interrupt
drain and the answer are stored as workflow activities, each event in the run log. The real server
(bench/serverProcess.ts) on a zero-latency scripted model, one run at a time over HTTP/SSE: a run
of ${2} tool steps and one of ${22}, interleaved; **per iteration** = (median long − median short) ÷ 20,
wall-clock. The in-process loop's own cost per iteration is in the loop tables above.

${
    table(
      ["database", "run, 2 steps (ms)", "run, 22 steps (ms)", "per iteration (ms)", "runs each"],
      d.databases.map((x) =>
        x.error !== undefined
          ? [x.database, `not measured: ${x.error}`, "", "", ""]
          : [
            x.database,
            ms(x.shortMs ?? Number.NaN),
            ms(x.longMs ?? Number.NaN),
            (x.marginalMs ?? Number.NaN).toFixed(1),
            String(x.runs)
          ]
      )
    )
  }

${engine} A tool iteration stores two activities (the LLM reply, which carries the interrupt drain,
and the tool outcome), so most of its cost is the engine's; a guard check is stored only when it may
compact the list, and which process started a non-idempotent call is a row of the run log, not an
activity.${share}${
    floorRatios(d).map((x) =>
      ` Per iteration ÷ the engine-alone floor (2 × activity) on ${x.database}: **${
        x.ratio.toFixed(2)
      } ×** (target ≤ 1.5 ×).`
    ).join("")
  }${d.load === undefined ? "" : ` (Load ${d.load.toFixed(1)} at the end of the section.)`}`
}

/** The whole document. @since 0.1.0 */
export const markdown = (r: Results): string => {
  const { env } = r
  const parts: Array<string> = []
  parts.push(`# Benchmarks

Generated by \`npm run bench\` (bench/index.ts) on ${env.date}: Node ${env.node}, ${env.cores} × ${env.cpu}.
The whole run took ${Math.round(env.totalSeconds)} s. Rerun it to get your machine's figures; the peers run
in the same process, interleaved with our engine, so every figure below is a
side-by-side comparison taken under the same conditions.

Load average (1 min) before / after the run: ${env.loadBefore[0].toFixed(1)} / ${env.loadAfter[0].toFixed(1)}.${
    env.merged === undefined ?
      "" :
      `\nRe-measured since, alone (\`BENCH_ONLY=… npm run bench -- --merge\`): ${
        Object.entries(env.merged).map(([section, date]) => `${section} on ${date}`).join(", ")
      }; those sections' figures are from then, the rest from the run above.`
  }${
    loaded(env)
      ? `\n**The machine was loaded** (other processes were competing for its ${env.cores} cores while this ran):
wall-clock times and timer-based figures are inflated; CPU-time figures and the ratios between
engines are the ones to read.`
      : ""
  }

Peers: Vercel AI SDK \`ai@6.0.326\` (\`generateText\` / \`streamText\`, \`MockLanguageModelV3\`, \`stopWhen: stepCountIs(steps + 1)\`)
and OpenAI Agents SDK \`@openai/agents-core@0.14.3\` (\`Runner.run\`, non-streamed or \`{ stream: true }\`, a scripted \`Model\`, tracing off).
The loop figures come in two flavours, each engine making the same kind of model call: generate
(non-streamed) and stream (streamed; ours at its default); see "Loop overhead vs peers".
Harnesses: bench/peers/*.ts; the scripted conversations: bench/scenario.ts.`)

  parts.push(targets(r))

  parts.push(`## Loop overhead vs peers

The same scripted conversation, zero-latency model, trivial tools: each turn the model calls the
tool(s), then answers. Every run is checked (tool calls made, final answer) before timing.

**Two flavours, like with like.** How an engine makes its model calls decides much of what a loop
iteration costs: consuming a reply as a stream (in our engine an Effect \`Stream\`, ≈ 150–250 µs of
CPU and ≈ 200 KB per stream run on this machine, most of it the library's fiber and channel
machinery and GC) is dearer than awaiting it whole. So every loop figure is measured twice, each
time with every engine making the same kind of call, and ours is compared only with the peers of
the same flavour:

- **generate**: non-streamed loop calls. Ours with synthesis policy \`always\` (every loop call a
  \`chat\`; the answer-synthesis streaming call after the loop is a fixed cost per run, which the
  marginal figures cancel); the AI SDK's \`generateText\` (the mock's \`doGenerate\`); the Agents
  SDK's \`run\` (the model's \`getResponse\`).
- **stream**: streamed loop calls, each stream consumed in full. Ours with synthesis policy
  \`auto\`, **our default** (every loop call a \`streamChat\` consumed as a \`Stream\`, the final
  answer shown as it streams, no synthesis call); the AI SDK's \`streamText\` with the same
  \`stopWhen\` and the mock's \`doStream\` (\`fullStream\` read to its end); the Agents SDK's
  \`run(agent, input, { stream: true })\` with the model's \`getStreamedResponse\` (the run's events
  read to their end, then \`completed\` awaited). Every model streams a tool-call turn's calls
  whole and the final answer word by word.

Both flavours are always reported; the floor (below the fastest peer) is checked on each.

- **CPU µs / iteration**: median process CPU time (user + system) of a run ÷ loop LLM calls
  (steps + the final answer), over up to 250 timed rounds after 20 warm-up rounds (45 s per case at
  most: the "runs" column says how many each engine got). With a zero-latency model a run is pure CPU work; CPU time does not
  count time spent waiting for a core on a busy machine. Runs are timed one at a time, the
  engines' runs interleaved round-robin (the first contender rotates each round), and no GC is
  forced: each run pays for the collections V8 runs while it goes, as in a process that keeps
  running. A scavenge costs what is still alive, i.e. the running engine's own objects (the other
  engines' runs are over and their garbage costs it nothing); a full GC comes by itself rarely (the
  line under each table counts the collections V8 ran during its runs, from \`gc\` performance
  entries).
- **marginal, 1st run after full GC**: the same slope for runs timed right after a forced full GC
  (5 per scenario and engine). V8 discards optimized code that embedded objects which died ("weak
  objects" deoptimization); an Effect program's first run after a full GC pays to warm up again (a
  bare \`Effect.gen\` loop: ≈ 3.5 × its steady cost on this machine; plain-promise code barely).
  Earlier versions of this bench forced a full GC before every run, then before every batch of 8
  runs — 25 × more often than V8 runs one by itself — which charged most runs of ours with that
  warm-up.
- **marginal CPU µs / step**: (median CPU of the long run − median CPU of the short run) ÷ the extra
  steps — the cost of one more iteration, fixed per-run costs cancelled (for us in the generate
  flavour these include the answer-synthesis streaming call, which the peers do not make).
- **wall µs / iteration**: the same with wall-clock time.
- **allocated / run**: bytes allocated during one long run, garbage included, from V8's sampling heap
  profiler (\`HeapProfiler.startSampling\` with \`includeObjectsCollectedByMinorGC/MajorGC\`, 4 KB
  sampling interval, median of several runs) — statistical, accurate to a few percent at these sizes.
- **peer ÷ ours**: above 1× we are faster / allocate less.
- The 20 KB tool result is the same string every call, so the figure is what each engine allocates
  around it (copies, re-serialisation, re-estimation), not the tool's own work.
- Our settings (bench/peers/ours.ts): completion checklist off (it would add an LLM call the
  script does not have), context guard and tool-result budget on with budgets too large to cut
  anything (the peers send the whole history every step, so do we); everything else at defaults.`)
  for (const flavour of flavours) {
    const cases = r.loop.filter((c) => flavourOf(c) === flavour)
    if (cases.length > 0) parts.push(`### ${loopFlavourTitle[flavour]}`)
    for (const c of cases) {
      parts.push(
        `#### ${c.case.title} (${flavour})\n\nLong run: ${c.case.long.steps} steps × ${c.case.long.calls} call(s); short run (for the marginal figure): ${c.case.short.steps} steps.\n\n${
          renderLoop(c, r.ours)
        }`
      )
    }
  }

  if (r.childProcess) {
    parts.push(`### Each engine in its own child process, wall clock, interleaved rounds

The loop figures' second method (bench/childProcess.ts, bench/childProcessEntry.ts): what a harness
outside the engine sees, in the same two flavours (generate, stream). ${r.childProcess.rounds} rounds; each round runs every engine once per flavour, the children's order rotated
from round to round, each in a fresh plain \`node\` process that loads the built package (dist/, by its
package name) or the peer's library, runs each workload's long and short scenario ${r.childProcess.warmup} times to warm
up, then times up to ${r.childProcess.iterations} runs of each, alternating, with the wall clock (at least 10; fewer when
a workload's time cap passes first). No GC is forced, no profiler is attached: the wall time
includes the collections V8 runs, the JIT, and any wait for a core on a busy machine.

- **marginal wall µs / iteration**: (mean wall time of a long run − of a short run) ÷ the extra
  steps, per child; the table shows the median over the rounds and the min–max. **marginal CPU**:
  the same slope with the child's CPU time (user + system) over the same runs — it does not count
  waiting for a core, so it is the one to read when the machine was loaded.
- **allocated / run**: after the timing, 5 long runs in a row under \`v8.GCProfiler\`: the bytes every
  GC freed meanwhile plus the heap's growth, ÷ 5 (everything allocated on the V8 heap, garbage
  included, exact rather than sampled; external memory such as Buffers is not counted).
- The child is compiled JavaScript: the entry and the harness files it imports (bench/peers/*.ts,
  bench/scenario.ts) are transpiled by TypeScript into bench/.child/ before the rounds (no tsx
  loader in the child). \`BENCH_ONLY=process npm run bench\` runs this section alone
  (\`-- --merge\` to write it into this page).

${renderChildProcess(r.childProcess, r.ours)}`)
  }

  if (r.alone && r.alone.length > 0) {
    const titles = [...new Set(r.loop.map((c) => c.case.title))]
    parts.push(`### Each engine alone in its own process

The same cases, each engine measured in a fresh process of its own (bench/alone.ts), so no
engine runs in a heap or JIT state shaped by another's code and garbage. CPU µs per iteration /
marginal CPU µs per step.

${
      table(
        ["engine", ...titles],
        r.alone.map((a) => [
          a.engine,
          ...titles.map((t) => {
            const c = a.cases.find((x) => x.title === t)
            return a.error ? a.error : c ? `${fmtUs(c.perIterationUs)} / ${fmtUs(c.marginalUs)}` : "n/a"
          })
        ])
      )
    }`)
  }

  if (r.round) {
    parts.push(`## Parallel tool round

The model asks for 8 tools at once, each sleeping 50 ms. Round time = from the model's reply
being handed to the engine to the engine's next model request (engine work included), median of
10 runs. Target ≤ 1.1× the slowest tool. The baseline row is 8 bare \`setTimeout(50)\` awaited
together: the timer overshoot of this machine at the time of the run.

${
      table(
        ["engine", "round (ms)", "÷ 50 ms"],
        r.round.map((
          x
        ) => [x.engine, x.error ? `failed: ${x.error}` : ms(x.medianMs), x.error ? "" : x.ratio.toFixed(2)])
      )
    }`)
  }

  if (r.guard) {
    parts.push(`## Context guard cost

\`ContextGuard.makeUnsafe({ budget })\` → \`checkAndCompact(messages)\` on a list that fits the budget (the
check every loop iteration makes), median of 200 checks. **warm**: the list was checked before and
one message was appended since — the loop's pattern; per-message estimates are cached, so the
cost should follow the new messages, not the history. **cold**: every message is new (first check
of a loaded conversation).

${
      table(
        ["history messages", "warm µs / check", "cold µs / check"],
        r.guard.map((g) => [String(g.messages), fmtUs(g.warmUs), fmtUs(g.coldUs)])
      )
    }`)
  }

  if (r.selection !== undefined) {
    parts.push(
      typeof r.selection === "string"
        ? `## Tool selection\n\nNot measured: ${r.selection}`
        : `## Tool selection

\`bench/toolSelection.ts\` (\`run()\` returns the figures, \`render()\` the table; also
\`npx tsx bench/toolSelection.ts\` alone) uses the ${r.selection.totalTools}-tool catalogue of
\`test/utils/catalogue.ts\` (filesystem, web, GitHub, calendar, mail, Slack, SQL, weather, maps,
finance, documents…; ${r.selection.pinnedTools} of them pinned), a query needing 6 of them, and the
engine's token estimator on \`JSON.stringify(definitions)\` — what every loop LLM call carries in
its \`tools\` parameter (native mode; JSON mode embeds the same definitions in the system prompt).

${renderSelection(r.selection)}

The selection call costs about as much as ${r.selection.breakEvenCalls} loop call(s)' savings; a
10-iteration run sends ≈ ${(r.selection.savedPerCall * 10 - r.selection.selectorPromptTokens).toLocaleString("en-US")}
fewer prompt tokens. \`request_tools\` lists the not-yet-loaded tools by name only (listing them with
60-character descriptions cost 711 tokens per call instead of 235 when this was designed).`
    )
  }

  if (r.firstToken !== undefined) {
    parts.push(
      typeof r.firstToken === "string"
        ? `## First-token forwarding\n\nNot measured: ${r.firstToken}`
        : `## First-token forwarding

Time from the scripted provider emitting its first answer chunk (stamped inside the provider
stream) to the \`AnswerDelta\` event reaching the consumer of \`agent.run\` (in process), over
${r.firstToken.runs} runs. Target ≤ 5 ms.

${
          table(["p50", "p99", "max"], [[
            `${r.firstToken.p50Ms.toFixed(2)} ms`,
            `${r.firstToken.p99Ms.toFixed(2)} ms`,
            `${r.firstToken.maxMs.toFixed(2)} ms`
          ]])
        }`
    )
  }

  if (r.latency !== undefined) parts.push(latencySection(r.latency))

  if (r.load) {
    parts.push(`## Server under load

The real server (routes, run registry, durable runs on the embedded SQLite file, \`ReactAgent\`,
wired by \`App.layerMemory\`) in a child process (bench/serverProcess.ts) on loopback; N clients POST
\`/api/react\` at once and read the SSE stream (eventsource-parser). The scripted model takes
20 ms per call and per streamed chunk; each run makes 2 tool calls, a final answer, and streams
3 answer chunks (≈ 12 frames). Every model reply and chunk carries the time it left the model, so
**delivery** = frame received by the client − reply left the model, over every stamped frame.
**Memory**: a second server with a 10 min model latency holds all N runs parked in their first LLM call;
heap (after a full GC) and RSS minus the idle baseline, ÷ active runs. Then every client
disconnects; with \`RUN_DETACH_GRACE_MS=0\` the server must report 0 active runs afterwards
(**after disconnect**). The load generator shares the cores with the server, so delivery
latencies include the client's own parsing delay. Targets: 1,000 runs, p99 < 50 ms,
≤ 300 KB heap per active run (SPEC §13: durable runs).

${
      table(
        [
          "concurrent runs",
          "completed",
          "failed",
          "wall (s)",
          "frames",
          "delivery p50 (ms)",
          "p99 (ms)",
          "max (ms)",
          "heap / active run",
          "RSS / active run",
          "active at measure",
          "active after disconnect"
        ],
        r.load.map((l) => [
          String(l.concurrency),
          String(l.completed),
          l.error ? `error: ${l.error}` : String(l.failed),
          ms(l.wallMs / 1000),
          String(l.frames),
          ms(l.p50Ms),
          ms(l.p99Ms),
          ms(l.maxMs),
          fmtBytes(l.heapPerRunBytes),
          fmtBytes(l.rssPerRunBytes),
          String(l.activeAtMeasure),
          String(l.activeAfterDisconnect)
        ])
      )
    }${
      r.load.some((l) => l.note)
        ? "\n\nIncomplete runs: " + r.load.filter((l) =>
          l.note
        ).map((l) => `${l.concurrency} runs — ${l.note}`).join("; ") + "."
        : ""
    }`)
  }

  if (r.durable) parts.push(durableSection(r.durable))

  if (r.concurrency) parts.push(Concurrency.section(r.concurrency))

  if (r.followers) parts.push(followersSection(r.followers))

  if (r.promptCache !== undefined) parts.push(promptCacheSection(r.promptCache))
  if (r.agents !== undefined) parts.push(agentsSection(r.agents))

  if (r.primitives) {
    parts.push(`## Effect primitives on this machine

CPU µs per operation (bench/primitives.ts, median of 5 batches): the building blocks the loop's
per-call and per-run costs are made of, cited in the analysis below.

${table(["operation", "CPU µs"], r.primitives.map((p) => [p.name, fmtUs(p.us)]))}`)
  }

  parts.push(FAULTS)

  const lost = losses(r)
  parts.push(`## Where we lose

${
    lost.length === 0
      ? "No peer beat our engine on any figure of this run."
      : `Figures of this run where a peer did better:\n\n${
        table(["figure", "peer", "ours", "peer's"], lost.map((l) => [l.what, l.peer, l.ours, l.theirs]))
      }`
  }

${analysis()}`)
  return parts.join("\n\n") + "\n"
}

/** A one-line ratio summary per case (terminal). @since 0.1.0 */
export const summary = (r: Results): Array<string> =>
  r.loop.flatMap((c) => {
    const base = c.figures.find((f) => f.engine === r.ours)
    return c.figures.filter((f) => f.engine !== r.ours && base).map((f) =>
      `${c.case.title} (${flavourOf(c)}) — ${f.engine} ÷ ours: CPU/iteration ${
        fmtRatio(f.perIterationUs / base!.perIterationUs)
      }, marginal ${fmtRatio(f.marginalUs / base!.marginalUs)}, allocation ${
        fmtRatio(f.allocatedBytes / base!.allocatedBytes)
      }`
    )
  })
