/**
 * EvalSuite: the example eval suite (examples/evals/cases.jsonl) as vitest tests, one per
 * case, on the offline demo model; and a case that does not pass fails its test with every
 * score and reason — checked on the assertion itself and in a vitest child process.
 */
import * as vitest from "@effect/vitest"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { execFile } from "node:child_process"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join, resolve } from "node:path"
import * as EvalSuite from "../src/EvalSuite.js"
import { demoAgentLayer, demoLlm } from "./utils/demoAgent.js"

// the example suite: five tests, each green only when its case passes
EvalSuite.describe(vitest, "examples/evals/cases.jsonl", "examples/evals/cases.jsonl", {
  agent: demoAgentLayer,
  judge: demoLlm
})

const ROOT = resolve(import.meta.dirname, "..")

describe("EvalSuite: a case that does not pass", () => {
  it.effect("fails with EvalCaseFailed, its message every score with its reason", () =>
    Effect.gen(function*() {
      const failure = yield* EvalSuite.runCase(
        {
          id: "wrong-product",
          input: "What is 12 * 7?",
          scorers: [{ type: "contains", value: "85" }, { type: "tool_calls", name: "calculator", count: 1 }]
        },
        { agent: demoAgentLayer }
      ).pipe(Effect.flip)
      assert.strictEqual(failure._tag, "EvalCaseFailed")
      assert.strictEqual(failure.score, 0.5)
      const lines = failure.message.split("\n")
      assert.deepStrictEqual(lines.slice(0, 3), [
        "case \"wrong-product\": score 0.50, FAILED",
        "  ✗ contains 0.00: does not contain \"85\"",
        "  ✓ tool_calls 1.00: 1 call(s) of calculator, expected 1"
      ])
      assert.match(lines[3], /^ {2}answer: ".*84/)
    }))

  it.effect("minScore: the mean decides — the same case passes at 0.5 and fails at 0.6", () =>
    Effect.gen(function*() {
      const c = {
        id: "half",
        input: "What is 12 * 7?",
        scorers: [{ type: "contains" as const, value: "85" }, { type: "contains" as const, value: "84" }]
      }
      const ok = yield* EvalSuite.runCase(c, { agent: demoAgentLayer, minScore: 0.5 })
      assert.strictEqual(ok.score, 0.5)
      const failure = yield* Effect.flip(EvalSuite.runCase(c, { agent: demoAgentLayer, minScore: 0.6 }))
      assert.include(failure.message, "score 0.50 (min 0.6), FAILED")
    }))

  it("a malformed cases file is refused at collection, naming the file and line", () => {
    const dir = mkdtempSync(join(tmpdir(), "eval-suite-"))
    const file = join(dir, "cases.jsonl")
    writeFileSync(
      file,
      "{\"id\":\"a\",\"input\":\"x\",\"scorers\":[]}\n{\"id\":\"b\",\"cassette\":\"missing.cassette.json\",\"scorers\":[]}\n"
    )
    assert.throws(() => EvalSuite.load(file), `${file}:2: cassette missing.cassette.json: ENOENT`)
  })

  it("in vitest itself: the failing case's test fails and the output shows its scores and reasons", {
    timeout: 120_000
  }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "eval-suite-"))
    const config = join(dir, "vitest.config.mjs")
    writeFileSync(
      config,
      `export default { test: { include: ["test/fixtures/evalSuiteFailing.ts"], reporters: ["default"] } }\n`
    )
    const run = await new Promise<{ code: number | null; out: string }>((done) =>
      execFile(
        process.execPath,
        [join(ROOT, "node_modules/vitest/vitest.mjs"), "run", "--config", config, "--root", ROOT],
        {
          cwd: ROOT,
          env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" },
          timeout: 110_000,
          maxBuffer: 16 * 1024 * 1024
        },
        (error, stdout, stderr) =>
          done({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, out: stdout + stderr })
      )
    )
    const out = run.out.replace(/\x1b\[[0-9;]*m/g, "")
    assert.strictEqual(run.code, 1, out)
    assert.match(out, /Tests\s+1 failed \| 1 passed \(2\)/)
    assert.include(out, "case \"wrong\": score 0.00, FAILED")
    assert.include(out, "✗ contains 0.00: does not contain \"85\"")
  })
})
