import { assert, beforeAll, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { fileURLToPath } from "node:url"
import { parse } from "../src/app/cliArgs.js"
import { type Output, textRenderer } from "../src/app/cliRender.js"
import type { RunEvent } from "../src/RunEvent.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the CLI as a child process, with no LLM or MCP configured unless `env` says so. */
const cli = (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Run> => {
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(?:FAST_)?LLM_|^MCP_CONFIG$|^REACT_|^CONTEXT_GUARD_/.test(k)) base[k] = v
  }
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "src/app/cli.ts", ...args],
      { cwd: ROOT, env: { ...base, ...env }, timeout: 120_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr })
      }
    )
  })
}

// The children start together (each pays the TypeScript start-up once), the tests read their results.
let runs: {
  plain: Promise<Run>
  json: Promise<Run>
  help: Promise<Run>
  badFlag: Promise<Run>
  failing: Promise<Run>
  dag: Promise<Run>
}

beforeAll(() => {
  runs = {
    plain: cli(["what is 2+3*4"]),
    json: cli(["--json", "--conversation", "cli-test-1", "what is 2+3*4"]),
    help: cli(["--help"]),
    badFlag: cli(["--max-iterations", "zero", "hi"]),
    // the demo model cannot plan: DAG mode falls back to ReAct mode and still answers
    dag: cli(["--json", "--mode", "dag", "what is 2+3*4"]),
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

  it("--help prints the usage; a bad flag is a usage error (exit 2)", async () => {
    const help = await runs.help
    assert.strictEqual(help.code, 0)
    assert.include(help.stdout, "Usage: npm run ask")
    assert.include(help.stdout, "--max-iterations")
    const bad = await runs.badFlag
    assert.strictEqual(bad.code, 2)
    assert.include(bad.stderr, "--max-iterations must be an integer")
    assert.strictEqual(bad.stdout, "")
  }, 150_000)

  it("--mode dag runs DAG mode (on the demo model: the ReAct fallback answers)", async () => {
    const run = await runs.dag
    assert.strictEqual(run.code, 0, run.stderr)
    const events = run.stdout.trim().split("\n").map((l) => JSON.parse(l) as { event: string; data: any })
    assert.deepStrictEqual(events.filter((e) => e.event === "phase").map((e) => e.data.phase), ["planning", "react_fallback"])
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
      { _tag: "DagPlan", round: 1, steps: [{ id: "1", task: "find A", dependencies: [] }, { id: "2", task: "use A", dependencies: ["1"] }] },
      { _tag: "DagStep", round: 1, status: "start", step_id: "1" },
      { _tag: "ToolStart", iteration: 1, tool_name: "lookup", tool_args: { q: "A" }, step_id: "1" },
      { _tag: "ToolDone", iteration: 1, tool_name: "lookup", observation: "A is 1", error: null, iter_elapsed: 0.5, step_id: "1" },
      { _tag: "DagStep", round: 1, status: "done", step_id: "1", result: "A is 1" },
      { _tag: "DagStep", round: 1, status: "failed", step_id: "2", error: "it broke" },
      { _tag: "DagPhase", phase: "replanning", round: 2, reasoning: "step 2 failed" }
    ]
    for (const e of events) renderer.event(e)
    renderer.close()
    assert.strictEqual(text, [
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
    ].join("\n"))
  })

  it("a failed run prints the error and exits 1", async () => {
    const run = await runs.failing
    assert.strictEqual(run.code, 1, run.stdout + run.stderr)
    assert.include(run.stderr, "✗ error:")
  }, 150_000)
})
