/**
 * The package's binary, `react-engine eval`, as a real process: src/app/react-engine.ts (the
 * file `npm run build` compiles to dist/bin/react-engine.js, package.json `bin`) run by node
 * through tsx — the built file itself runs in test/package/install.test.ts, installed from the
 * packed tarball. Offline: no LLM_* in the child's environment, so the demo model.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type * as Eval from "../src/Eval.js"

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

const offlineEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(?:(?:FAST_)?LLM_|MCP_CONFIG$|REACT_|VITEST)/.test(k)) env[k] = v
  }
  return env
}

const reactEngine = (args: ReadonlyArray<string>): Promise<Run> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "src/app/react-engine.ts", ...args],
      { env: offlineEnv(), timeout: 120_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr })
    )
  })

describe("react-engine eval (the package binary)", () => {
  it("runs the example suite offline: exit 0, the table, both reports", { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "eval-bin-"))
    const report = join(dir, "report.json")
    const run = await reactEngine(["eval", "examples/evals/cases.jsonl", "--report", report])
    assert.strictEqual(run.code, 0, run.stderr)
    assert.match(run.stdout, /^judged\s+PASS\s+0\.50/m)
    assert.match(run.stdout, /5\/5 passed, mean score 0\.900/)
    const json = JSON.parse(readFileSync(report, "utf8")) as Eval.Report
    assert.deepStrictEqual(json.cases.map((c) => [c.id, c.passed]), [
      ["arithmetic", true],
      ["arithmetic-regex", true],
      ["greeting", true],
      ["judged", true],
      ["replayed-cassette", true]
    ])
    assert.isTrue(existsSync(join(dir, "report.html")))
  })

  it(
    "a failing case that takes the mean below --min-score: exit 1, and the report says why",
    { timeout: 120_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "eval-bin-"))
      const cases = join(dir, "cases.jsonl")
      writeFileSync(
        cases,
        [
          JSON.stringify({ id: "right", input: "What is 12 * 7?", scorers: [{ type: "contains", value: "84" }] }),
          JSON.stringify({ id: "wrong", input: "What is 12 * 7?", scorers: [{ type: "contains", value: "85" }] })
        ].join("\n")
      )
      const report = join(dir, "report.json")
      const low = await reactEngine(["eval", cases, "--report", report, "--min-score", "0.6"])
      assert.strictEqual(low.code, 1, low.stderr)
      assert.include(low.stderr, "mean score 0.5 is below --min-score 0.6")
      const json = JSON.parse(readFileSync(report, "utf8")) as Eval.Report
      assert.deepStrictEqual(json.cases.map((c) => [c.id, c.passed, c.scores[0].reason]), [
        ["right", true, "contains \"84\""],
        ["wrong", false, "does not contain \"85\""]
      ])
      const enough = await reactEngine(["eval", cases, "--min-score", "0.5"])
      assert.strictEqual(enough.code, 0, enough.stderr)
    }
  )

  it("no command or an unknown one: usage, exit 2", { timeout: 60_000 }, async () => {
    const none = await reactEngine([])
    assert.strictEqual(none.code, 2)
    assert.include(none.stderr, "usage: react-engine eval <cases.jsonl>")
    const unknown = await reactEngine(["evaluate"])
    assert.strictEqual(unknown.code, 2)
    assert.include(unknown.stderr, "unknown command \"evaluate\"")
  })
})
