/**
 * What the `Llm` implementations over a provider (`OpenAiLlm`, `EffectAiLlm`)
 * share: their common options, the time bounds and retry policy built from them,
 * and the service record they return. Each implementation adds its own options
 * (a connection, a bridge) and its own defaults.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { AttachmentsService, Modality } from "../../Attachments.js"
import type { Abilities, ChatDelta, ChatRequest, ChatResponse, LlmService } from "../../Llm.js"
import { LlmError } from "../../Llm.js"
import * as CallBudget from "./callBudget.js"
import { responseToDeltas } from "./deltas.js"
import { unwrapDeltas } from "./deltaStream.js"

/** The options every `Llm` implementation over a provider takes (defaults: the module's `defaults`). */
export interface LlmOptions {
  /** The provider's model name (also named in logs, spans and the UI). */
  readonly model: string
  /** What the model can do; merged over the module's default abilities. */
  readonly abilities?: Partial<Abilities> | undefined
  /** Context window in tokens. */
  readonly contextSize?: number | undefined
  /** Max output tokens (default 64000); used for the context budget. */
  readonly maxOutputTokens?: number | undefined
  /** Retries of retryable failures (default 3). */
  readonly maxRetries?: number | undefined
  /** First backoff delay (default 500 ms; doubled per retry, jittered, capped at 30 s). */
  readonly retryBaseDelay?: Duration.DurationInput | undefined
  /**
   * Per-attempt timeout (default 120 s): a whole non-streaming reply, a stream
   * until its first chunk, then between two stream chunks.
   */
  readonly timeout?: Duration.DurationInput | undefined
  /**
   * Cap on one call across all its attempts and backoff waits (default 300 s): a
   * `chat`, or a stream until its first chunk.
   */
  readonly totalTimeout?: Duration.DurationInput | undefined
  /** Default sampling temperature (a request's own temperature wins). */
  readonly temperature?: number | undefined
  /**
   * A prompt-cache key per conversation (a hash of its tools, system prompt and
   * first user message) that keeps its requests on one prompt cache (default
   * false): `OpenAiLlm` sends it as `prompt_cache_key` (for endpoints that accept
   * the field: OpenAI), `EffectAiLlm` hands it to `configure`.
   */
  readonly promptCacheKey?: boolean | undefined
  /**
   * What the model takes besides text (default all: `text`, `image`, `file`):
   * an attachment it does not take is never sent, a note naming it is.
   */
  readonly inputModalities?: ReadonlyArray<Modality> | undefined
  /** Where attachments' bytes are read when a request is built (`make`/`layer` take the one in context). */
  readonly attachments?: AttachmentsService | undefined
}

/** An implementation's defaults of the options. */
export interface Defaults {
  readonly contextSize: number
  readonly maxOutputTokens: number
  readonly maxRetries: number
  readonly retryBaseDelayMs: number
  readonly timeoutMs: number
  readonly totalTimeoutMs: number
}

/** The time bounds of a service and its retry policy (`CallBudget`). */
export interface Policy extends CallBudget.CallPolicy {
  /** The per-attempt timeout, in ms. */
  readonly timeoutMs: number
  /** The error of an attempt that got no complete reply within `timeoutMs`. */
  readonly attemptTimeout: () => LlmError
  /** The error of a stream that sent nothing for `timeoutMs`. */
  readonly idleTimeout: () => LlmError
}

/** The policy of a service built from `options`; `endpoint` is named in connection errors. */
export const policy = (options: LlmOptions, defaults: Defaults, endpoint: string | undefined): Policy => {
  const timeoutMs = options.timeout !== undefined ? Duration.toMillis(options.timeout) : defaults.timeoutMs
  const budget = CallBudget.make({
    maxRetries: options.maxRetries ?? defaults.maxRetries,
    retryBaseDelay: options.retryBaseDelay ?? Duration.millis(defaults.retryBaseDelayMs),
    totalTimeoutMs: options.totalTimeout !== undefined
      ? Duration.toMillis(options.totalTimeout)
      : defaults.totalTimeoutMs,
    endpoint
  })
  return {
    ...budget,
    timeoutMs,
    attemptTimeout: () =>
      new LlmError({ reason: "Timeout", message: `LLM request timed out: no complete reply within ${timeoutMs} ms` }),
    idleTimeout: () => new LlmError({ reason: "Timeout", message: `No data from the LLM stream for ${timeoutMs} ms` })
  }
}

/**
 * The service: `chat` is one attempt retried within the call's budget; without
 * streaming (`abilities.streaming: false`) `streamChat` makes one such call and
 * emits the whole reply as deltas.
 */
export const make = (parts: {
  readonly options: LlmOptions
  readonly defaults: Defaults
  readonly abilities: Abilities
  readonly policy: Policy
  readonly chatOnce: (request: ChatRequest) => Effect.Effect<ChatResponse, LlmError>
  readonly streamChat: (request: ChatRequest) => Stream.Stream<ChatDelta, LlmError>
}): LlmService => {
  const { abilities, chatOnce, defaults, options, policy } = parts
  const chat = (request: ChatRequest) => policy.retry(chatOnce(request))
  return {
    model: options.model,
    abilities,
    ...(options.inputModalities !== undefined ? { inputModalities: options.inputModalities } : {}),
    contextSize: options.contextSize ?? defaults.contextSize,
    maxOutputTokens: options.maxOutputTokens ?? defaults.maxOutputTokens,
    chat,
    oneCall: policy.oneCall,
    streamChat: abilities.streaming
      ? parts.streamChat
      : (request) => unwrapDeltas(Effect.map(chat(request), responseToDeltas))
  }
}
