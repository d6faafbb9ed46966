/**
 * `structuredCall`: the one entry point for "the LLM must return data matching a
 * schema" (tool selection, planners, …).
 *
 * A typed `orElse` pipeline over three levels, each gated by the model's
 * abilities, each failing with its own tagged failure that carries the usage and
 * call count so far:
 *
 * 1. `native` (abilities.toolCall && toolChoice): the schema as the one function
 *    tool, `tool_choice` forced to it; its arguments are decoded. One call, not
 *    retried.
 * 2. `json` (abilities.jsonMode): `response_format: json_object` and the JSON
 *    Schema in the system prompt; a reply that does not parse/decode is retried
 *    once with a re-format request. At most two calls.
 * 3. `text` (always): no format constraint; `extractJson`, then the caller's
 *    `regexFallback`; retried once. At most two calls.
 *
 * Worst case 5 calls (1 + 2 + 2); a json-only model 4; a plain model 2. On total
 * failure: the `default` when one was given, else `StructuredOutputError`.
 *
 * For a run's typed answer (`RunInput.output`) the caller asks for more:
 * level 0 `schema` (`response_format: json_schema`, strict when the schema
 * allows it) before level 1, `retries` re-asks per level with the validation
 * message, `onInvalid: "fail"` (a value that parsed but does not validate after
 * the retries ends the chain), and `stream` (each attempt streamed, its JSON
 * text handed on as it grows).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { Plan, Progress, StreamHooks, Success } from "./internal/structuredCall/levels.js"
import { decodeWith, jsonLevel, nativeLevel, schemaLevel, start, textLevel } from "./internal/structuredCall/levels.js"
import * as JsonSchema from "./JsonSchema.js"
import type { LlmService } from "./Llm.js"
import { Llm } from "./Llm.js"
import type { ChatMessage } from "./Message.js"
import * as Telemetry from "./Telemetry.js"
import * as Usage from "./Usage.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface StructuredCallOptions<A, I> {
  readonly messages: ReadonlyArray<ChatMessage>
  /** Decodes the model's object; its JSON Schema (encoded side) is sent to the model. */
  readonly schema: Schema.Schema<A, I, never>
  /** The function name (native tool name; named in the JSON instructions). */
  readonly functionName: string
  readonly functionDescription?: string
  /**
   * Plain-text level only: called with the reply text when `extractJson` found no
   * object that decodes. Return a raw candidate (still decoded by `schema`) or
   * `undefined`.
   */
  readonly regexFallback?: (text: string) => unknown | undefined
  /** Returned (level `"default"`) when every level failed. `undefined` is a valid default: presence is what counts. */
  readonly default?: A
  /** The usage phase the calls count for, as their `chat` spans' `react_engine.phase` (tool selection: `selection`). */
  readonly phase?: Usage.Phase
  /**
   * Try level 0 `schema` first: `response_format: json_schema` (strict when the
   * JSON Schema allows strict mode), for a model with `abilities.jsonSchema`.
   * Default false.
   */
  readonly responseSchema?: boolean
  /**
   * Re-asks per level after a reply that does not parse or validate, each
   * quoting the problem. Default: none on levels 0 and 1, one on levels 2 and 3.
   */
  readonly retries?: number
  /**
   * A level whose retries ended on a value that parsed but did not validate:
   * `downgrade` (default) goes on down the chain, `fail` ends it there (the
   * model can do the level; asking elsewhere would not make the value valid).
   */
  readonly onInvalid?: "downgrade" | "fail"
  /** Streams every attempt: `onAttempt` before each, `onText` with each piece of its JSON text. */
  readonly stream?: StreamHooks
}

/**
 * @since 0.1.0
 * @category models
 */
export type StructuredCallStream = StreamHooks

/**
 * The level that produced the value.
 *
 * @since 0.1.0
 * @category models
 */
export type StructuredCallLevel = "schema" | "native" | "json" | "text" | "default"

/**
 * @since 0.1.0
 * @category models
 */
export interface StructuredCallResult<A> {
  readonly value: A
  /** The raw object before decoding (`undefined` for the default). */
  readonly raw: unknown
  readonly level: StructuredCallLevel
  /** LLM calls made, failed ones included. */
  readonly llmCalls: number
  /** Usage summed over every reply received. */
  readonly usage: Usage.Usage
}

/**
 * Every level failed and no default was given.
 *
 * @since 0.1.0
 * @category errors
 */
export class StructuredOutputError extends Schema.TaggedError<StructuredOutputError>()("StructuredOutputError", {
  message: Schema.String,
  /** The first 200 characters of the last reply (or tool arguments). */
  lastContent: Schema.String,
  llmCalls: Schema.Number,
  usage: Schema.optional(Usage.Usage),
  /** The last reply parsed to this value, which did not validate (absent when it did not parse, or the call failed). */
  lastValue: Schema.optional(Schema.Unknown),
  /** Set when the last attempt failed with an LLM error: whether that error is worth retrying. */
  retryable: Schema.optional(Schema.Boolean)
}) {}

// ---------------------------------------------------------------------------
// public API

const LAST_CONTENT_MAX = 200

/**
 * `structuredCall` with an explicit LLM service (for example the `fast` model
 * from the registry, as tool selection does).
 *
 * @since 0.1.0
 * @category constructors
 */
export const structuredCallWith = <A, I>(
  llm: LlmService,
  options: StructuredCallOptions<A, I>
): Effect.Effect<StructuredCallResult<A>, StructuredOutputError> =>
  // suspended: a schema without a JSON Schema representation is a defect, not a synchronous throw
  Effect.suspend(() => run(llm, options))

const run = <A, I>(
  llm: LlmService,
  options: StructuredCallOptions<A, I>
): Effect.Effect<StructuredCallResult<A>, StructuredOutputError> => {
  const plan: Plan = {
    llm,
    phase: options.phase,
    messages: options.messages,
    target: {
      functionName: options.functionName,
      functionDescription: options.functionDescription,
      jsonSchema: JsonSchema.make(options.schema)
    },
    decode: decodeWith(options.schema),
    // the text level only: levels 0 to 2 decode what the model returned as is
    regexFallback: options.regexFallback,
    attempts: options.retries === undefined ? undefined : 1 + Math.max(0, Math.floor(options.retries)),
    onInvalid: options.onInvalid ?? "downgrade",
    stream: options.stream,
    responseSchema: options.responseSchema === true
  }
  const done = (level: StructuredCallLevel) => (s: Success): StructuredCallResult<A> => ({
    value: s.value as A,
    raw: s.raw,
    level,
    llmCalls: s.progress.llmCalls,
    usage: s.progress.usage
  })
  const exhausted = (progress: Progress): Effect.Effect<StructuredCallResult<A>, StructuredOutputError> =>
    "default" in options
      ? Effect.succeed({
        value: options.default as A,
        raw: undefined,
        level: "default",
        llmCalls: progress.llmCalls,
        usage: progress.usage
      })
      : Effect.fail(
        new StructuredOutputError({
          message: `structuredCall(${options.functionName}) failed after ${progress.llmCalls} LLM call(s)` +
            (progress.lastProblem ? `: ${progress.lastProblem.slice(0, 500)}` : ""),
          lastContent: progress.lastContent.slice(0, LAST_CONTENT_MAX),
          llmCalls: progress.llmCalls,
          usage: progress.usage,
          ...(progress.lastValue !== undefined ? { lastValue: progress.lastValue } : {}),
          ...(progress.lastError !== undefined ? { retryable: progress.lastError.retryable } : {})
        })
      )

  return schemaLevel(plan, start).pipe(
    Effect.map(done("schema")),
    Effect.catchTag("SchemaFailed", (e) => Effect.map(nativeLevel(plan, e.progress), done("native"))),
    Effect.catchTag("NativeFailed", (e) => Effect.map(jsonLevel(plan, e.progress), done("json"))),
    Effect.catchTag("JsonFailed", (e) => Effect.map(textLevel(plan, e.progress), done("text"))),
    Effect.catchTag("TextFailed", (e) => exhausted(e.progress)),
    Effect.catchTag("ValueInvalid", (e) => exhausted(e.progress)),
    Effect.tap((result) =>
      Effect.annotateCurrentSpan({
        [Telemetry.attributes.structuredLevel]: result.level,
        [Telemetry.attributes.llmCalls]: result.llmCalls
      })
    ),
    Effect.withSpan(`structured_call ${options.functionName}`, {
      attributes: {
        [Telemetry.attributes.structuredFunction]: options.functionName,
        [Telemetry.attributes.requestModel]: llm.model,
        ...(options.phase !== undefined ? { [Telemetry.attributes.phase]: options.phase } : {})
      },
      captureStackTrace: false
    })
  )
}

/**
 * Asks the `Llm` for a value matching `options.schema`, downgrading native
 * function calling → JSON mode → plain text as the model's abilities and replies
 * require (see the module documentation).
 *
 * @example
 * ```ts
 * const Selection = Schema.Struct({ tools: Schema.Array(Schema.String) })
 * const result = yield* structuredCall({
 *   messages: [Message.user("Which tools answer: weather in Paris?")],
 *   schema: Selection,
 *   functionName: "select_tools",
 *   default: { tools: [] }
 * })
 * result.value.tools // readonly string[]
 * ```
 *
 * @since 0.1.0
 * @category constructors
 */
export const structuredCall = <A, I>(
  options: StructuredCallOptions<A, I>
): Effect.Effect<StructuredCallResult<A>, StructuredOutputError, Llm> =>
  Effect.flatMap(Llm, (llm) => structuredCallWith(llm, options))
