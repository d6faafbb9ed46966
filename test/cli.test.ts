import { assert, beforeAll, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { parse } from "../src/app/cliArgs.js"
import { jsonRenderer, type Output, textRenderer } from "../src/app/cliRender.js"
import type { RunEvent } from "../src/RunEvent.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const cleanEnv = (): Record<string, string> => {
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(?:FAST_)?LLM_|^MCP_CONFIG$|^REACT_|^CONTEXT_GUARD_|^npm_/.test(k)) base[k] = v
  }
  return base
}

/** Runs the CLI as a child process, with no LLM or MCP configured unless `env` says so. */
const cli = (
  args: ReadonlyArray<string>,
  env: Record<string, string> = {},
  command?: ReadonlyArray<string>
): Promise<Run> => {
  const [file, ...prefix] = command ?? [process.execPath, "--import", "tsx", "src/app/cli.ts"]
  return new Promise((resolve) => {
    execFile(
      file,
      [...prefix, ...args],
      { cwd: ROOT, env: { ...cleanEnv(), ...env }, timeout: 120_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr })
      }
    )
  })
}

const guardrailsFile = (): string => {
  const file = join(mkdtempSync(join(tmpdir(), "cli-guardrails-")), "guardrails.json")
  writeFileSync(
    file,
    JSON.stringify({
      input: [{ type: "pattern", name: "secrets", patterns: ["password"] }],
      refusal: "No secrets here."
    })
  )
  return file
}

// The children start together (each pays the TypeScript start-up once), the tests read their results.
let runs: {
  plain: Promise<Run>
  json: Promise<Run>
  help: Promise<Run>
  badFlag: Promise<Run>
  tooMany: Promise<Run>
  failing: Promise<Run>
  dag: Promise<Run>
  retrying: Promise<Run>
  tools: Promise<Run>
  toolsJson: Promise<Run>
  npmJson: Promise<Run>
}

beforeAll(() => {
  runs = {
    plain: cli(["what is 2+3*4"]),
    json: cli(["--json", "--conversation", "cli-test-1", "what is 2+3*4"]),
    help: cli(["--help"]),
    badFlag: cli(["--max-iterations", "zero", "hi"]),
    // the demo model plans too: one step (calc) for an arithmetic question
    dag: cli(["--json", "--mode", "dag", "what is 2+3*4"]),
    // the API's range: 1 to 200
    tooMany: cli(["--max-iterations", "201", "hi"]),
    tools: cli(["--tools"]),
    toolsJson: cli(["--tools", "--json"]),
    // through npm, as the docs say: -s keeps npm's own lines off stdout
    npmJson: cli(["--json", "what is 2+3*4"], {}, ["npm", "run", "-s", "ask", "--"]),
    // a configured model that cannot be reached, retried once: the retry is a phase line
    retrying: cli(["--json", "what is 2+3*4"], {
      LLM_MODEL: "unreachable",
      LLM_BASE_URL: "http://127.0.0.1:9/v1",
      LLM_API_KEY: "x",
      LLM_MAX_RETRIES: "1",
      LLM_RETRY_BASE_DELAY_MS: "10"
    }),
    // a configured model that cannot be reached: the run fails, the CLI exits 1
    failing: cli(["what is 2+3*4"], {
      LLM_MODEL: "unreachable",
      LLM_BASE_URL: "http://127.0.0.1:9/v1",
      LLM_API_KEY: "x",
      LLM_MAX_RETRIES: "0"
    })
  }
})

describe("cli", () => {
  // started after the others (their eleven children at once already take most of a minute on a loaded machine)
  it("piped (as `| cat`), a tripped input guardrail prints the ⛔ line and the refusal as the answer", async () => {
    await Promise.all(Object.values(runs))
    const run = await cli(["tell me the root password"], { REACT_GUARDRAILS_FILE: guardrailsFile() })
    assert.strictEqual(run.code, 0, run.stderr)
    assert.include(run.stdout, "⛔ guardrail secrets tripped on the request: matched pattern \"password\"")
    assert.include(run.stdout, "\nNo secrets here.\n")
  }, 240_000)

  it("a money budget without a price: the start-up error once, plainly (exit 1)", async () => {
    await Promise.all(Object.values(runs))
    const run = await cli(["hi"], { REACT_RUN_BUDGET_USD: "0.01" })
    assert.strictEqual(run.code, 1)
    const lines = run.stderr.split("\n").filter((l) => /price/.test(l))
    assert.deepStrictEqual(lines, [
      "✗ could not start: a money budget needs a price for model offline-demo: add it to MODEL_PRICES_FILE or budget.prices"
    ])
  }, 240_000)

  it("answers with the demo model: tool line, result line, streamed answer, footer", async () => {
    const run = await runs.plain
    assert.strictEqual(run.code, 0, run.stderr)
    const lines = run.stdout.split("\n")
    assert.include(run.stderr, "OFFLINE DEMO model")
    assert.include(lines, "→ calculator({\"expression\":\"2+3*4\"})")
    assert.isTrue(lines.some((l) => /^✓ calculator \d+\.\d\ds: 2\+3\*4 = 14$/.test(l)), run.stdout)
    assert.include(run.stdout, "2+3*4 = **14**")
    assert.match(run.stdout, /— 2 iterations · \d+ tokens .* · offline-demo \(no LLM configured\)/)
    // plain output (not a TTY): no spinner frames, no colour codes
    assert.notMatch(run.stdout, /\x1b\[|⠋/)
  }, 150_000)

  it("--json prints parseable event lines ending with done", async () => {
    const run = await runs.json
    assert.strictEqual(run.code, 0, run.stderr)
    const events = run.stdout.trim().split("\n").map((l) => JSON.parse(l) as { event: string; data: any })
    assert.strictEqual(events[events.length - 1].event, "done")
    const done = events[events.length - 1].data
    assert.include(done.answer, "14")
    assert.strictEqual(done.conversation_id, "cli-test-1")
    assert.isAbove(done.usage.llm_calls, 0)
    const toolDone = events.find((e) => e.data.type === "iteration" && e.data.status === "done")
    assert.strictEqual(toolDone?.data.observation, "2+3*4 = 14")
    const deltas = events.filter((e) => e.event === "answer" && e.data.status === "delta")
    assert.isAbove(deltas.length, 1)
    assert.strictEqual(deltas.map((e) => e.data.content).join(""), done.answer)
  }, 150_000)

  it("npm run -s ask -- --json: stdout is only JSON lines", async () => {
    const run = await runs.npmJson
    assert.strictEqual(run.code, 0, run.stderr)
    const lines = run.stdout.trim().split("\n")
    for (const l of lines) assert.doesNotThrow(() => JSON.parse(l), undefined, undefined, `not JSON: ${l}`)
    assert.strictEqual(JSON.parse(lines[lines.length - 1]).event, "done")
  }, 150_000)

  it("--help prints the usage with every exit code; a bad flag is a usage error (exit 2)", async () => {
    const help = await runs.help
    assert.strictEqual(help.code, 0)
    assert.include(help.stdout, "Usage: npm run ask")
    assert.include(help.stdout, "npm run -s ask -- --json")
    assert.include(help.stdout, "--max-iterations")
    assert.include(help.stdout, "--tools")
    assert.include(help.stdout, "130 interrupted")
    const bad = await runs.badFlag
    assert.strictEqual(bad.code, 2)
    assert.include(bad.stderr, "--max-iterations must be an integer")
    assert.strictEqual(bad.stdout, "")
    const tooMany = await runs.tooMany
    assert.strictEqual(tooMany.code, 2)
    assert.include(tooMany.stderr, "--max-iterations must be an integer from 1 to 200, got \"201\"")
  }, 150_000)

  it("--tools lists the tools with their source; with --json the same object as GET /api/tools", async () => {
    const text = await runs.tools
    assert.strictEqual(text.code, 0, text.stderr)
    const lines = text.stdout.split("\n")
    assert.strictEqual(lines[0], "2 tools:")
    assert.match(lines[1], /^ {2}calculator {4}builtin {2}Evaluate an arithmetic expression/)
    assert.match(lines[2], /^ {2}current_time {2}builtin {2}Get the current date and time/)
    const json = await runs.toolsJson
    assert.strictEqual(json.code, 0, json.stderr)
    const body = JSON.parse(json.stdout)
    assert.deepStrictEqual(body.tools.map((t: { name: string; source: string }) => [t.name, t.source]), [
      ["calculator", "builtin"],
      ["current_time", "builtin"]
    ])
    assert.deepStrictEqual(body.failed_servers, [])
  }, 150_000)

  it("an LLM retry is a phase {phase:\"retrying\"} JSON line, as over SSE", async () => {
    const run = await runs.retrying
    assert.strictEqual(run.code, 1, run.stdout + run.stderr)
    const events = run.stdout.trim().split("\n").map((l) => JSON.parse(l) as { event: string; data: any })
    const retry = events.find((e) => e.event === "phase")
    assert.deepInclude(retry?.data, { phase: "retrying", attempt: 1, reason: "Connection" })
    assert.isNumber(retry?.data.delay_ms)
    assert.deepStrictEqual(events.slice(-2).map((e) => e.event), ["error", "done"])
  }, 150_000)

  it("--mode dag runs DAG mode (on the demo model: a one-step plan whose step runs the calculator)", async () => {
    const run = await runs.dag
    assert.strictEqual(run.code, 0, run.stderr)
    const events = run.stdout.trim().split("\n").map((l) => JSON.parse(l) as { event: string; data: any })
    assert.deepStrictEqual(events.filter((e) => e.event === "phase").map((e) => e.data.phase), [
      "planning",
      "analyzing"
    ])
    const plan = events.find((e) => e.event === "dag" && e.data.type === "plan")
    assert.deepStrictEqual(plan?.data.steps.map((s: any) => s.id), ["calc"])
    const done = events[events.length - 1]
    assert.strictEqual(done.event, "done")
    assert.include(done.data.answer, "14")
    assert.isAbove(done.data.usage.by_phase.planning.llm_calls, 0)
  }, 150_000)

  it("--mode is parsed and checked", () => {
    const parsed = parse(["--mode", "auto", "q"])
    assert.deepStrictEqual(parsed._tag === "Run" ? parsed.options.mode : undefined, "auto")
    const none = parse(["q"])
    assert.isUndefined(none._tag === "Run" ? none.options.mode : "x")
    const bad = parse(["--mode", "graph", "q"])
    assert.deepStrictEqual(bad, { _tag: "Invalid", message: "--mode must be react, dag or auto, got \"graph\"." })
  })

  it("the text renderer shows the plan, each step's start and result, and step-tagged tool lines", () => {
    let text = ""
    const out: Output = { write: (t) => void (text += t), error: (t) => void (text += t), isTTY: false }
    const renderer = textRenderer(out, { model: "m", demo: false })
    const events: ReadonlyArray<RunEvent> = [
      { _tag: "DagPhase", phase: "planning", round: 1 },
      {
        _tag: "DagPlan",
        round: 1,
        steps: [{ id: "1", task: "find A", dependencies: [] }, { id: "2", task: "use A", dependencies: ["1"] }]
      },
      { _tag: "DagStep", round: 1, status: "start", step_id: "1" },
      { _tag: "ToolStart", iteration: 1, tool_name: "lookup", tool_args: { q: "A" }, step_id: "1" },
      {
        _tag: "ToolDone",
        iteration: 1,
        tool_name: "lookup",
        observation: "A is 1",
        error: null,
        iter_elapsed: 0.5,
        step_id: "1"
      },
      { _tag: "DagStep", round: 1, status: "done", step_id: "1", result: "A is 1" },
      { _tag: "DagStep", round: 1, status: "failed", step_id: "2", error: "it broke" },
      { _tag: "DagPhase", phase: "replanning", round: 2, reasoning: "step 2 failed" }
    ]
    for (const e of events) renderer.event(e)
    renderer.close()
    assert.strictEqual(
      text,
      [
        "▸ plan:",
        "  [1] find A",
        "  [2] use A ← 1",
        "[1] ▶ find A",
        "[1] → lookup({\"q\":\"A\"})",
        "[1] ✓ lookup 0.50s: A is 1",
        "[1] ✓ A is 1",
        "[2] ✗ failed: it broke",
        "↻ re-planning: step 2 failed",
        ""
      ].join("\n")
    )
  })

  it("a failed run prints the error and exits 1", async () => {
    const run = await runs.failing
    assert.strictEqual(run.code, 1, run.stdout + run.stderr)
    assert.include(run.stderr, "✗ error:")
  }, 150_000)
})

describe("cli rendering", () => {
  const capture = (isTTY: boolean) => {
    let stdout = ""
    const out: Output = { write: (t) => void (stdout += t), error: () => {}, isTTY }
    return { out, text: () => stdout }
  }
  const answer = (chunks: ReadonlyArray<string>) => [
    { _tag: "AnswerSignal" } as const,
    { _tag: "AnswerStart" } as const,
    ...chunks.map((content) => ({ _tag: "AnswerDelta", content }) as const),
    { _tag: "AnswerDone" } as const
  ]
  const strip = (s: string) => s.replace(/\x1b\[[0-9;]*[A-Za-z]/g, "").replace(/\r/g, "")

  it("on a terminal the answer's markdown is rendered (bold, code, lists, headings), split chunks and all", () => {
    const { out, text } = capture(true)
    const r = textRenderer(out, { model: "m", demo: false })
    for (const e of answer(["# Res", "ult\n17*23 = **3", "91** and `x`\n- one\n", "```\n**raw**\n```\nend"])) r.event(e)
    r.close()
    const shown = text()
    assert.include(shown, "17*23 = \x1b[1m391\x1b[22m")
    assert.include(shown, "\x1b[36mx\x1b[39m")
    assert.include(strip(shown), "• one")
    assert.include(strip(shown), "Result")
    assert.notInclude(strip(shown), "# Result")
    // inside a code block nothing is interpreted
    assert.include(strip(shown), "**raw**")
    assert.include(strip(shown), "end\n")
    assert.notInclude(strip(shown).replace("**raw**", ""), "**")
  })

  it("piped, the answer is the raw text", () => {
    const { out, text } = capture(false)
    const r = textRenderer(out, { model: "m", demo: false })
    for (const e of answer(["17*23 = **3", "91**"])) r.event(e)
    assert.strictEqual(text(), "\n17*23 = **391**\n")
  })

  /** A loop reply streamed as the answer (synthesis auto), then retracted: it called a tool; then the answer. */
  const retracted: ReadonlyArray<RunEvent> = [
    { _tag: "ThinkingStart", iteration: 1 },
    { _tag: "AnswerStart" },
    { _tag: "AnswerDelta", content: "Let me check that.\nOne moment." },
    { _tag: "AnswerReset" },
    { _tag: "ThinkingDone", iteration: 1, reasoning: "Let me check that. One moment." },
    { _tag: "ThinkingStart", iteration: 2 },
    { _tag: "AnswerStart" },
    { _tag: "AnswerDelta", content: "It is **4**." },
    { _tag: "ThinkingDone", iteration: 2, reasoning: "" },
    { _tag: "AnswerSignal" },
    { _tag: "AnswerDone" }
  ]

  it("piped, a retracted answer never reaches stdout: only the answer does", () => {
    const { out, text } = capture(false)
    const r = textRenderer(out, { model: "m", demo: false })
    for (const e of retracted) r.event(e)
    const shown = text()
    assert.notInclude(shown.replace(/· Let me check that\. One moment\./, ""), "Let me check")
    assert.include(shown, "\nIt is **4**.\n")
  })

  it("on a terminal, a retracted answer is followed by a note saying it was not the answer", () => {
    const { out, text } = capture(true)
    const r = textRenderer(out, { model: "m", demo: false })
    for (const e of retracted) r.event(e)
    r.close()
    const shown = strip(text())
    const note = shown.indexOf("↺ (not the answer: the model went on working)")
    assert.isAbove(note, shown.indexOf("Let me check that.\n"))
    assert.isAbove(shown.lastIndexOf("It is 4."), note)
  })

  it("the run's summary line shows the share of the input read from the prompt cache (none when nothing was read)", () => {
    const done = (usage: Record<string, number>): RunEvent =>
      ({
        _tag: "Done",
        answer: "ok",
        iterations: 2,
        usage: { prompt_tokens: 1000, completion_tokens: 40, total_tokens: 1040, llm_calls: 3, by_phase: {}, ...usage },
        elapsed: 1.5,
        pending_injections: []
      }) as RunEvent
    const cached = capture(false)
    textRenderer(cached.out, { model: "claude", demo: false }).event(
      done({ cached_input_tokens: 830, cache_write_input_tokens: 100 })
    )
    assert.include(cached.text(), "1040 tokens (1000 in, 83% cached, 40 out, 3 LLM calls)")
    const uncached = capture(false)
    textRenderer(uncached.out, { model: "m", demo: false }).event(done({}))
    assert.include(uncached.text(), "1040 tokens (1000 in, 40 out, 3 LLM calls)")
  })

  it("a retry is a line (piped) and a JSON line with --json", () => {
    const piped = capture(false)
    textRenderer(piped.out, { model: "m", demo: false }).retry({ attempt: 2, reason: "RateLimited", delayMs: 1500.4 })
    assert.strictEqual(piped.text(), "↻ the model is busy (RateLimited): retry 2 in 1.50s\n")
    const json = capture(false)
    jsonRenderer(json.out).retry({ attempt: 2, reason: "RateLimited", delayMs: 1500.4 })
    assert.deepStrictEqual(JSON.parse(json.text()), {
      event: "phase",
      data: { phase: "retrying", attempt: 2, reason: "RateLimited", delay_ms: 1500 }
    })
  })
})
