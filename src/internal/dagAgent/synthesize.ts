/**
 * DAG mode, phase 5: the answer, streamed on the main model from the
 * goal, the step results (10,000 chars each) and the analysis, through
 * `AnswerSynthesis.streamWithFallback` (same streaming and fallback rule as
 * ReAct mode). The fallback text is the analysis' `final_answer`, else the step
 * results joined.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import { streamWithFallback, type SynthesisResult } from "../../AnswerSynthesis.js"
import type { LlmService } from "../../Llm.js"
import type { ChatMessage } from "../../Message.js"
import * as Message from "../../Message.js"
import * as Output from "../../Output.js"
import type { RunEvent } from "../../RunEvent.js"
import type { RunJournal } from "../../RunJournal.js"
import type { Usage } from "../../Usage.js"
import type { Analysis } from "./analyze.js"
import { formatResults } from "./analyze.js"
import type { StepOutcome } from "./step.js"

/** Each step's result is cut to this many characters in the synthesis prompt. */
export const RESULT_MAX_CHARS = 10_000

const SYSTEM = [
  "You write the final answer to the user's goal from the results of the steps an AI agent carried out.",
  "Answer directly, in Markdown, in the same language as the goal.",
  "Do not mention steps, plans, tools or results (no phrases like \"based on the results\" or \"step 2 found\"): just answer.",
  "When results from different sources disagree, say so and give the most authoritative one.",
  "If the goal could not be fully achieved, answer with what is known and say briefly what is missing."
].join("\n")

/** What the synthesis reads. */
export interface SynthesisInput {
  readonly goal: string
  readonly history: ReadonlyArray<ChatMessage>
  readonly results: ReadonlyArray<StepOutcome>
  readonly analysis: Analysis | undefined
  readonly followUps: ReadonlyArray<string>
}

/** The synthesis conversation. */
export const synthesisMessages = (input: SynthesisInput): Array<ChatMessage> => {
  const parts = [`Goal:\n${input.goal}`]
  for (const f of input.followUps) parts.push(`[User follow-up]: ${f}`)
  parts.push(
    "",
    `Step results:\n${input.results.length > 0 ? formatResults(input.results, RESULT_MAX_CHARS) : "(none)"}`
  )
  if (input.analysis !== undefined && input.analysis.reasoning.trim() !== "") {
    parts.push("", `Assessment of the results:\n${input.analysis.reasoning}`)
  }
  parts.push("", "Write the final answer to the goal.")
  const messages: Array<ChatMessage> = [Message.system(SYSTEM)]
  for (const m of input.history) {
    if (m.role === "user") messages.push(Message.user(Message.textOf(m.content)))
    else if (m.role === "assistant" && m.content) messages.push(Message.assistant(m.content))
  }
  messages.push(Message.user(parts.join("\n")))
  return messages
}

/** Answer when nothing was achieved at all. */
export const NOT_ACHIEVED = "(goal not achieved)"

/** The fallback answer: the analysis' `final_answer`, else the step results joined. */
export const fallbackAnswer = (results: ReadonlyArray<StepOutcome>, analysis: Analysis | undefined): string => {
  if (analysis?.finalAnswer !== undefined) return analysis.finalAnswer
  const done = results.filter((r) => r.status === "done" && (r.result ?? "").trim() !== "")
  if (done.length === 0) return NOT_ACHIEVED
  return done.map((r) => `**Step ${r.id}** — ${r.result}`).join("\n\n---\n\n")
}

/** A typed answer written. */
export interface Typed {
  readonly answer: string
  readonly output: unknown
  readonly usage: Usage
}

/**
 * The typed answer (`RunInput.output`) from the same prompt, as the run's
 * `dag/output` step: the value, or the run fails (`OutputInvalid`,
 * `OutputUnavailable`).
 */
export const typedSynthesis = (
  llm: LlmService,
  schema: Schema.Schema<any, any>,
  input: SynthesisInput,
  retries: number,
  journal: RunJournal
): Effect.Effect<Typed, Output.OutputInvalid | Output.OutputUnavailable> =>
  journal.activity({
    name: "dag/output",
    success: Output.TypedAnswer,
    restartAware: true,
    execute: ({ shown }) =>
      Effect.zipRight(
        shown === true ? journal.emit({ _tag: "AnswerReset" }) : Effect.void,
        Output.answer({ llm, schema, messages: synthesisMessages(input), retries, emit: journal.emit })
      )
  }).pipe(Effect.flatMap((result): Effect.Effect<Typed, Output.OutputInvalid | Output.OutputUnavailable> => {
    switch (result._tag) {
      case "Answered":
        return Effect.succeed({ answer: result.answer, output: result.output, usage: result.usage })
      case "Invalid":
        return Effect.fail(new Output.OutputInvalid({ message: result.message, value: result.value }))
      case "Failed":
        return Effect.fail(new Output.OutputUnavailable({ message: result.message, retryable: result.retryable }))
    }
  }))

/** Streams the answer (`AnswerStart`, deltas, `AnswerDone`); never fails. */
export const synthesize = (
  llm: LlmService,
  input: SynthesisInput,
  emit: (event: RunEvent) => Effect.Effect<void>
): Effect.Effect<SynthesisResult> =>
  streamWithFallback(llm, synthesisMessages(input), fallbackAnswer(input.results, input.analysis), emit)
