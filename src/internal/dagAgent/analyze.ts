/**
 * DAG mode, phase 3: the analyzer. One `structuredCall` on the main
 * model judges whether the round's steps achieved the goal:
 * `{achieved, confidence, reasoning, final_answer?}`, confidence clamped to 0–1.
 * A plain-text reply that is not valid JSON is read field by field (a regex
 * fallback); an unusable reply is "not achieved, confidence 0".
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { LlmService } from "../../Llm.js"
import type { ChatMessage } from "../../Message.js"
import * as Message from "../../Message.js"
import { structuredCallWith } from "../../StructuredCall.js"
import * as Usage from "../../Usage.js"
import type { StepOutcome } from "./step.js"

/** The analyzer's verdict. */
export interface Analysis {
  readonly achieved: boolean
  /** 0–1. */
  readonly confidence: number
  readonly reasoning: string
  readonly finalAnswer?: string
}

/** An analysis and its usage, as a durable run stores it (`dag/<round>/analysis`). */
export const AnalyzedSchema = Schema.Struct({
  analysis: Schema.Struct({
    achieved: Schema.Boolean,
    confidence: Schema.Number,
    reasoning: Schema.String,
    finalAnswer: Schema.optional(Schema.String)
  }),
  usage: Usage.Usage
})

/** Each step's result is cut to this many characters in the analysis prompt. */
export const RESULT_MAX_CHARS = 10_000

const Confidence = Schema.Union(Schema.Number, Schema.NumberFromString)

const AnalysisSchema = Schema.Struct({
  achieved: Schema.Boolean.annotations({ description: "true only if the goal is fully accomplished" }),
  confidence: Confidence.annotations({ description: "0 to 1: how sure you are of this verdict" }),
  reasoning: Schema.String,
  final_answer: Schema.optional(Schema.NullOr(Schema.String)).annotations({
    description: "The complete answer to the goal when achieved, else null"
  })
})

/** The verdict when nothing usable came back. */
export const UNPARSEABLE: Analysis = {
  achieved: false,
  confidence: 0,
  reasoning: "Could not parse the analysis response"
}

/** Clamps to 0–1 (NaN → 0). */
export const clamp = (n: number): number => (Number.isFinite(n) ? Math.min(1, Math.max(0, n)) : 0)

const unquote = (s: string): string => {
  try {
    return JSON.parse(`"${s}"`) as string
  } catch {
    return s
  }
}

/** Reads the fields out of a reply whose JSON is broken. */
export const regexFallback = (text: string): unknown => {
  const achieved = /"?achieved"?\s*[:=]\s*"?(true|false)"?/i.exec(text)
  const confidence = /"?confidence"?\s*[:=]\s*"?([0-9]*\.?[0-9]+)/i.exec(text)
  if (achieved === null || confidence === null) return undefined
  const reasoning = /"reasoning"\s*:\s*"((?:[^"\\]|\\.)*)"/s.exec(text)
  const answer = /"final_answer"\s*:\s*"((?:[^"\\]|\\.)*)"/s.exec(text)
  return {
    achieved: achieved[1].toLowerCase() === "true",
    confidence: Number(confidence[1]),
    reasoning: reasoning ? unquote(reasoning[1]) : "",
    ...(answer ? { final_answer: unquote(answer[1]) } : {})
  }
}

const cut = (text: string, max: number): string =>
  text.length <= max ? text : `${text.slice(0, max)}… [truncated, ${text.length - max} more chars]`

/** The steps' results as text, each cut to `max` characters. */
export const formatResults = (results: ReadonlyArray<StepOutcome>, max: number): string =>
  results.map((r) => {
    const body = r.status === "done" ? cut(r.result ?? "", max) : `(${r.status}) ${cut(r.error ?? "", max)}`
    return `### Step ${r.id} [${r.status}]: ${r.task}\n${body}`
  }).join("\n\n")

/** The analyzer conversation. */
export const analysisMessages = (
  goal: string,
  results: ReadonlyArray<StepOutcome>,
  followUps: ReadonlyArray<string>
): Array<ChatMessage> => [
  Message.system([
    "You check whether a plan executed by an AI agent achieved the user's goal.",
    "Read the goal and every step's result. achieved is true only if the results fully accomplish the goal.",
    "Compare results that come from different sources: when they contradict each other (numbers, dates, claims), say which is more authoritative and lower your confidence.",
    "confidence (0 to 1) is how sure you are of your verdict. reasoning says what was done and what is missing or wrong.",
    "When achieved, final_answer is the complete answer to the goal, in the language of the goal; otherwise null."
  ].join("\n")),
  Message.user([
    `Goal:\n${goal}`,
    ...followUps.map((f) => `[User follow-up]: ${f}`),
    "",
    `Step results:\n${formatResults(results, RESULT_MAX_CHARS)}`
  ].join("\n"))
]

/** @internal */
export const FUNCTION_NAME = "report_analysis"

/** Analyzes a round; never fails. */
export const analyze = (
  llm: LlmService,
  goal: string,
  results: ReadonlyArray<StepOutcome>,
  followUps: ReadonlyArray<string>
): Effect.Effect<{ readonly analysis: Analysis; readonly usage: Usage.Usage }> =>
  structuredCallWith(llm, {
    messages: analysisMessages(goal, results, followUps),
    schema: AnalysisSchema,
    functionName: FUNCTION_NAME,
    functionDescription: "Report whether the goal was achieved.",
    regexFallback,
    phase: "analysis"
  }).pipe(
    Effect.map((result) => {
      const v = result.value
      const answer = v.final_answer?.trim()
      const analysis: Analysis = {
        achieved: v.achieved,
        confidence: clamp(v.confidence),
        reasoning: v.reasoning,
        ...(answer ? { finalAnswer: answer } : {})
      }
      return { analysis, usage: result.usage }
    }),
    Effect.catchTag("StructuredOutputError", (error) =>
      Effect.as(
        Effect.logWarning(`DAG analysis unusable: ${error.message}`),
        { analysis: UNPARSEABLE, usage: error.usage ?? Usage.empty }
      ))
  )
