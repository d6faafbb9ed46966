/**
 * Typed answers (SPEC §26): a run given an output schema
 * (`RunInput.output`) answers with a value of it. The answer call asks for
 * the schema natively where the model can (`response_format: json_schema`,
 * strict when the schema allows it; a forced tool), else through §4's chain
 * (JSON mode, plain text with `extractJson` and repair) — one
 * `StructuredCall` — and a value that does not validate is asked again with
 * the validation message (`outputRetries`, `REACT_OUTPUT_RETRIES`, default 1)
 * before the run fails with `RunFailed.code` `output_invalid`. The answer
 * text is the JSON text; `Done.output` the value (encoded); while it streams,
 * `OutputPartial` events carry the value parsed so far.
 *
 * ```ts
 * const Weather = Schema.Struct({ city: Schema.String, celsius: Schema.Number })
 * const result = yield* agent.runCollect({ query: "Weather in Paris?", output: Weather })
 * result.output.celsius // number
 * ```
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Answer from "./internal/output/answer.js"
import * as Convert from "./internal/output/fromJsonSchema.js"
import { partialValue } from "./internal/output/partial.js"
import type { RunResult } from "./RunEvent.js"

/**
 * The run's answer did not match the output schema after its retries: the
 * validation message, and the last value the model gave (`null` when it gave
 * no JSON at all).
 *
 * @since 0.1.0
 * @category errors
 */
export class OutputInvalid extends Schema.TaggedError<OutputInvalid>()("OutputInvalid", {
  message: Schema.String,
  value: Schema.Unknown
}) {}

/**
 * A run with an output schema ended without a value for another reason: it
 * failed (an LLM error after its retries, a defect) or was cancelled.
 *
 * @since 0.1.0
 * @category errors
 */
export class OutputUnavailable extends Schema.TaggedError<OutputUnavailable>()("OutputUnavailable", {
  message: Schema.String,
  retryable: Schema.Boolean
}) {}

/**
 * The `RunFailed.code` of a run whose answer did not match its output schema.
 *
 * @since 0.1.0
 * @category constants
 */
export const INVALID_CODE = "output_invalid"

/**
 * The result of a run with an output schema: `output` is the decoded value.
 *
 * @since 0.1.0
 * @category models
 */
export type TypedRunResult<A> = RunResult & { readonly output: A }

/**
 * How a typed answer came out (what a durable run stores of its answer step).
 *
 * @since 0.1.0
 * @category models
 */
export const TypedAnswer = Answer.TypedAnswer
/**
 * @since 0.1.0
 * @category models
 */
export type TypedAnswer = Answer.TypedAnswer

/**
 * Writes the typed answer from an answer prompt (see the module
 * documentation): emits its answer events and `OutputPartial`s, never fails.
 *
 * @since 0.1.0
 * @category constructors
 */
export const answer: (input: Answer.AnswerInput) => Effect.Effect<TypedAnswer> = Answer.answer

/**
 * The loop's own final reply as the typed answer when it already is one (a JSON
 * object that decodes), emitted as the answer without a call; `undefined` when
 * it is not (synthesis policy `auto`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromReply = Answer.fromReply

/**
 * The deep-partial value of a JSON text still being written (what
 * `OutputPartial` carries; a number the text ends in is left out until it is
 * complete); `undefined` before its first `{` or `[`.
 *
 * @since 0.1.0
 * @category utils
 */
export const partial: (text: string) => unknown = partialValue

/**
 * Why a JSON Schema cannot serve as an output schema: the keyword, where it
 * is (a JSON pointer) and a message.
 *
 * @since 0.1.0
 * @category models
 */
export type Unsupported = Convert.Unsupported

/**
 * A JSON Schema as an output schema (an Effect Schema that validates the same
 * values), for what a client sends (`output_schema`, `response_format`, a CLI
 * `--schema` file); the root must describe an object. Honoured: `type`,
 * `properties`, `required`, `additionalProperties`, `items`, `minItems`,
 * `maxItems`, `enum`, `const`, `anyOf`, `oneOf`, `nullable`, `minLength`,
 * `maxLength`, `pattern`, `format` (date-time, date, time, email, uuid, uri),
 * `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`, `multipleOf`,
 * local `$ref`s; annotations are kept or ignored; anything else is refused
 * with the keyword named. The model is shown the client's schema as sent.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromJsonSchema = (jsonSchema: unknown): Either.Either<Schema.Schema<unknown, unknown>, Unsupported> =>
  Either.map(
    Convert.fromJsonSchema(jsonSchema),
    // the model sees the schema the client wrote (less its `$schema` dialect), not one regenerated from its conversion
    (schema) => {
      const { $schema: _, ...shown } = jsonSchema as Record<string, unknown>
      return schema.annotations({ jsonSchema: shown })
    }
  )

/**
 * A collected run's typed result: `output` decoded with `schema`, or why there
 * is none — `OutputInvalid` (`RunFailed.code` `output_invalid`: its message and
 * the last value shown) or `OutputUnavailable` (the run failed otherwise or was
 * cancelled).
 *
 * @since 0.1.0
 * @category utils
 */
export const typed = <A, I>(
  schema: Schema.Schema<A, I>,
  result: RunResult
): Effect.Effect<TypedRunResult<A>, OutputInvalid | OutputUnavailable> => {
  const error = result.error
  if (error?.code === INVALID_CODE) {
    return Effect.fail(new OutputInvalid({ message: error.message, value: error.value ?? null }))
  }
  if (error !== undefined) {
    return Effect.fail(new OutputUnavailable({ message: error.message, retryable: error.retryable }))
  }
  if (result.output === undefined) {
    return Effect.fail(
      new OutputUnavailable({ message: "The run ended without an answer (cancelled)", retryable: true })
    )
  }
  return Schema.decodeUnknown(schema)(result.output).pipe(
    Effect.map((output): TypedRunResult<A> => ({ ...result, output })),
    Effect.mapError((e) => new OutputInvalid({ message: e.message, value: result.output }))
  )
}
