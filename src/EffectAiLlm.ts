/**
 * The LLM service over any `@effect/ai` `LanguageModel` (Anthropic, OpenAI
 * Responses, … — `@effect/ai` 0.37 and its providers are optional peer
 * dependencies): an Effect application hands the agent the model layer it
 * already has.
 *
 * - Our tool definitions are advertised with their own JSON Schemas; the model's
 *   tool calls (parallel ones included) come back to the agent, never run here.
 * - `chat` is `generateText`, `streamChat` is `streamText` (text, reasoning and
 *   tool-argument deltas, finish reason, usage).
 * - Retries, time bounds and `oneCall` are `OpenAiLlm`'s: rate limits (waiting at
 *   least the `retry-after` a 429 asks for), 5xx, timeouts and dropped
 *   connections are retried; a stream is retried until its first part arrives.
 * - Errors are `LlmError`s by reason (`AiError` → rate limit, context overflow,
 *   auth, bad request, server, timeout, connection, decode); their messages never
 *   include the request (its headers hold the key).
 * - Prompt caching: with `cacheBreakpoints: "anthropic"` the request gets
 *   `cache_control` on its system prompt (which caches tools + system) and on its
 *   newest message; usage reports cache reads and writes.
 * - Per-request settings (temperature, max tokens, a prompt-cache key) reach the
 *   provider through `configure`, since `LanguageModel` has no generic knob for
 *   them (e.g. `AnthropicLanguageModel.withConfigOverride`).
 *
 * ```ts
 * const Claude = AnthropicLanguageModel.layer({ model: "claude-sonnet-4-5" })
 * const llm = EffectAiLlm.layer({ model: "claude-sonnet-4-5", cacheBreakpoints: "anthropic" })
 *   .pipe(Layer.provide(Claude), Layer.provide(AnthropicClient.layer({ apiKey })))
 * ```
 *
 * @since 0.1.0
 */
import * as LanguageModel from "@effect/ai/LanguageModel"
import type * as Response from "@effect/ai/Response"
import type * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Attachments from "./Attachments.js"
import { hasTools, promptOf, toToolChoice, toToolkit } from "./internal/effectAiLlm/prompt.js"
import type { CacheBreakpoints } from "./internal/effectAiLlm/prompt.js"
import { partToDeltas, streamState, toChatResponse, toLlmError } from "./internal/effectAiLlm/response.js"
import * as Attached from "./internal/llm/attachments.js"
import { promptCacheKey as internalKey } from "./internal/llm/promptCacheKey.js"
import * as Service from "./internal/llm/service.js"
import type { LlmOptions } from "./internal/llm/service.js"
import type { Abilities, ChatDelta, ChatRequest, ChatResponse, LlmService } from "./Llm.js"
import { defaultAbilities, Llm, LlmError, unwrapDeltasScoped } from "./Llm.js"

/**
 * What a request asks of the provider beyond the prompt and the tools.
 *
 * @since 0.1.0
 * @category models
 */
export interface RequestSettings {
  readonly temperature?: number | undefined
  readonly maxTokens?: number | undefined
  /** A key that routes requests sharing a prefix to the same cache (OpenAI's `prompt_cache_key`). */
  readonly promptCacheKey?: string | undefined
}

/**
 * The options `OpenAiLlm` takes too (model, abilities — by default all on but
 * `jsonMode`, since `@effect/ai` has no generic JSON mode, and `vision` —, sizes
 * with a 200000-token context window by default, retries, timeouts,
 * temperature, `promptCacheKey` for `configure`), and the bridge's own.
 *
 * @since 0.1.0
 * @category models
 */
export interface EffectAiLlmOptions extends LlmOptions {
  /** Where prompt-cache breakpoints go (default `"none"`). */
  readonly cacheBreakpoints?: CacheBreakpoints | undefined
  /** Applies per-request settings to one provider call (see the module comment). */
  readonly configure?: (settings: RequestSettings) => <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** Named in connection errors. */
  readonly endpoint?: string | undefined
}

/**
 * Defaults of the options.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults = {
  contextSize: 200_000,
  maxOutputTokens: 64_000,
  maxRetries: 3,
  retryBaseDelayMs: 500,
  timeoutMs: 120_000,
  totalTimeoutMs: 300_000
} as const satisfies Service.Defaults

/**
 * The abilities a model gets by default through this bridge.
 *
 * @since 0.1.0
 * @category constants
 */
export const bridgeAbilities: Abilities = { ...defaultAbilities, jsonMode: false, jsonSchema: false }

/**
 * The prompt-cache key of a request: the same for every request of one
 * conversation (its tools, system prompt and first user message do not change).
 *
 * @since 0.1.0
 * @category utils
 */
export const promptCacheKey: (request: ChatRequest) => string = internalKey

interface OpenStream {
  readonly scope: Scope.CloseableScope
  readonly pull: Effect.Effect<Chunk.Chunk<Response.AnyPart>, Option.Option<LlmError>>
  readonly first: Option.Option<Chunk.Chunk<Response.AnyPart>>
}

/**
 * Builds the service over a `LanguageModel` service. Never throws; every failure
 * of a call is an `LlmError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe = (languageModel: LanguageModel.Service, options: EffectAiLlmOptions): LlmService => {
  const abilities: Abilities = { ...bridgeAbilities, ...options.abilities }
  const breakpoints = options.cacheBreakpoints ?? "none"
  const policy = Service.policy(options, defaults, options.endpoint)
  const { attemptTimeout, idleTimeout, retry, timeoutMs } = policy

  const configured = (request: ChatRequest) => {
    if (options.configure === undefined) return <A, E, R>(self: Effect.Effect<A, E, R>) => self
    const temperature = request.temperature ?? options.temperature
    return options.configure({
      ...(temperature !== undefined ? { temperature } : {}),
      ...(request.maxTokens !== undefined ? { maxTokens: request.maxTokens } : {}),
      ...(options.promptCacheKey ? { promptCacheKey: promptCacheKey(request) } : {})
    })
  }
  const toolsOf = (request: ChatRequest) =>
    hasTools(request) && abilities.toolCall
      ? {
        toolkit: toToolkit(request.tools),
        toolChoice: abilities.toolChoice ? toToolChoice(request.toolChoice) : "auto" as const,
        disableToolCallResolution: true as const
      }
      : {}

  const attachments = Attached.context(options.inputModalities, options.attachments)
  const chatOnce = (request: ChatRequest): Effect.Effect<ChatResponse, LlmError> =>
    Effect.flatMap(
      promptOf(request, breakpoints, attachments),
      (prompt) => languageModel.generateText({ prompt, ...toolsOf(request) } as never)
    ).pipe(
      configured(request),
      Effect.mapError((e) => toLlmError(e as never)),
      Effect.timeoutFail({ duration: timeoutMs, onTimeout: attemptTimeout }),
      Effect.flatMap((response) => {
        const out = toChatResponse((response as LanguageModel.GenerateTextResponse<{}>).content as never)
        return out instanceof LlmError ? Effect.fail(out) : Effect.succeed(out)
      })
    )

  // One attempt at opening a stream: the request and its first parts, in a scope of
  // its own that is closed when the attempt fails or times out.
  const openOnce = (request: ChatRequest): Effect.Effect<OpenStream, LlmError> =>
    Effect.flatMap(Effect.zip(Scope.make(), promptOf(request, breakpoints, attachments)), ([scope, prompt]) => {
      const parts = languageModel.streamText({ prompt, ...toolsOf(request) } as never) as unknown as Stream.Stream<
        Response.AnyPart,
        unknown
      >
      return Effect.gen(function*() {
        const raw = yield* Scope.extend(Stream.toPull(parts), scope)
        const pull = Effect.mapError(raw, Option.map((e) => toLlmError(e as never)))
        const first = yield* Effect.catchAll(
          Effect.map(pull, Option.some),
          (end) => Option.isNone(end) ? Effect.succeed(Option.none()) : Effect.fail(end.value)
        )
        return { scope, pull, first } satisfies OpenStream
      }).pipe(
        configured(request),
        Effect.timeoutFail({ duration: timeoutMs, onTimeout: idleTimeout }),
        Effect.onExit((exit) => (Exit.isSuccess(exit) ? Effect.void : Scope.close(scope, Exit.void)))
      )
    })

  const streamChat = (request: ChatRequest): Stream.Stream<ChatDelta, LlmError> =>
    unwrapDeltasScoped(Effect.gen(function*() {
      const open = yield* Effect.uninterruptibleMask((restore) =>
        restore(retry(openOnce(request))).pipe(
          Effect.tap((o) => Effect.addFinalizer(() => Scope.close(o.scope, Exit.void)))
        )
      )
      const state = streamState()
      const first: Stream.Stream<Response.AnyPart, LlmError> = Option.match(open.first, {
        onNone: () => Stream.empty,
        onSome: (chunk) => Stream.fromChunk(chunk)
      })
      const rest = Option.isNone(open.first)
        ? Stream.empty
        : Stream.repeatEffectChunkOption(open.pull).pipe(Stream.timeoutFail(idleTimeout, timeoutMs))
      return Stream.concat(first, rest).pipe(
        Stream.mapEffect((part) => {
          const deltas = partToDeltas(part, state)
          return deltas instanceof LlmError ? Effect.fail(deltas) : Effect.succeed(deltas)
        }),
        Stream.flattenIterables
      )
    }))

  return Service.make({ options, defaults, abilities, policy, chatOnce, streamChat })
}

/**
 * The service over the `LanguageModel` in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: EffectAiLlmOptions): Effect.Effect<LlmService, never, LanguageModel.LanguageModel> =>
  Effect.map(
    Effect.zip(LanguageModel.LanguageModel, Effect.serviceOption(Attachments.Attachments)),
    ([model, store]) =>
      makeUnsafe(
        model,
        options.attachments !== undefined || Option.isNone(store) ? options : { ...options, attachments: store.value }
      )
  )

/**
 * The `Llm` over the `LanguageModel` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: EffectAiLlmOptions): Layer.Layer<Llm, never, LanguageModel.LanguageModel> =>
  Layer.effect(Llm, make(options))
