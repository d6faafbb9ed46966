/**
 * A run's typed answer (`RunInput.output`): one structured call on the answer
 * prompt (ReAct's synthesis prompt, DAG mode's), asking for the schema the best
 * way the model can (§4's chain, with level 0 `response_format: json_schema`
 * first), a value that does not validate asked again with the validation
 * message (`retries`), then stopped there. The call streams: the JSON text is
 * the answer (`AnswerStart`, `AnswerDelta`s, an `AnswerReset` before each new
 * attempt after text was shown, `AnswerDone`), and the value parsed so far goes
 * out as `OutputPartial` at most every `PARTIAL_INTERVAL_MS`.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { emitAnswer } from "../../AnswerSynthesis.js"
import { extractJson } from "../../ExtractJson.js"
import type { LlmService } from "../../Llm.js"
import * as Message from "../../Message.js"
import type { ChatMessage } from "../../Message.js"
import type { RunEvent } from "../../RunEvent.js"
import { structuredCallWith } from "../../StructuredCall.js"
import * as Usage from "../../Usage.js"
import { partialValue } from "./partial.js"

/** At most one `OutputPartial` per this many milliseconds. */
export const PARTIAL_INTERVAL_MS = 50

/** The structured call's function name (native level: the forced tool; schema level: the `json_schema` name). */
export const FUNCTION_NAME = "answer"

const FUNCTION_DESCRIPTION = "The final answer to the user's question, as structured data"

/** What the answer prompt gets in front: the answer is the JSON value, nothing else. */
export const TYPED_INSTRUCTION =
  "The answer is structured data: give it as the one JSON value the requested schema describes (no Markdown, no prose around it)."

/** How a typed answer came out, as a durable run stores it. */
export const TypedAnswer = Schema.Union(
  Schema.TaggedStruct("Answered", {
    answer: Schema.String,
    output: Schema.Unknown,
    usage: Usage.Usage,
    level: Schema.String
  }),
  Schema.TaggedStruct("Invalid", { message: Schema.String, value: Schema.Unknown, usage: Usage.Usage }),
  Schema.TaggedStruct("Failed", { message: Schema.String, retryable: Schema.Boolean, usage: Usage.Usage })
)
export type TypedAnswer = typeof TypedAnswer.Type

export interface AnswerInput {
  readonly llm: LlmService
  readonly schema: Schema.Schema<any, any, never>
  /** The answer prompt (system message first). */
  readonly messages: ReadonlyArray<ChatMessage>
  /** Re-asks after a value that does not validate. */
  readonly retries: number
  readonly emit: (event: RunEvent) => Effect.Effect<void>
}

/** The answer prompt with the typed instruction added to its system message. */
const typedMessages = (messages: ReadonlyArray<ChatMessage>): ReadonlyArray<ChatMessage> => {
  const first = messages[0]
  if (first === undefined || first.role !== "system") return [Message.system(TYPED_INSTRUCTION), ...messages]
  return [{ ...first, content: `${first.content}\n\n${TYPED_INSTRUCTION}` }, ...messages.slice(1)]
}

const isJson = (text: string): boolean => {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

/** The encoded value (what `Done.output` carries) and the answer text for it. */
const settle = (
  schema: Schema.Schema<any, any, never>,
  value: unknown,
  shown: string
): { readonly output: unknown; readonly text: string } => {
  const output = Schema.encodeSync(schema)(value)
  // the text the model wrote when it is JSON as it stands, else the value's own JSON
  return { output, text: shown.trim() !== "" && isJson(shown) ? shown : JSON.stringify(output, null, 2) }
}

/** Emits the typed answer; never fails (an invalid value or a failed call is its result). */
export const answer = (input: AnswerInput): Effect.Effect<TypedAnswer> =>
  Effect.suspend(() => {
    const { emit } = input
    let shown = false
    let text = ""
    let lastPartial: number | undefined
    let lastJson: string | undefined
    const partial = (now: number): Effect.Effect<void> => {
      if (lastPartial !== undefined && now - lastPartial < PARTIAL_INTERVAL_MS) return Effect.void
      const value = partialValue(text)
      if (value === undefined) return Effect.void
      const json = JSON.stringify(value)
      if (json === lastJson) return Effect.void
      lastPartial = now
      lastJson = json
      return emit({ _tag: "OutputPartial", value })
    }
    const stream = {
      // a new attempt: what the last one showed is void
      onAttempt: () =>
        Effect.suspend(() => {
          const reset = shown ? emit({ _tag: "AnswerReset" }) : Effect.void
          shown = false
          text = ""
          lastJson = undefined
          lastPartial = undefined
          return reset
        }),
      onText: (delta: string) =>
        Effect.suspend(() => {
          const start = shown ? Effect.void : emit({ _tag: "AnswerStart" })
          shown = true
          text += delta
          return Effect.zipRight(
            Effect.zipRight(start, emit({ _tag: "AnswerDelta", content: delta })),
            Effect.flatMap(Clock.currentTimeMillis, partial)
          )
        })
    }
    const call = structuredCallWith(input.llm, {
      messages: typedMessages(input.messages),
      schema: input.schema,
      functionName: FUNCTION_NAME,
      functionDescription: FUNCTION_DESCRIPTION,
      phase: "synthesis",
      responseSchema: true,
      retries: input.retries,
      onInvalid: "fail",
      stream
    })
    return Effect.matchEffect(call, {
      onSuccess: (result): Effect.Effect<TypedAnswer> => {
        const { output, text: answerText } = settle(input.schema, result.value, text)
        const written = shown && answerText === text
          ? emit({ _tag: "AnswerDone" })
          // nothing shown, or not the JSON as it stands (prose or a fence around it): the JSON itself is the answer
          : Effect.zipRight(shown ? emit({ _tag: "AnswerReset" }) : Effect.void, emitAnswer(answerText, emit))
        return Effect.as(written, {
          _tag: "Answered",
          answer: answerText,
          output,
          usage: result.usage,
          level: result.level
        })
      },
      onFailure: (error): Effect.Effect<TypedAnswer> => {
        const done = shown ? emit({ _tag: "AnswerDone" }) : Effect.void
        const usage = error.usage ?? Usage.empty
        if (error.retryable === undefined) {
          // the last reply was no valid value: the one it parsed to, else whatever JSON the shown text holds
          const value = error.lastValue !== undefined
            ? error.lastValue
            : Option.getOrUndefined(extractJson(error.lastContent))
          return Effect.as(done, {
            _tag: "Invalid",
            message: invalidMessage(error.message),
            value: value ?? null,
            usage
          })
        }
        return Effect.as(done, { _tag: "Failed", message: error.message, retryable: error.retryable, usage })
      }
    })
  })

/** The validation message without the structured call's own prefix. */
const invalidMessage = (message: string): string => {
  const cut = /^structuredCall\([^)]*\) failed after (\d+) LLM call\(s\): /.exec(message)
  return cut === null
    ? message
    : `The answer did not match the output schema after ${cut[1]} attempt(s): ${message.slice(cut[0].length)}`
}

/**
 * The loop's own final reply as the typed answer, when it already is one (a
 * JSON object that decodes): emitted as the answer, no call made. `undefined`
 * when it is not.
 */
export const fromReply = (
  schema: Schema.Schema<any, any, never>,
  reply: string,
  emit: (event: RunEvent) => Effect.Effect<void>
): Effect.Effect<TypedAnswer> | undefined => {
  const found = extractJson(reply)
  if (Option.isNone(found)) return undefined
  const decoded = Schema.decodeUnknownEither(schema, { onExcessProperty: "ignore" })(found.value)
  if (Either.isLeft(decoded)) return undefined
  const { output, text } = settle(schema, decoded.right, reply)
  return Effect.as(emitAnswer(text, emit), {
    _tag: "Answered",
    answer: text,
    output,
    usage: Usage.empty,
    level: "loop"
  })
}
