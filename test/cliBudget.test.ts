/**
 * The CLI and budgets / guardrails: a tripped guardrail and an exhausted
 * budget are printed plainly, `done` shows the cost; a budget wait is asked on
 * the terminal (an amount extends, anything else stops; without a terminal it
 * stops, and `--yes` never spends).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { budgetAnswerFor, parseBudgetAnswer } from "../src/app/cliApproval.js"
import { type Output, textRenderer } from "../src/app/cliRender.js"
import type { RunEvent } from "../src/RunEvent.js"

const render = (events: ReadonlyArray<RunEvent>): string => {
  let text = ""
  const out: Output = { write: (t) => void (text += t), error: (t) => void (text += t), isTTY: false }
  const r = textRenderer(out, { model: "m", demo: false })
  for (const e of events) r.event(e)
  r.close()
  return text
}

const done: RunEvent = {
  _tag: "Done",
  answer: "x",
  iterations: 2,
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, llm_calls: 2, by_phase: {}, cost_usd: 0.00042 },
  elapsed: 1,
  pending_injections: []
}

describe("CLI: budgets and guardrails", () => {
  it("prints a tripped guardrail, an exhausted budget, the budget wait's outcome and the cost", () => {
    const text = render([
      { _tag: "GuardrailTripped", stage: "input", name: "secrets", reason: "matched pattern \"password\"" },
      { _tag: "BudgetStatus", status: "exhausted", spent_usd: 0.01, limit_usd: 0.01 },
      { _tag: "BudgetStatus", status: "extended", spent_usd: 0.01, limit_usd: 0.02 },
      {
        _tag: "BudgetExhausted",
        spent_tokens: 1200,
        limit_tokens: 2000,
        spent_usd: 0.02,
        limit_usd: 0.02,
        needed_tokens: 900,
        needed_usd: 0.0011
      },
      done
    ])
    assert.include(text, "⛔ guardrail secrets tripped on the request: matched pattern \"password\"")
    assert.include(text, "budget spent: $0.01 of $0.01")
    assert.include(text, "budget extended to $0.02")
    assert.include(
      text,
      "budget exhausted: 1200 of 2000 tokens, $0.02 of $0.02 spent; the next step and the answer need ≈ 900 tokens ($0.0011); answering from what the run has"
    )
    assert.include(text, "$0.00042")
  })

  it("an amount extends, anything else stops", () => {
    assert.deepStrictEqual(parseBudgetAnswer(" 0.5 "), { decision: "approve", reason: "0.5" })
    assert.deepStrictEqual(parseBudgetAnswer(""), { decision: "deny" })
    assert.deepStrictEqual(parseBudgetAnswer("no"), { decision: "deny" })
    assert.deepStrictEqual(parseBudgetAnswer("-1"), { decision: "deny" })
  })

  it.effect("asks on the terminal; without one (or with --yes) it stops", () =>
    Effect.gen(function*() {
      const wait = { _tag: "BudgetStatus", status: "exhausted", spent_usd: 0.01, limit_usd: 0.01 } as const
      const asked: Array<string> = []
      const answer = yield* budgetAnswerFor("ask", wait, (q) => Effect.sync(() => (asked.push(q), "0.25")))
      assert.deepStrictEqual(answer, { decision: "approve", reason: "0.25" })
      assert.match(asked[0], /budget is spent \(\$0\.01 of \$0\.01\)/)
      assert.strictEqual((yield* budgetAnswerFor("none", wait)).decision, "deny")
      assert.strictEqual((yield* budgetAnswerFor("all", wait)).decision, "deny")
    }))
})
