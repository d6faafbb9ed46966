/**
 * Issue 46 item 6, the small texts: `--bogus` gets an error whose quotes are balanced (node's
 * parseArgs left one open), and the eval table says why a judged case scored what it did
 * (only failed scores had their reason shown: a passing judge's 0.6 said nothing).
 */
import { assert, describe, it } from "@effect/vitest"
import { parse } from "../src/app/cliArgs.js"
import type * as Eval from "../src/Eval.js"
import * as EvalReport from "../src/EvalReport.js"

const balanced = (text: string): boolean =>
  (text.match(/'/g) ?? []).length % 2 === 0 && (text.match(/"/g) ?? []).length % 2 === 0

describe("the CLI's and the eval table's texts", () => {
  it("an unknown option: a plain message, its quotes balanced", () => {
    const parsed = parse(["--bogus"])
    assert.strictEqual(parsed._tag, "Invalid")
    const message = parsed._tag === "Invalid" ? parsed.message : ""
    assert.isTrue(balanced(message), message)
    assert.strictEqual(
      message,
      `Unknown option '--bogus'. A question that starts with '-' goes after '--': npm run ask -- -- "--bogus …"`
    )
  })

  it("the eval table shows the judge's reason of a case that passed with less than full marks", () => {
    const report: Eval.Report = {
      summary: { cases: 1, passed: 1, failed: 0, score: 0.8, tokens: 100, cost_usd: null, latency_ms: 10 },
      cases: [{
        id: "judged",
        score: 0.8,
        passed: true,
        answer: "85",
        scores: [
          { scorer: "contains", score: 1, passed: true, reason: "contains 85" },
          { scorer: "judge", score: 0.6, passed: true, reason: "right number, no working shown" }
        ],
        trace: [],
        tokens: 100,
        cost_usd: null,
        latency_ms: 10,
        error: null
      }]
    }
    const table = EvalReport.table(report)
    assert.include(table, "judge: right number, no working shown")
    assert.notInclude(table, "contains 85")
  })
})
