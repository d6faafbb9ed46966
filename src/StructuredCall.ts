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
 * @since 0.1.0
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { extractJson } from "./ExtractJson.js"
import {
  nativeRequest,
  retryMessages,
  type Target,
  withSchemaInstruction
} from "./internal/structuredCall/prompt.js"
import * as JsonSchema from "./JsonSchema.js"
import type { ChatRequest, ChatResponse, LlmService } from "./Llm.js"
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
}

/**
 * The level that produced the value.
 *
 * @since 0.1.0
 * @category models
 */
export type StructuredCallLevel = "native" | "json" | "text" | "default"

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
  usage: Schema.optional(Usage.Usage)
}) {}

// ---------------------------------------------------------------------------
// internal: progress and level failures

interface Progress {
  readonly usage: Usage.Usage
  readonly llmCalls: number
  readonly lastContent: string
  readonly lastProblem: string
}

const start: Progress = { usage: Usage.empty, llmCalls: 0, lastContent: "", lastProblem: "" }

class NativeFailed extends Data.TaggedError("NativeFailed")<{ readonly progress: Progress }> {}
class JsonFailed extends Data.TaggedError("JsonFailed")<{ readonly progress: Progress }> {}
class TextFailed extends Data.TaggedError("TextFailed")<{ readonly progress: Progress }> {}

interface Success {
  readonly value: unknown
  readonly raw: unknown
  readonly progress: Progress
}

/** What one attempt produced: either a decoded value, or the reason it did not. */
type Outcome =
  | { readonly _tag: "Decoded"; readonly value: unknown; readonly raw: unknown }
  | { readonly _tag: "Rejected"; readonly problem: string }

const rejected = (problem: string): Outcome => ({ _tag: "Rejected", problem })

const decodeWith = (schema: Schema.Schema<any, any, never>) => {
  const decode = Schema.decodeUnknownEither(schema, { errors: "first", onExcessProperty: "ignore" })
  return (raw: unknown): Outcome => {
    const result = decode(raw)
    return Either.isRight(result)
      ? { _tag: "Decoded", value: result.right, raw }
      : rejected(ParseResult.TreeFormatter.formatErrorSync(result.left))
  }
}

/**
 * One LLM call plus interpretation. LLM errors are outcomes like any other
 * failed attempt (they downgrade), never failures of the pipeline.
 */
const attempt = (
  plan: Plan,
  level: Exclude<StructuredCallLevel, "default">,
  request: ChatRequest,
  progress: Progress,
  interpret: (response: ChatResponse) => { readonly outcome: Outcome; readonly content: string }
): Effect.Effect<{ readonly outcome: Outcome; readonly reply: string | undefined; readonly progress: Progress }> =>
  Effect.map(Effect.either(Telemetry.chat(plan.llm, request, { phase: plan.phase, level })), (result) => {
    if (Either.isLeft(result)) {
      const problem = `LLM error (${result.left.reason}): ${result.left.message}`
      return {
        outcome: rejected(problem),
        reply: undefined,
        progress: { ...progress, llmCalls: progress.llmCalls + 1, lastProblem: problem }
      }
    }
    const response = result.right
    const { content, outcome } = interpret(response)
    return {
      outcome,
      reply: content,
      progress: {
        usage: Usage.add(progress.usage, response.usage),
        llmCalls: progress.llmCalls + 1,
        lastContent: content,
        lastProblem: outcome._tag === "Rejected" ? outcome.problem : ""
      }
    }
  })

const fromText = (
  text: string,
  decode: (raw: unknown) => Outcome,
  regexFallback: ((text: string) => unknown | undefined) | undefined
): Outcome => {
  const found = extractJson(text)
  const first = Option.isSome(found) ? decode(found.value) : rejected("no JSON object found in the reply")
  if (first._tag === "Decoded" || regexFallback === undefined) return first
  let candidate: unknown
  try {
    candidate = regexFallback(text)
  } catch {
    candidate = undefined
  }
  return candidate === undefined ? first : decode(candidate)
}

// ---------------------------------------------------------------------------
// levels

interface Plan {
  readonly llm: LlmService
  readonly phase: Usage.Phase | undefined
  readonly messages: ReadonlyArray<ChatMessage>
  readonly target: Target
  readonly decode: (raw: unknown) => Outcome
  readonly regexFallback: ((text: string) => unknown | undefined) | undefined
}

/** Level 1: native function calling, `tool_choice` forced; one call. */
const nativeLevel = (plan: Plan, progress: Progress): Effect.Effect<Success, NativeFailed> => {
  if (!(plan.llm.abilities.toolCall && plan.llm.abilities.toolChoice)) {
    return Effect.fail(new NativeFailed({ progress }))
  }
  return Effect.flatMap(
    attempt(plan, "native", nativeRequest(plan.messages, plan.target), progress, (response) => {
      const call = response.toolCalls.find((c) => c.name === plan.target.functionName) ?? response.toolCalls[0]
      if (call === undefined) return { content: response.content, outcome: rejected("the reply has no tool call") }
      // Invalid argument JSON gets a second chance through extractJson's repairs.
      const args = Either.isRight(call.parsed) ? Option.some(call.parsed.right) : extractJson(call.arguments)
      return {
        content: call.arguments,
        outcome: Option.isSome(args) ? plan.decode(args.value) : rejected(Either.isLeft(call.parsed) ? call.parsed.left : "")
      }
    }),
    ({ outcome, progress }) =>
      outcome._tag === "Decoded"
        ? Effect.succeed({ value: outcome.value, raw: outcome.raw, progress })
        : Effect.fail(new NativeFailed({ progress }))
  )
}

/**
 * Levels 2 and 3 share their shape: a first attempt, and on failure one retry
 * carrying the bad reply and a re-format request.
 */
const withRetry = <E>(
  plan: Plan,
  level: "json" | "text",
  progress: Progress,
  responseFormat: ChatRequest["responseFormat"],
  onFail: (progress: Progress) => E
): Effect.Effect<Success, E> =>
  Effect.gen(function*() {
    const messages = withSchemaInstruction(plan.messages, plan.target)
    const request = (msgs: ReadonlyArray<ChatMessage>): ChatRequest =>
      responseFormat === undefined ? { messages: msgs } : { messages: msgs, responseFormat }
    const interpret = (response: ChatResponse) => ({
      content: response.content,
      outcome: fromText(response.content, plan.decode, plan.regexFallback)
    })
    let current = progress
    let msgs = messages
    for (let i = 0; i < 2; i++) {
      const result = yield* attempt(plan, level, request(msgs), current, interpret)
      current = result.progress
      if (result.outcome._tag === "Decoded") {
        return { value: result.outcome.value, raw: result.outcome.raw, progress: current }
      }
      msgs = retryMessages(messages, result.reply, result.outcome.problem)
    }
    return yield* Effect.fail(onFail(current))
  })

/** Level 2: JSON mode (`response_format: json_object`); up to two calls. */
const jsonLevel = (plan: Plan, progress: Progress): Effect.Effect<Success, JsonFailed> =>
  plan.llm.abilities.jsonMode
    ? withRetry(plan, "json", progress, { type: "json_object" }, (p) => new JsonFailed({ progress: p }))
    : Effect.fail(new JsonFailed({ progress }))

/** Level 3: plain text, `extractJson` then `regexFallback`; up to two calls. */
const textLevel = (plan: Plan, progress: Progress): Effect.Effect<Success, TextFailed> =>
  withRetry(plan, "text", progress, undefined, (p) => new TextFailed({ progress: p }))

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
    // the text level only: levels 1 and 2 decode what the model returned as is
    regexFallback: options.regexFallback
  }
  const jsonPlan: Plan = { ...plan, regexFallback: undefined }
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
          usage: progress.usage
        })
      )

  return nativeLevel(plan, start).pipe(
    Effect.map(done("native")),
    Effect.catchTag("NativeFailed", (e) => Effect.map(jsonLevel(jsonPlan, e.progress), done("json"))),
    Effect.catchTag("JsonFailed", (e) => Effect.map(textLevel(plan, e.progress), done("text"))),
    Effect.catchTag("TextFailed", (e) => exhausted(e.progress)),
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
