/**
 * Latency a user feels: a latency-modelled fake provider over HTTP
 * (bench/latency/fakeProvider.ts: time to first token and tokens per second),
 * every engine through the real `openai` SDK, three scenarios
 * (bench/latency/scenarios.ts), several repetitions interleaved round-robin, wall
 * clock. Per scenario × engine: time from the start of the run to the first answer
 * token the consumer receives, total run time, the LLM calls the provider served
 * (and which were streamed), the output tokens it generated (cross-checked with
 * the usage the engine reports).
 *
 *   npx tsx bench/latency.ts [--quick] [--ttft=400] [--tps=50] [--reps=5] [--policies=always,auto]
 *
 * Env (also read by `npm run bench`, where `BENCH_QUICK=1` means `--quick`):
 * `BENCH_LATENCY_TTFT_MS`, `BENCH_LATENCY_TPS`, `BENCH_LATENCY_REPS`,
 * `BENCH_LATENCY_POLICIES`. Flags win over the environment.
 *
 * @since 0.1.0
 */
import * as os from "node:os"
import { pathToFileURL } from "node:url"
import { median, table } from "./harness.js"
import { engine as agentsSdk } from "./latency/agentsSdk.js"
import { engine as aiSdk } from "./latency/aiSdk.js"
import type { LatencyEngine, LatencyRun } from "./latency/engine.js"
import type { LatencyModel, ServedCall } from "./latency/fakeProvider.js"
import * as FakeProvider from "./latency/fakeProvider.js"
import type { SynthesisPolicy } from "./latency/ours.js"
import { engine as ours, synthesisOptionSupported } from "./latency/ours.js"
import type { LatencyScenario } from "./latency/scenarios.js"
import { ANSWER, behaviour, scenarios } from "./latency/scenarios.js"

/** @since 0.1.0 */
export interface LatencySettings extends LatencyModel {
  /** Timed runs per scenario × engine. */
  readonly reps: number
  /** Our synthesis policies to measure (each one a row); `auto` needs the `synthesis` option. */
  readonly policies: ReadonlyArray<SynthesisPolicy>
}

/** @since 0.1.0 */
export interface Spread {
  readonly median: number
  readonly min: number
  readonly max: number
}

/** One scenario × engine. @since 0.1.0 */
export interface LatencyRow {
  readonly scenario: LatencyScenario["id"]
  readonly engine: string
  readonly runs: number
  readonly firstTokenMs: Spread
  readonly totalMs: Spread
  /** What the latency model alone costs for the calls made, in sequence (no engine work, no network). */
  readonly modelMs: number
  /** The calls the provider served in one run, in order (`*` = streamed), e.g. "tool, tool, answer, answer*". */
  readonly calls: string
  readonly llmCalls: number
  readonly outputTokens: number
  readonly reportedCalls: number | undefined
  readonly reportedOutputTokens: number | undefined
  /** Set when the runs did not all make the same calls (the figures above are from the first run). */
  readonly callsVaried?: boolean
  readonly error?: string
}

/** @since 0.1.0 */
export interface LatencyFigures {
  readonly settings: LatencySettings
  readonly date: string
  readonly loadBefore: number
  readonly loadAfter: number
  readonly seconds: number
  readonly rows: ReadonlyArray<LatencyRow>
  /** Things not measured, and why. */
  readonly notes: ReadonlyArray<string>
}

const number = (value: string | undefined, fallback: number, min: number): number => {
  if (value === undefined || value === "") return fallback
  const n = Number(value)
  if (!Number.isFinite(n) || n < min) throw new Error(`latency benchmark: expected a number >= ${min}, got "${value}"`)
  return n
}

/**
 * Settings from flags (`--ttft=`, `--tps=`, `--reps=`, `--policies=`, `--quick`)
 * and the environment. Defaults: 400 ms, 50 tokens/s, 5 repetitions (2 quick),
 * policies `always,auto`.
 *
 * @since 0.1.0
 */
export const settingsFrom = (argv: ReadonlyArray<string>, env: NodeJS.ProcessEnv, quick: boolean): LatencySettings => {
  const flag = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3)
  const isQuick = quick || argv.includes("--quick")
  const policies = (flag("policies") ?? env.BENCH_LATENCY_POLICIES ?? "always,auto").split(",").map((s) => s.trim())
    .filter(Boolean)
  for (const p of policies) {
    if (p !== "always" && p !== "auto") throw new Error(`latency benchmark: unknown synthesis policy "${p}"`)
  }
  return {
    ttftMs: number(flag("ttft") ?? env.BENCH_LATENCY_TTFT_MS, 400, 0),
    tokensPerSecond: number(flag("tps") ?? env.BENCH_LATENCY_TPS, 50, 1),
    reps: Math.floor(number(flag("reps") ?? env.BENCH_LATENCY_REPS, isQuick ? 2 : 5, 1)),
    policies: policies as Array<SynthesisPolicy>
  }
}

const spread = (xs: ReadonlyArray<number>): Spread => ({
  median: median(xs),
  min: Math.min(...xs),
  max: Math.max(...xs)
})

const callsText = (calls: ReadonlyArray<ServedCall>) =>
  calls.map((c) => `${c.kind}${c.stream ? "*" : ""}${c.aborted ? " (aborted)" : ""}`).join(", ")

interface Timed {
  readonly firstTokenMs: number
  readonly totalMs: number
  readonly run: LatencyRun
  readonly calls: ReadonlyArray<ServedCall>
}

const timedRun = async (
  run: (marks: { answerToken: () => void; answerReset: () => void }) => Promise<LatencyRun>,
  provider: FakeProvider.LatencyProvider,
  scenario: LatencyScenario
): Promise<Timed> => {
  provider.take()
  let first: number | undefined
  const t0 = performance.now()
  const result = await run({
    answerToken: () => void (first ??= performance.now() - t0),
    answerReset: () => void (first = undefined)
  })
  const totalMs = performance.now() - t0
  const calls = provider.take()
  const problems: Array<string> = []
  if (result.answer.trim() !== ANSWER) problems.push(`answer "${result.answer.slice(0, 60)}…"`)
  if (result.toolCalls !== scenario.rounds) {
    problems.push(`${result.toolCalls} tool calls (expected ${scenario.rounds})`)
  }
  if (calls.some((c) => c.kind === "error" || c.aborted)) problems.push(`calls ${callsText(calls)}`)
  if (first === undefined) problems.push("no answer token reached the consumer")
  if (problems.length > 0) throw new Error(`unexpected run: ${problems.join("; ")}`)
  return { firstTokenMs: first!, totalMs, run: result, calls }
}

/** Runs the section. @since 0.1.0 */
export const run = async (
  settings: LatencySettings,
  log: (line: string) => void = () => {}
): Promise<LatencyFigures> => {
  const started = Date.now()
  const loadBefore = os.loadavg()[0]
  const notes: Array<string> = []
  const policies = settings.policies.filter((p) => p === "always" || synthesisOptionSupported)
  if (settings.policies.includes("auto") && !synthesisOptionSupported) {
    notes.push(
      "Our synthesis policy `auto` was not measured: this build's `AgentOptions` has no `synthesis` option yet (today's engine behaves as `always`)."
    )
  }
  const engines: Array<LatencyEngine> = [...policies.map(ours), aiSdk, agentsSdk]
  // Warm-up: every engine runs every scenario twice against an instant provider
  // (module loading, JIT, first-use code paths), so no timed run pays for them.
  const instant = await FakeProvider.start({ ttftMs: 0, tokensPerSecond: 1e6 }, behaviour)
  try {
    for (const scenario of scenarios) {
      for (const engine of engines) {
        const p = await engine.prepare(scenario, instant.url)
        try {
          for (let i = 0; i < 2; i++) await timedRun(p.run, instant, scenario)
        } catch (e) {
          log(`  warm-up ${engine.name} ${scenario.title}: ${e instanceof Error ? e.message : String(e)}`)
        } finally {
          await p.close()
        }
      }
    }
  } finally {
    await instant.close()
  }
  const provider = await FakeProvider.start(settings, behaviour)
  const perToken = 1000 / settings.tokensPerSecond
  const rows: Array<LatencyRow> = []
  try {
    for (const scenario of scenarios) {
      log(`${scenario.title} [${((Date.now() - started) / 1000).toFixed(0)} s]`)
      const prepared = await Promise.all(
        engines.map(async (engine) => ({ engine, ...(await engine.prepare(scenario, provider.url)) }))
      )
      const samples = engines.map(() => [] as Array<Timed>)
      const errors = engines.map((): string | undefined => undefined)
      // `reps` rounds, rotating who goes first
      for (let rep = 0; rep < settings.reps; rep++) {
        for (let k = 0; k < prepared.length; k++) {
          const j = (rep + k) % prepared.length
          if (errors[j] !== undefined) continue
          try {
            samples[j].push(await timedRun(prepared[j].run, provider, scenario))
          } catch (e) {
            errors[j] = e instanceof Error ? e.message : String(e)
            log(`  ${prepared[j].engine.name}: ${errors[j]}`)
          }
        }
      }
      for (const p of prepared) await p.close()
      engines.forEach((engine, j) => {
        const s = samples[j]
        const firstRun = s[0]
        if (errors[j] !== undefined || firstRun === undefined) {
          const nan = { median: Number.NaN, min: Number.NaN, max: Number.NaN }
          rows.push({
            scenario: scenario.id,
            engine: engine.name,
            runs: s.length,
            firstTokenMs: nan,
            totalMs: nan,
            modelMs: Number.NaN,
            calls: "",
            llmCalls: 0,
            outputTokens: 0,
            reportedCalls: undefined,
            reportedOutputTokens: undefined,
            error: errors[j] ?? "no run"
          })
          return
        }
        const calls = firstRun.calls
        const row: LatencyRow = {
          scenario: scenario.id,
          engine: engine.name,
          runs: s.length,
          firstTokenMs: spread(s.map((t) => t.firstTokenMs)),
          totalMs: spread(s.map((t) => t.totalMs)),
          modelMs: calls.reduce((sum, c) => sum + settings.ttftMs + c.outputTokens * perToken, 0),
          calls: callsText(calls),
          llmCalls: calls.length,
          outputTokens: calls.reduce((sum, c) => sum + c.outputTokens, 0),
          reportedCalls: firstRun.run.reportedCalls,
          reportedOutputTokens: firstRun.run.reportedOutputTokens,
          ...(s.some((t) => callsText(t.calls) !== callsText(calls)) ? { callsVaried: true } : {})
        }
        rows.push(row)
        log(
          `  ${engine.name}: first token ${ms(row.firstTokenMs.median)} ms, total ${
            ms(row.totalMs.median)
          } ms, calls ${row.calls}, output tokens ${row.outputTokens}`
        )
      })
    }
  } finally {
    await provider.close()
  }
  return {
    settings: { ...settings, policies },
    date: new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC",
    loadBefore,
    loadAfter: os.loadavg()[0],
    seconds: (Date.now() - started) / 1000,
    rows,
    notes
  }
}

const ms = (x: number) => (Number.isNaN(x) ? "n/a" : x.toFixed(0))
const fmtSpread = (s: Spread) => (Number.isNaN(s.median) ? "n/a" : `${ms(s.median)} (${ms(s.min)}–${ms(s.max)})`)
const reported = (measured: number, claimed: number | undefined) =>
  claimed === undefined
    ? `${measured} (engine reports none)`
    : claimed === measured
    ? String(measured)
    : `${measured} (engine reports ${claimed})`

/** The table (markdown, also readable on a terminal). @since 0.1.0 */
export const render = (f: LatencyFigures): string =>
  table(
    [
      "scenario",
      "engine",
      "first answer token, ms",
      "total, ms",
      "model time, ms",
      "LLM calls (* streamed)",
      "output tokens"
    ],
    f.rows.map((r) => {
      const title = scenarios.find((s) => s.id === r.scenario)?.title ?? r.scenario
      return r.error !== undefined
        ? [title, r.engine, `failed: ${r.error}`, "", "", "", ""]
        : [
          title,
          r.engine,
          fmtSpread(r.firstTokenMs),
          fmtSpread(r.totalMs),
          ms(r.modelMs),
          `${r.llmCalls}: ${r.calls}${
            r.reportedCalls !== undefined && r.reportedCalls !== r.llmCalls
              ? ` (engine reports ${r.reportedCalls})`
              : ""
          }${r.callsVaried ? " (varied between runs)" : ""}`,
          reported(r.outputTokens, r.reportedOutputTokens)
        ]
    })
  )

/** The fastest peer's figure and ours, per scenario (for the latency goal). @since 0.1.0 */
export const versusFastestPeer = (f: LatencyFigures, scenario: LatencyScenario["id"], ourName: string) => {
  const rows = f.rows.filter((r) => r.scenario === scenario && r.error === undefined)
  const mine = rows.find((r) => r.engine === ourName)
  const peers = rows.filter((r) => !r.engine.startsWith("ours"))
  if (mine === undefined || peers.length === 0) return undefined
  const best = (pick: (r: LatencyRow) => number) => Math.min(...peers.map(pick))
  return {
    firstToken: { ours: mine.firstTokenMs.median, peer: best((r) => r.firstTokenMs.median) },
    total: { ours: mine.totalMs.median, peer: best((r) => r.totalMs.median) }
  }
}

const ratio = (ours: number, peer: number) => (Number.isFinite(ours / peer) ? `${(ours / peer).toFixed(2)}×` : "n/a")

const ourNames = (f: LatencyFigures) => f.settings.policies.map((p) => `ours (synthesis: ${p})`)

/**
 * The latency goal as rows of the targets table: on (b) no slower than the
 * fastest peer (within 1 %, the run-to-run noise of the fake provider's timers),
 * on (a) within 1.2×, for the first answer token and the total — one row per
 * scenario and measured policy.
 *
 * @since 0.1.0
 */
export const targetRows = (f: LatencyFigures | undefined): Array<Array<string>> => {
  const verdict = (ok: boolean | undefined) => (ok === undefined ? "not measured" : ok ? "met" : "**missed**")
  const names = f ? ourNames(f) : ["ours"]
  return names.flatMap((name) =>
    ([["b", 1.01, "no slower than the fastest peer (±1 %)"], ["a", 1.2, "within 1.2× of the fastest peer"]] as const)
      .map(([id, limit, goal]) => {
        const v = f ? versusFastestPeer(f, id, name) : undefined
        return [
          `latency (${id}) ${goal} (first answer token and total${f ? `; ${name}` : ""})`,
          v
            ? `first token ${ms(v.firstToken.ours)} vs ${ms(v.firstToken.peer)} ms (${
              ratio(v.firstToken.ours, v.firstToken.peer)
            }), total ${ms(v.total.ours)} vs ${ms(v.total.peer)} ms (${ratio(v.total.ours, v.total.peer)})`
            : "n/a",
          verdict(
            v ? v.firstToken.ours <= v.firstToken.peer * limit && v.total.ours <= v.total.peer * limit : undefined
          )
        ]
      })
  )
}

/** The docs/benchmarks.md section. @since 0.1.0 */
export const markdownSection = (f: LatencyFigures | string): string => {
  if (typeof f === "string") return `## Latency a user feels\n\nNot measured: ${f}`
  const s = f.settings
  const ratios = ourNames(f).map((name) => {
    const parts = scenarios.flatMap((sc) => {
      const v = versusFastestPeer(f, sc.id, name)
      return v
        ? [
          `${sc.title.split(" ")[0]} ${ratio(v.firstToken.ours, v.firstToken.peer)} / ${
            ratio(v.total.ours, v.total.peer)
          }`
        ]
        : []
    })
    return `${name} ÷ the fastest peer, first answer token / total: ${parts.join(", ")}.`
  })
  return `## Latency a user feels

\`bench/latency.ts\` (alone: \`npx tsx bench/latency.ts [--quick] [--ttft=400] [--tps=50] [--reps=5] [--policies=always,auto]\`;
in \`npm run bench\`: \`BENCH_LATENCY_TTFT_MS\`, \`BENCH_LATENCY_TPS\`, \`BENCH_LATENCY_REPS\`, \`BENCH_LATENCY_POLICIES\`).
Measured ${f.date} in ${Math.round(f.seconds)} s (load ${f.loadBefore.toFixed(1)} → ${
    f.loadAfter.toFixed(1)
  }); this section alone is
re-measured into this page by \`BENCH_ONLY=latency npm run bench -- --merge\`.
**Settings: time to first token ${s.ttftMs} ms, ${s.tokensPerSecond} tokens/s, ${s.reps} timed runs per row**, median (min–max),
wall clock, the engines interleaved round-robin after two warm-up runs each against an instant provider.

The provider (bench/latency/fakeProvider.ts) is an OpenAI-compatible HTTP server on 127.0.0.1: a reply's
first token comes ${s.ttftMs} ms after the request, then one token every ${
    (1000 / s.tokensPerSecond).toFixed(0)
  } ms; a non-streamed reply arrives
whole when its last token would have (TTFT + tokens ÷ rate). Prompt length costs nothing (no prefill
time is modelled). Every engine reaches it through the real \`openai\` SDK. What the model says depends
only on the request (bench/latency/scenarios.ts): a forced \`select_tools\` call is answered with
\`lookup\`; a request offering \`lookup\` gets one \`lookup\` call per turn until the conversation holds as
many tool results as the question needs (0 in (a), 2 in (b) and (c)), then the answer; a request offering
no tools gets the answer. The answer is the same 60-token text everywhere. (c) gives every engine 20
tools (\`lookup\` and 19 of test/utils/catalogue.ts), above our tool-selection threshold of 12.

Engines: ours through the public API as \`App.layerMemory\` wires it (\`OpenAiLlm\`, \`Tools\`, \`ContextGuard.layer\`,
\`Interrupts\`, no hooks, agent defaults; bench/latency/ours.ts); the Vercel AI SDK \`streamText\` with tools
and the OpenAI Agents SDK \`Runner.run(…, { stream: true })\`. Neither peer's OpenAI provider package is
installed here (\`@ai-sdk/openai\`, \`@ai-sdk/openai-compatible\`, \`@openai/agents-openai\`), so each gets a
model written for this benchmark over the real \`openai\` SDK: the AI SDK's \`LanguageModelV3\`
(bench/latency/aiSdk.ts) and agents-core's \`Model\` (bench/latency/agentsSdk.ts), both streaming chunks
through as they arrive and doing no more than the wire conversion.

- **first answer token**: from the start of the run to the first answer text the consumer receives
  (ours: the first \`AnswerDelta\` event of \`agent.run\`; AI SDK: the first \`text-delta\` of \`fullStream\`;
  Agents SDK: the first \`output_text_delta\` raw model event). **total**: until the run's stream ends.
- **model time**: what the latency model alone charges for the calls made, one after the other
  (TTFT + tokens ÷ rate each); total − model time is engine, SDK and loopback HTTP time.
- **LLM calls**: as the provider served them, in order; \`*\` = streamed. \`selection\`: the forced
  \`select_tools\` call; \`tool\`: the reply was a tool call; \`answer\`: a text reply to a request offering
  tools; \`synthesis\`: a text reply to a request offering none whose system prompt asks for the final answer.
- **output tokens**: generated by the provider over the run; the engine's own usage report agreed
  unless the cell says otherwise.

${render(f)}
${f.notes.length > 0 ? `\n${f.notes.map((n) => `- ${n}`).join("\n")}\n` : ""}
What the engines do. The peers stream every call, and the answer the user sees is the text of the last
loop call, streamed as it is generated: one call in (a), two tool calls and the answer in (b) and (c).
They make no selection call in (c): all 20 definitions go with every call (free here, as prompt length
costs no time). Ours with synthesis \`always\` makes every loop call non-streamed
(\`chat\`); the loop ends with a text reply — the whole answer, generated and waited for in full — and
then the synthesis call streams the answer again. So its first answer token comes after the loop's answer
call has finished plus the synthesis call's time to first token, and every run makes one more call and
generates the answer's tokens twice. With \`auto\` (the default) every loop call streams and the last
one is the answer, shown as it is written: the same calls as the peers. In (c) our selection call
(non-streamed, on the fast model when one is configured) comes first under both policies: it costs a
call here, where prompt length is free, and saves the definitions of the unselected tools on every
later call with a real provider (see "Tool selection").
${ratios.map((r) => `\n${r}`).join("")}`
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const settings = settingsFrom(process.argv.slice(2), process.env, process.env.BENCH_QUICK === "1")
  console.log(
    `Latency: TTFT ${settings.ttftMs} ms, ${settings.tokensPerSecond} tokens/s, ${settings.reps} runs each, policies ${
      settings.policies.join(", ")
    }`
  )
  run(settings, console.log).then(
    (f) => {
      console.log(render(f))
      for (const n of f.notes) console.log(n)
      console.log(`${f.seconds.toFixed(0)} s, load ${f.loadBefore.toFixed(1)} → ${f.loadAfter.toFixed(1)}`)
      process.exit(0)
    },
    (e) => {
      console.error(e)
      process.exit(1)
    }
  )
}
