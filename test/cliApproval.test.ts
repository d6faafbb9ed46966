/**
 * Tool approval in the CLI: `--approve-all`, the terminal question (a real
 * pseudo-terminal through util-linux `script`), and `no approver` when stdin is
 * not a terminal — with the demo model, whose calculator call
 * `REACT_APPROVAL_TOOLS=calculator` makes wait.
 */
import { assert, beforeAll, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile, spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { answerFor, approvalMode, NO_APPROVER, parseAnswer, question } from "../src/app/cliApproval.js"
import { parse } from "../src/app/cliArgs.js"
import type { RunEvent } from "../src/RunEvent.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))

const baseEnv = (): Record<string, string> => {
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(?:FAST_)?LLM_|^MCP_CONFIG$|^REACT_|^CONTEXT_GUARD_/.test(k)) base[k] = v
  }
  return { ...base, REACT_APPROVAL_TOOLS: "calculator" }
}

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** The CLI with stdin not a terminal. */
const cli = (args: ReadonlyArray<string>): Promise<Run> =>
  new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      ["--import", "tsx", "src/app/cli.ts", ...args],
      { cwd: ROOT, env: baseEnv(), timeout: 120_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr })
    )
    child.stdin?.end()
  })

const plain = (text: string) => text.replace(/\x1b\[[0-9;]*[A-Za-z]/g, "").replace(/\r/g, "\n")

/** The CLI on a pseudo-terminal: types `answer` (then Enter) when the question shows. */
const cliOnTerminal = (question: string, answer: string): Promise<Run> =>
  new Promise((resolve, reject) => {
    const command = `${process.execPath} --import tsx src/app/cli.ts ${JSON.stringify(question)}`
    const child = spawn("script", ["-qfec", command, "/dev/null"], { cwd: ROOT, env: baseEnv() })
    let output = ""
    let typed = false
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`no end on the terminal; output so far:\n${plain(output)}`))
    }, 120_000)
    child.on("error", (e) => reject(new Error(`util-linux \`script\` is needed for this test: ${e.message}`)))
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString("utf8")
      if (!typed && plain(output).includes("[y/N, or a reason to deny]")) {
        typed = true
        child.stdin.write(`${answer}\r`)
      }
    })
    child.on("close", (code) => {
      clearTimeout(timer)
      resolve({ code, stdout: plain(output), stderr: "" })
    })
  })

let runs: { none: Promise<Run>; all: Promise<Run>; yes: Promise<Run>; reason: Promise<Run> }

beforeAll(() => {
  runs = {
    none: cli(["what is 2+3*4"]),
    all: cli(["--json", "--approve-all", "what is 2+3*4"]),
    yes: cliOnTerminal("what is 2+3*4", "y"),
    reason: cliOnTerminal("what is 6*7", "wrong numbers")
  }
})

const requested: Extract<RunEvent, { _tag: "ApprovalRequested" }> = {
  _tag: "ApprovalRequested",
  approval_id: "apr_1",
  tool_name: "fs__write",
  tool_args: { path: "a" },
  args_hash: "h",
  iteration: 1,
  step_id: "2"
}

describe("cli approval", () => {
  it("answers: y/yes approve; empty, n, no deny; other text denies with that reason", () => {
    assert.deepStrictEqual(parseAnswer(" Y "), { decision: "approve" })
    assert.deepStrictEqual(parseAnswer("yes"), { decision: "approve" })
    assert.deepStrictEqual(parseAnswer(""), { decision: "deny" })
    assert.deepStrictEqual(parseAnswer("No"), { decision: "deny" })
    assert.deepStrictEqual(parseAnswer("not that file"), { decision: "deny", reason: "not that file" })
    assert.strictEqual(question(requested), "Approve [step 2] fs__write({\"path\":\"a\"})? [y/N, or a reason to deny] ")
  })

  it.effect("modes: --approve-all wins; a terminal is asked; no terminal denies with `no approver`", () =>
    Effect.gen(function*() {
      assert.strictEqual(approvalMode(true, false), "all")
      assert.strictEqual(approvalMode(false, true), "ask")
      assert.strictEqual(approvalMode(false, false), "none")
      assert.deepStrictEqual(yield* answerFor("all", requested, () => Effect.die("not asked")), { decision: "approve" })
      assert.deepStrictEqual(yield* answerFor("none", requested, () => Effect.die("not asked")), {
        decision: "deny",
        reason: NO_APPROVER
      })
      const asked: Array<string> = []
      const answer = yield* answerFor("ask", requested, (q) => Effect.sync(() => (asked.push(q), "n")))
      assert.deepStrictEqual([asked, answer], [[question(requested)], { decision: "deny" }])
      const parsed = parse(["--approve-all", "hi"])
      assert.isTrue(parsed._tag === "Run" && parsed.options.approveAll)
      const plainRun = parse(["hi"])
      assert.isTrue(plainRun._tag === "Run" && !plainRun.options.approveAll)
    }))

  it("stdin not a terminal: the call is denied with `no approver`, the run still answers", async () => {
    const run = await runs.none
    assert.strictEqual(run.code, 0, run.stderr)
    assert.include(run.stdout, "? calculator waits for approval")
    assert.include(run.stdout, "✗ denied: no approver")
    assert.include(run.stdout, "the user denied this call: no approver")
    assert.notInclude(run.stdout, "2+3*4 = **14**")
  }, 150_000)

  it("--approve-all: approved without asking, the tool runs", async () => {
    const run = await runs.all
    assert.strictEqual(run.code, 0, run.stderr)
    const events = run.stdout.trim().split("\n").map((l) => JSON.parse(l) as { event: string; data: any })
    const approvals = events.filter((e) => e.event === "approval").map((e) => e.data.status)
    assert.deepStrictEqual(approvals, ["requested", "approved"])
    const done = events.find((e) => e.event === "step" && e.data.type === "iteration" && e.data.status === "done")
    assert.strictEqual(done?.data.observation, "2+3*4 = 14")
  }, 150_000)

  it("on a terminal: asks; `y` approves", async () => {
    const run = await runs.yes
    assert.strictEqual(run.code, 0, run.stdout)
    assert.include(run.stdout, "Approve calculator({\"expression\":\"2+3*4\"})? [y/N, or a reason to deny]")
    assert.include(run.stdout, "✓ approved")
    // on a terminal the answer's markdown is rendered (bold as ANSI): compare the text
    assert.include(run.stdout.replace(/\x1b\[[0-9;]*m/g, ""), "2+3*4 = 14")
  }, 150_000)

  it("on a terminal: a typed reason denies with it", async () => {
    const run = await runs.reason
    assert.strictEqual(run.code, 0, run.stdout)
    assert.include(run.stdout, "✗ denied: wrong numbers")
    assert.include(run.stdout, "the user denied this call: wrong numbers")
  }, 150_000)
})
