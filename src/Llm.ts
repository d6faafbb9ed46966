/**
 * The LLM service: one non-streaming `chat` call (the tool loop) and one streaming
 * `streamChat` call (answer synthesis), plus what the model can do (`abilities`).
 *
 * Layers: `OpenAiLlm` (any OpenAI-compatible endpoint, via the official SDK) and
 * `ScriptedLlm` (a deterministic fake for tests, public).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import * as Think from "./internal/llm/think.js"
import type { ChatMessage } from "./Message.js"
import type { Usage } from "./Usage.js"
import { Usage as UsageSchema } from "./Usage.js"

/**
 * What a model can do. `toolCall`: native function calling; `toolChoice`: forcing a
 * specific function; `jsonMode`: `response_format: json_object`; `jsonSchema`:
 * `response_format: json_schema` (structured output; absent: not known, not used).
 *
 * @since 0.1.0
 * @category models
 */
export const Abilities = Schema.Struct({
  toolCall: Schema.Boolean,
  toolChoice: Schema.Boolean,
  jsonMode: Schema.Boolean,
  jsonSchema: Schema.optional(Schema.Boolean),
  vision: Schema.Boolean,
  streaming: Schema.Boolean,
  thinking: Schema.Boolean
})
/**
 * @since 0.1.0
 * @category models
 */
export type Abilities = typeof Abilities.Type

/**
 * @since 0.1.0
 * @category constructors
 */
export const defaultAbilities: Abilities = {
  toolCall: true,
  toolChoice: true,
  jsonMode: true,
  jsonSchema: true,
  vision: false,
  streaming: true,
  thinking: false
}

/**
 * A JSON Schema object (as sent to providers).
 *
 * @since 0.1.0
 * @category models
 */
export type JsonSchemaObject = { readonly [key: string]: unknown }

/**
 * `response_format` json_schema: JSON matching `schema` (`strict`: guaranteed, under the provider's strict rules).
 *
 * @since 0.1.0
 * @category models
 */
export interface JsonSchemaFormat {
  readonly type: "json_schema"
  readonly json_schema: { readonly name: string; readonly schema: JsonSchemaObject; readonly strict?: boolean }
}

/**
 * An OpenAI function-tool definition.
 *
 * @since 0.1.0
 * @category models
 */
export interface ToolDefinition {
  readonly type: "function"
  readonly function: {
    readonly name: string
    readonly description: string
    readonly parameters: JsonSchemaObject
    readonly strict?: boolean
  }
}

/**
 * @since 0.1.0
 * @category models
 */
export type ToolChoice = "auto" | "none" | "required" | {
  readonly type: "function"
  readonly function: { readonly name: string }
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ChatRequest {
  readonly messages: ReadonlyArray<ChatMessage>
  /** Omitted (or empty) means no tools are advertised. */
  readonly tools?: ReadonlyArray<ToolDefinition>
  readonly toolChoice?: ToolChoice
  /** `json_schema`: only for a model with `abilities.jsonSchema` (see `JsonSchemaFormat`). */
  readonly responseFormat?: { readonly type: "json_object" } | { readonly type: "text" } | JsonSchemaFormat
  readonly temperature?: number
  readonly maxTokens?: number
}

/**
 * A tool call from a reply. `arguments` is the raw text; `parsed` is the decoded
 * arguments object, or the reason it could not be decoded (invalid JSON, not an
 * object) — a recoverable error the loop answers as an observation.
 *
 * @since 0.1.0
 * @category models
 */
export interface ResponseToolCall {
  readonly id: string
  readonly name: string
  readonly arguments: string
  readonly parsed: Either.Either<Record<string, unknown>, string>
}

/**
 * A tool call of a reply, as a schema (how a durable run stores replies).
 *
 * @since 0.1.0
 * @category models
 */
export const ResponseToolCallSchema = Schema.Struct({
  id: Schema.String,
  name: Schema.String,
  arguments: Schema.String,
  parsed: Schema.Either({ left: Schema.String, right: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })
})

/**
 * A reply, as a schema (how a durable run stores replies).
 *
 * @since 0.1.0
 * @category models
 */
export const ChatResponseSchema = Schema.Struct({
  content: Schema.String,
  reasoning: Schema.optional(Schema.String),
  toolCalls: Schema.Array(ResponseToolCallSchema),
  finishReason: Schema.NullOr(Schema.String),
  usage: UsageSchema
})

/**
 * @since 0.1.0
 * @category models
 */
export interface ChatResponse {
  /** The reply text ("" when the model only called tools). `<think>` blocks are moved to `reasoning`. */
  readonly content: string
  /** Provider reasoning (`reasoning_content`, or `<think>…</think>` blocks). */
  readonly reasoning?: string
  readonly toolCalls: ReadonlyArray<ResponseToolCall>
  readonly finishReason: string | null
  readonly usage: Usage
}

/**
 * One piece of a streamed reply.
 *
 * @since 0.1.0
 * @category models
 */
export type ChatDelta =
  | { readonly _tag: "Content"; readonly text: string }
  | { readonly _tag: "Reasoning"; readonly text: string }
  | {
    readonly _tag: "ToolCall"
    readonly index: number
    readonly id?: string
    readonly name?: string
    readonly arguments?: string
  }
  | { readonly _tag: "Usage"; readonly usage: Usage }
  | { readonly _tag: "Finish"; readonly reason: string | null }

/**
 * @since 0.1.0
 * @category errors
 */
export const LlmErrorReason = Schema.Literal(
  "RateLimited",
  "Server",
  "Timeout",
  "Connection",
  "ContextOverflow",
  "Auth",
  "BadRequest",
  "Decode",
  "Unknown",
  /** The run's budget cannot pay for the call (`Budget`): it was not made. */
  "Budget"
)
/**
 * @since 0.1.0
 * @category errors
 */
export type LlmErrorReason = typeof LlmErrorReason.Type

/**
 * @since 0.1.0
 * @category errors
 */
export class LlmError extends Schema.TaggedError<LlmError>()("LlmError", {
  reason: LlmErrorReason,
  message: Schema.String,
  status: Schema.optional(Schema.Number),
  /**
   * How long the provider asked to wait before the next attempt (a 429's
   * `Retry-After` / `retry-after-ms`, capped at 60 s). A field rather than a side
   * table keyed by the error object: the retry schedule may be handed a copy of the
   * error (inside a span it is), and must still see the delay.
   */
  retryAfterMs: Schema.optional(Schema.Number)
}) {
  /** Rate limits, server errors, timeouts and connection errors are worth retrying. */
  get retryable(): boolean {
    return this.reason === "RateLimited" || this.reason === "Server" || this.reason === "Timeout" ||
      this.reason === "Connection"
  }
}

/** The retries of a call, as the run sees them: `RetryNotice`, `notifyRetry`, `withRetryObserver`. */
export { currentRetryObserver, notifyRetry, type RetryNotice, withRetryObserver } from "./internal/llm/retry.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface LlmService {
  /** The provider's model name. */
  readonly model: string
  readonly abilities: Abilities
  /** Context window in tokens, when known. */
  readonly contextSize?: number
  /** Max output tokens, when known. */
  readonly maxOutputTokens?: number
  /**
   * What the model takes besides text (`image`, `file` for PDFs); absent: all.
   * The LLM layers send a note instead of an attachment the model does not take.
   */
  readonly inputModalities?: ReadonlyArray<"text" | "image" | "file">
  readonly chat: (request: ChatRequest) => Effect.Effect<ChatResponse, LlmError>
  readonly streamChat: (request: ChatRequest) => Stream.Stream<ChatDelta, LlmError>
  /**
   * Runs `body` as one logical model call: every request it makes through this
   * service — the retries, and a streamed call made again without streaming —
   * counts against one retry budget and one deadline (`OpenAiLlm`: `maxRetries`
   * and `totalTimeout`). `again(error)` asks for one more request after `error`
   * (e.g. the non-streamed fallback of a broken stream): it waits the backoff,
   * announced with `notifyRetry`, or fails — with `error` when the retries are
   * spent, with a `Timeout` past the deadline. A service without a retry
   * budget (a scripted or local model) uses `independentCalls`.
   */
  readonly oneCall: <A, E, R>(
    body: (again: (error: LlmError) => Effect.Effect<void, LlmError>) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E | LlmError, R>
}

/**
 * Runs `body` as one logical call of `llm` (`LlmService.oneCall`): its requests
 * share one retry budget and one deadline.
 *
 * @since 0.1.0
 * @category utils
 */
export const oneCall = <A, E, R>(
  llm: LlmService,
  body: (again: (error: LlmError) => Effect.Effect<void, LlmError>) => Effect.Effect<A, E, R>
): Effect.Effect<A, E | LlmError, R> => llm.oneCall(body)

/**
 * The `oneCall` of a service without a retry budget of its own (a scripted or
 * local model): `body` runs as it is, each of its requests stands alone, and
 * `again` always allows one more.
 *
 * @since 0.1.0
 * @category utils
 */
export const independentCalls: LlmService["oneCall"] = (body) => body(() => Effect.void)

/**
 * @since 0.1.0
 * @category Context
 */
export class Llm extends Context.Tag("effect-react-engine/Llm")<Llm, LlmService>() {}

export {
  /**
   * Decodes a tool call's raw argument text. Empty text means no arguments (`{}`).
   *
   * @since 0.1.0
   * @category utils
   */
  parseToolArguments
} from "./internal/llm/toolArguments.js"

/**
 * Moves `<think>…</think>` blocks out of a reply's text (models such as Qwen/QwQ and
 * DeepSeek-R1 distills inline their reasoning that way): the rest trimmed, the
 * blocks' text trimmed and joined by a blank line. The same scanner splits a
 * streamed reply's deltas.
 *
 * @since 0.1.0
 * @category utils
 */
export const splitThinking: (content: string) => { readonly content: string; readonly reasoning: string } =
  Think.splitThinking

export {
  /**
   * Runs `f` on each chunk of `stream`, in order, by pulling the chunks one at
   * a time (`Stream.toPull` in `Effect.scoped`) instead of running the stream
   * as a whole: the result of `Stream.runForEachChunk` — the same chunks, the
   * same failure, the stream's resources released at the end — at a fraction
   * of its fixed cost on Effect 3 (≈ 45 µs instead of ≈ 150 µs for a reply of
   * one chunk), which a loop pays on every model call. A reply known whole
   * (`unwrapDeltas` of an array) is one chunk: one pull, one call of `f`. The
   * loop consumes its streamed model calls with it.
   *
   * @since 0.1.0
   * @category utils
   */
  forEachChunk,
  /**
   * A streamed reply decided when the stream runs (`Stream.unwrap`), for a reply
   * whose deltas may all be known at once: `effect` gives either the deltas (a
   * reply that arrived whole: an endpoint without streaming, a scripted reply
   * without latency) or the stream of them. A plain `Stream`: the engine reads
   * it like any other (`forEachChunk`); a reply known whole is one chunk.
   *
   * @since 0.1.0
   * @category constructors
   */
  unwrapDeltas,
  /**
   * `unwrapDeltas` for an effect that needs a scope (`Stream.unwrapScoped`): what
   * it acquires (an open HTTP response) is released when the stream ends.
   *
   * @since 0.1.0
   * @category constructors
   */
  unwrapDeltasScoped
} from "./internal/llm/deltaStream.js"
