/**
 * The levels of `StructuredCall`'s downgrade chain and what they share: one
 * attempt (a call, streamed or not, and its interpretation), decoding, the
 * retry with a re-format request. Each level fails with its own tagged failure
 * carrying the progress so far; `StructuredCall.ts` chains them.
 *
 * @internal
 */
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Budget from "../../Budget.js"
import { extractJson } from "../../ExtractJson.js"
import type { ChatDelta, ChatRequest, ChatResponse, LlmError, LlmService, ResponseToolCall } from "../../Llm.js"
import { parseToolArguments } from "../../Llm.js"
import type { ChatMessage } from "../../Message.js"
import * as Telemetry from "../../Telemetry.js"
import * as Usage from "../../Usage.js"
import { nativeRequest, retryMessages, schemaRequest, type Target, withSchemaInstruction } from "./prompt.js"

/** A level of the chain that calls the model. */
export type Level = "schema" | "native" | "json" | "text"

/** What the attempts so far spent and where they left off. */
export interface Progress {
  readonly usage: Usage.Usage
  readonly llmCalls: number
  readonly lastContent: string
  readonly lastProblem: string
  /** The last failure was a JSON value that did not validate: that value. */
  readonly lastValue?: unknown
  /** The last failure was an LLM error: that error. */
  readonly lastError?: LlmError
}

export const start: Progress = { usage: Usage.empty, llmCalls: 0, lastContent: "", lastProblem: "" }

export class SchemaFailed extends Data.TaggedError("SchemaFailed")<{ readonly progress: Progress }> {}
export class NativeFailed extends Data.TaggedError("NativeFailed")<{ readonly progress: Progress }> {}
export class JsonFailed extends Data.TaggedError("JsonFailed")<{ readonly progress: Progress }> {}
export class TextFailed extends Data.TaggedError("TextFailed")<{ readonly progress: Progress }> {}
/** A level's retries ended on a value that did not validate, and the caller stops there (`onInvalid: "fail"`). */
export class ValueInvalid extends Data.TaggedError("ValueInvalid")<{ readonly progress: Progress }> {}

export interface Success {
  readonly value: unknown
  readonly raw: unknown
  readonly progress: Progress
}

/** What one attempt produced: either a decoded value, or the reason it did not (and the value, when one parsed). */
export type Outcome =
  | { readonly _tag: "Decoded"; readonly value: unknown; readonly raw: unknown }
  | { readonly _tag: "Rejected"; readonly problem: string; readonly value?: unknown }

const rejected = (problem: string): Outcome => ({ _tag: "Rejected", problem })

export const decodeWith = (schema: Schema.Schema<any, any, never>) => {
  const decode = Schema.decodeUnknownEither(schema, { errors: "first", onExcessProperty: "ignore" })
  return (raw: unknown): Outcome => {
    const result = decode(raw)
    return Either.isRight(result)
      ? { _tag: "Decoded", value: result.right, raw }
      : { _tag: "Rejected", problem: problemOf(result.left), value: raw }
  }
}

/** A decode failure as short lines, `path: message` (the re-format request quotes at most 300 characters of it). */
const problemOf = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => `${issue.path.length > 0 ? issue.path.map(String).join(".") : "the value"}: ${issue.message}`)
    .join("\n")

/** Streaming attempts: told when an attempt starts and given the JSON text as it grows (the answer's partial objects). */
export interface StreamHooks {
  readonly onAttempt: (level: Level) => Effect.Effect<void>
  readonly onText: (delta: string) => Effect.Effect<void>
}

export interface Plan {
  readonly llm: LlmService
  readonly phase: Usage.Phase | undefined
  readonly messages: ReadonlyArray<ChatMessage>
  readonly target: Target
  readonly decode: (raw: unknown) => Outcome
  readonly regexFallback: ((text: string) => unknown | undefined) | undefined
  /** Calls per level (the first and its retries); `undefined`: native 1, json and text 2. */
  readonly attempts: number | undefined
  readonly onInvalid: "downgrade" | "fail"
  readonly stream: StreamHooks | undefined
  /** Level `schema` (`response_format: json_schema`) is tried first. */
  readonly responseSchema: boolean
}

/** One streamed call folded into a reply, its text (the JSON: content, or the forced call's arguments) handed on as it comes. */
const streamed = (
  plan: Plan,
  level: Level,
  request: ChatRequest,
  hooks: StreamHooks
): Effect.Effect<ChatResponse, LlmError> =>
  Effect.suspend(() => {
    let content = ""
    const calls: Array<{ id: string; name: string; arguments: string }> = []
    let usage: Usage.Usage | undefined
    let finishReason: string | null = null
    const onDelta = (delta: ChatDelta): Effect.Effect<void> => {
      switch (delta._tag) {
        case "Content":
          content += delta.text
          return level === "native" || delta.text === "" ? Effect.void : hooks.onText(delta.text)
        case "ToolCall": {
          const call = (calls[delta.index] ??= { id: "", name: "", arguments: "" })
          if (delta.id) call.id = delta.id
          if (delta.name) call.name += delta.name
          if (!delta.arguments) return Effect.void
          call.arguments += delta.arguments
          return level === "native" && delta.index === 0 ? hooks.onText(delta.arguments) : Effect.void
        }
        case "Usage":
          usage = usage ? Usage.add(usage, delta.usage) : delta.usage
          return Effect.void
        case "Finish":
          finishReason = delta.reason
          return Effect.void
        default:
          return Effect.void
      }
    }
    const response = (): ChatResponse => {
      const toolCalls: Array<ResponseToolCall> = calls.filter((c) => c !== undefined).map((c) => ({
        ...c,
        parsed: parseToolArguments(c.arguments)
      }))
      return { content, toolCalls, finishReason, usage: usage ?? Usage.make(0, 0) }
    }
    const run = Effect.map(Stream.runForEach(Budget.streamChat(plan.llm, request), onDelta), response)
    return Telemetry.chatSpan(plan.llm.model, request, { phase: plan.phase, level, stream: true }, run, (r) => r)
  })

/**
 * One LLM call plus interpretation. LLM errors are outcomes like any other
 * failed attempt (they downgrade), never failures of the pipeline.
 */
const attempt = (
  plan: Plan,
  level: Level,
  request: ChatRequest,
  progress: Progress,
  interpret: (response: ChatResponse) => { readonly outcome: Outcome; readonly content: string }
): Effect.Effect<{ readonly outcome: Outcome; readonly reply: string | undefined; readonly progress: Progress }> => {
  const call = plan.stream === undefined
    ? Telemetry.chat(plan.llm, request, { phase: plan.phase, level })
    : Effect.zipRight(plan.stream.onAttempt(level), streamed(plan, level, request, plan.stream))
  return Effect.map(Effect.either(call), (result) => {
    if (Either.isLeft(result)) {
      const problem = `LLM error (${result.left.reason}): ${result.left.message}`
      return {
        outcome: rejected(problem),
        reply: undefined,
        progress: {
          ...progress,
          llmCalls: progress.llmCalls + 1,
          lastProblem: problem,
          lastValue: undefined,
          lastError: result.left
        }
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
        lastProblem: outcome._tag === "Rejected" ? outcome.problem : "",
        ...(outcome._tag === "Rejected" && outcome.value !== undefined ? { lastValue: outcome.value } : {})
      }
    }
  })
}

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

const interpretText = (plan: Plan) => (response: ChatResponse) => ({
  content: response.content,
  outcome: fromText(response.content, plan.decode, plan.regexFallback)
})

const interpretCall = (plan: Plan) => (response: ChatResponse) => {
  const call = response.toolCalls.find((c) => c.name === plan.target.functionName) ?? response.toolCalls[0]
  if (call === undefined) return { content: response.content, outcome: rejected("the reply has no tool call") }
  // Invalid argument JSON gets a second chance through extractJson's repairs.
  const args = Either.isRight(call.parsed) ? Option.some(call.parsed.right) : extractJson(call.arguments)
  return {
    content: call.arguments,
    outcome: Option.isSome(args)
      ? plan.decode(args.value)
      : rejected(Either.isLeft(call.parsed) ? call.parsed.left : "")
  }
}

/**
 * A level's attempts: the first, and on failure retries carrying the bad reply
 * and a re-format request (after an LLM error the request is repeated). Ends
 * with the level's failure, or `ValueInvalid` when the last reply parsed but did
 * not validate and the plan stops there.
 */
const attempts = <E>(
  plan: Plan,
  level: Level,
  progress: Progress,
  options: {
    readonly messages: ReadonlyArray<ChatMessage>
    readonly request: (messages: ReadonlyArray<ChatMessage>) => ChatRequest
    readonly interpret: (response: ChatResponse) => { readonly outcome: Outcome; readonly content: string }
    readonly calls: number
    readonly onFail: (progress: Progress) => E
  }
): Effect.Effect<Success, E | ValueInvalid> =>
  Effect.gen(function*() {
    let current = progress
    let msgs = options.messages
    for (let i = 0; i < options.calls; i++) {
      const result = yield* attempt(plan, level, options.request(msgs), current, options.interpret)
      current = result.progress
      if (result.outcome._tag === "Decoded") {
        return { value: result.outcome.value, raw: result.outcome.raw, progress: current }
      }
      msgs = retryMessages(options.messages, result.reply, result.outcome.problem)
    }
    if (plan.onInvalid === "fail" && current.lastValue !== undefined) {
      return yield* Effect.fail(new ValueInvalid({ progress: current }))
    }
    return yield* Effect.fail(options.onFail(current))
  })

/** Level 0: `response_format: json_schema` (`abilities.jsonSchema`, asked for by the caller). */
export const schemaLevel = (plan: Plan, progress: Progress): Effect.Effect<Success, SchemaFailed | ValueInvalid> =>
  plan.responseSchema && plan.llm.abilities.jsonSchema === true
    ? attempts(plan, "schema", progress, {
      messages: plan.messages,
      request: (messages) => schemaRequest(messages, plan.target),
      interpret: interpretText({ ...plan, regexFallback: undefined }),
      calls: plan.attempts ?? 1,
      onFail: (p) => new SchemaFailed({ progress: p })
    })
    : Effect.fail(new SchemaFailed({ progress }))

/** Level 1: native function calling, `tool_choice` forced; one call unless the plan gives more. */
export const nativeLevel = (plan: Plan, progress: Progress): Effect.Effect<Success, NativeFailed | ValueInvalid> =>
  plan.llm.abilities.toolCall && plan.llm.abilities.toolChoice
    ? attempts(plan, "native", progress, {
      messages: plan.messages,
      request: (messages) => nativeRequest(messages, plan.target),
      interpret: interpretCall(plan),
      calls: plan.attempts ?? 1,
      onFail: (p) => new NativeFailed({ progress: p })
    })
    : Effect.fail(new NativeFailed({ progress }))

/** Levels 2 and 3 share their shape: the schema instruction added, two calls unless the plan gives another count. */
const promptLevel = <E>(plan: Plan, level: "json" | "text", progress: Progress, onFail: (p: Progress) => E) =>
  attempts(plan, level, progress, {
    messages: withSchemaInstruction(plan.messages, plan.target),
    request: (
      messages
    ): ChatRequest => (level === "json" ? { messages, responseFormat: { type: "json_object" } } : { messages }),
    interpret: interpretText(plan),
    calls: plan.attempts ?? 2,
    onFail
  })

/** Level 2: JSON mode (`response_format: json_object`). */
export const jsonLevel = (plan: Plan, progress: Progress): Effect.Effect<Success, JsonFailed | ValueInvalid> =>
  plan.llm.abilities.jsonMode
    ? promptLevel({ ...plan, regexFallback: undefined }, "json", progress, (p) => new JsonFailed({ progress: p }))
    : Effect.fail(new JsonFailed({ progress }))

/** Level 3: plain text, `extractJson` then `regexFallback`. */
export const textLevel = (plan: Plan, progress: Progress): Effect.Effect<Success, TextFailed | ValueInvalid> =>
  promptLevel(plan, "text", progress, (p) => new TextFailed({ progress: p }))
