/**
 * `Eval`'s scorers: each turns one run into a `Score` with its reason — the
 * answer checks, the JSON Schema, the tool calls, the limits and the LLM judge
 * (on the fast model, through `structuredCall`).
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { Score, Scorer } from "../../Eval.js"
import type { LlmService } from "../../Llm.js"
import type { RunResult } from "../../RunEvent.js"
import { structuredCallWith } from "../../StructuredCall.js"
import { checkJsonSchema } from "./jsonSchema.js"

export const truncate = (s: string, n = 300) => (s.length > n ? `${s.slice(0, n)}…` : s)

/** The judge's reply; a blank reason is refused, so structuredCall asks again (its next level). */
const JudgeVerdict = Schema.Struct({
  score: Schema.Number.pipe(Schema.between(0, 1)).annotations({
    description: "0 (fails the rubric) to 1 (fully meets it)"
  }),
  reason: Schema.String.pipe(Schema.pattern(/\S/)).annotations({ description: "one sentence: why this score" })
})

const judge = (
  judgeLlm: LlmService | undefined,
  question: string,
  answer: string,
  rubric: string,
  pass: number
): Effect.Effect<Score> => {
  if (judgeLlm === undefined) {
    return Effect.succeed({ scorer: "judge", score: 0, passed: false, reason: "no judge model configured" })
  }
  return structuredCallWith(judgeLlm, {
    messages: [
      {
        role: "system",
        content:
          "You grade an AI assistant's answer against a rubric. Give a score between 0 (fails the rubric) and 1 (fully meets it) and a one-sentence reason."
      },
      { role: "user", content: `Question:\n${question}\n\nAnswer:\n${answer}\n\nRubric:\n${rubric}` }
    ],
    schema: JudgeVerdict,
    functionName: "grade"
  }).pipe(
    Effect.map(({ value }) => ({
      scorer: "judge",
      score: value.score,
      passed: value.score >= pass,
      reason: value.reason
    })),
    Effect.catchAll((e) =>
      Effect.succeed({ scorer: "judge", score: 0, passed: false, reason: `the judge failed: ${e.message}` })
    )
  )
}

const binary = (scorer: string, passed: boolean, reason: string): Score => ({
  scorer,
  score: passed ? 1 : 0,
  passed,
  reason
})

/** Scores one run. */
export const score = (
  scorer: Scorer,
  run: { readonly question: string; readonly result: RunResult; readonly latencyMs: number },
  judgeLlm?: LlmService
): Effect.Effect<Score> => {
  const answer = run.result.answer
  switch (scorer.type) {
    case "exact":
      return Effect.succeed(binary(
        "exact",
        answer.trim() === scorer.value.trim(),
        answer.trim() === scorer.value.trim()
          ? "the answer is exactly the expected text"
          : `expected exactly ${JSON.stringify(truncate(scorer.value, 80))}`
      ))
    case "contains": {
      const ok = scorer.ignore_case === true
        ? answer.toLowerCase().includes(scorer.value.toLowerCase())
        : answer.includes(scorer.value)
      return Effect.succeed(
        binary("contains", ok, `${ok ? "contains" : "does not contain"} ${JSON.stringify(scorer.value)}`)
      )
    }
    case "regex": {
      const ok = new RegExp(scorer.pattern, scorer.flags).test(answer)
      return Effect.succeed(
        binary("regex", ok, `${ok ? "matches" : "does not match"} /${scorer.pattern}/${scorer.flags ?? ""}`)
      )
    }
    case "json_schema": {
      let value: unknown
      const text = answer.trim().replace(/^```(?:json)?\s*/, "").replace(/```$/, "")
      try {
        value = JSON.parse(text)
      } catch {
        return Effect.succeed(binary("json_schema", false, "the answer is not JSON"))
      }
      const problem = checkJsonSchema(scorer.schema, value)
      return Effect.succeed(binary("json_schema", problem === undefined, problem ?? "the answer matches the schema"))
    }
    case "tool_calls": {
      const pattern = scorer.args !== undefined ? new RegExp(scorer.args) : undefined
      const n =
        run.result.steps.filter((s) =>
          s.tool_name === scorer.name && (pattern === undefined || pattern.test(JSON.stringify(s.tool_args ?? {})))
        ).length
      const c = scorer.count
      const min = c === undefined ? 1 : typeof c === "number" ? c : c.min ?? 0
      const max = c === undefined ? Infinity : typeof c === "number" ? c : c.max ?? Infinity
      const ok = n >= min && n <= max
      const want = min === max ? `${min}` : max === Infinity ? `at least ${min}` : `${min} to ${max}`
      return Effect.succeed(
        binary(
          "tool_calls",
          ok,
          `${n} call(s) of ${scorer.name}${pattern ? ` matching /${scorer.args}/` : ""}, expected ${want}`
        )
      )
    }
    case "limits": {
      const problems: Array<string> = []
      const tokens = run.result.usage.total_tokens
      const cost = (run.result.usage as { cost_usd?: number }).cost_usd
      if (scorer.max_tokens !== undefined && tokens > scorer.max_tokens) {
        problems.push(`${tokens} tokens > ${scorer.max_tokens}`)
      }
      if (scorer.max_cost_usd !== undefined && cost !== undefined && cost > scorer.max_cost_usd) {
        problems.push(`$${cost} > $${scorer.max_cost_usd}`)
      }
      if (scorer.max_latency_ms !== undefined && run.latencyMs > scorer.max_latency_ms) {
        problems.push(`${Math.round(run.latencyMs)} ms > ${scorer.max_latency_ms} ms`)
      }
      return Effect.succeed(
        binary(
          "limits",
          problems.length === 0,
          problems.length === 0 ? `${tokens} tokens, ${Math.round(run.latencyMs)} ms` : problems.join("; ")
        )
      )
    }
    case "judge":
      return judge(judgeLlm, run.question, answer, scorer.rubric, scorer.pass_score ?? 0.5)
  }
}
