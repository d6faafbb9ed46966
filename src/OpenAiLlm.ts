/**
 * The LLM service over any OpenAI-compatible chat-completions endpoint (OpenAI,
 * DeepSeek, Qwen, vLLM, Ollama, llama.cpp, LM Studio…), through the official
 * `openai` SDK.
 *
 * - Retries are Effect's, not the SDK's (`maxRetries: 0` on the client): rate
 *   limits, 5xx, timeouts and connection errors are retried `maxRetries` times with
 *   exponential backoff and jitter — for `chat`, and for `streamChat` until its
 *   first chunk arrives (never after: deltas already emitted cannot be taken back).
 * - Interruption aborts the HTTP request (`chat` via the `AbortSignal`, the stream
 *   by aborting its controller when the stream's scope closes).
 * - Reasoning: `reasoning_content` (DeepSeek style; also `reasoning`) and inline
 *   `<think>…</think>` blocks, in replies and in stream deltas (tags split across
 *   chunks are handled).
 * - Errors are `LlmError`s typed by reason (see `Llm.ts`).
 *
 * ```ts
 * const llm = OpenAiLlm.layer({ model: "gpt-4o-mini", apiKey: Redacted.make(key) })
 * // or from the environment (LLM_BASE_URL, LLM_API_KEY, LLM_MODEL, …):
 * const fromEnv = OpenAiLlm.layerConfig
 * ```
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import OpenAI from "openai"
import type { ChatCompletion, ChatCompletionChunk } from "openai/resources/chat/completions"
import { retryAfterMillis, toChatResponse, toLlmError, toParams } from "./internal/openAiRequest.js"
import type { StreamState } from "./internal/openAiStream.js"
import { chunkToDeltas, endDeltas } from "./internal/openAiStream.js"
import { ThinkSplitter } from "./internal/openAiThink.js"
import type { Abilities, ChatDelta, ChatRequest, LlmService } from "./Llm.js"
import { defaultAbilities, Llm, LlmError } from "./Llm.js"

/** @since 0.1.0 @category models */
export interface OpenAiLlmOptions {
  /** The provider's model name. */
  readonly model: string
  /** e.g. `https://api.deepseek.com/v1`, `http://localhost:11434/v1`; the SDK default (OpenAI) when unset. */
  readonly baseURL?: string | undefined
  /** Omitted for local servers that need no key. */
  readonly apiKey?: Redacted.Redacted<string> | string | undefined
  /** Default sampling temperature (a request's own temperature wins). */
  readonly temperature?: number | undefined
  readonly abilities?: Partial<Abilities> | undefined
  /** Context window in tokens (default 128000). */
  readonly contextSize?: number | undefined
  /** Max output tokens (default 64000); used for the context budget, not sent with requests. */
  readonly maxOutputTokens?: number | undefined
  /** Retries of retryable failures (default 3). */
  readonly maxRetries?: number | undefined
  /** First backoff delay (default 500 ms; doubled per retry, jittered, capped at 30 s). */
  readonly retryBaseDelay?: Duration.DurationInput | undefined
  /** Per-attempt timeout: until the response headers, then between stream chunks (default 120 s). */
  readonly timeout?: Duration.DurationInput | undefined
  /** Ask for usage on streams (`stream_options.include_usage`, default true). */
  readonly streamUsage?: boolean | undefined
  /** Send assistant `reasoning_content` back in later requests (default false: most providers reject it). */
  readonly sendReasoningContent?: boolean | undefined
  /** Extra fields merged into every request body (provider-specific knobs). */
  readonly extraBody?: Record<string, unknown> | undefined
  /** Extra HTTP headers. */
  readonly headers?: Record<string, string> | undefined
  /** A ready client (tests, custom fetch); the connection options above are then ignored. */
  readonly client?: OpenAI | undefined
}

/** @since 0.1.0 @category constants */
export const defaults = {
  contextSize: 128_000,
  maxOutputTokens: 64_000,
  maxRetries: 3,
  retryBaseDelayMs: 500,
  timeoutMs: 120_000
} as const

const MAX_BACKOFF = Duration.seconds(30)

/**
 * The retry policy: exponential backoff from `base`, jittered, capped at 30 s,
 * at most `maxRetries` retries. (The LLM also waits at least as long as a 429's
 * `Retry-After` asks, up to 60 s.)
 *
 * @since 0.1.0 @category utils
 */
export const retrySchedule = (maxRetries: number, base: Duration.DurationInput) =>
  Schedule.exponential(base, 2).pipe(
    Schedule.jittered,
    Schedule.modifyDelay((_, delay) => Duration.min(delay, MAX_BACKOFF)),
    Schedule.intersect(Schedule.recurs(Math.max(0, Math.floor(maxRetries))))
  )

// The backoff, or the provider's `Retry-After` when it asks for longer.
const llmRetrySchedule = (maxRetries: number, base: Duration.DurationInput) =>
  retrySchedule(maxRetries, base).pipe(
    Schedule.intersect(Schedule.identity<LlmError>()),
    Schedule.modifyDelay(([, error], delay) => {
      const wait = retryAfterMillis(error)
      return wait === undefined ? delay : Duration.max(delay, Duration.millis(wait))
    })
  )

const makeClient = (options: OpenAiLlmOptions, timeoutMs: number): OpenAI => {
  if (options.client) return options.client
  const key = options.apiKey === undefined
    ? "no-key"
    : typeof options.apiKey === "string"
    ? options.apiKey
    : Redacted.value(options.apiKey)
  return new OpenAI({
    apiKey: key === "" ? "no-key" : key,
    ...(options.baseURL !== undefined ? { baseURL: options.baseURL } : {}),
    maxRetries: 0,
    timeout: timeoutMs,
    ...(options.headers ? { defaultHeaders: options.headers } : {})
  })
}

interface OpenStream {
  readonly controller: AbortController
  readonly iterator: AsyncIterator<ChatCompletionChunk>
  readonly first: IteratorResult<ChatCompletionChunk>
}

/**
 * Builds the service. Never throws; every failure of a call is an `LlmError`.
 *
 * @since 0.1.0 @category constructors
 */
export const make = (options: OpenAiLlmOptions): LlmService => {
  const timeoutMs = options.timeout !== undefined ? Duration.toMillis(options.timeout) : defaults.timeoutMs
  const client = makeClient(options, timeoutMs)
  const abilities: Abilities = { ...defaultAbilities, ...options.abilities }
  const settings = {
    model: options.model,
    abilities,
    temperature: options.temperature,
    sendReasoningContent: options.sendReasoningContent,
    extraBody: options.extraBody
  }
  const schedule = llmRetrySchedule(
    options.maxRetries ?? defaults.maxRetries,
    options.retryBaseDelay ?? Duration.millis(defaults.retryBaseDelayMs)
  )
  const endpoint = options.client ? undefined : options.baseURL ?? "https://api.openai.com/v1"
  const retry = <A, R>(effect: Effect.Effect<A, LlmError, R>) =>
    Effect.retry(effect, { schedule, while: (e: LlmError) => e.retryable }).pipe(
      Effect.mapError((e) =>
        e.reason === "Connection" && endpoint !== undefined && !e.message.includes(endpoint)
          ? new LlmError({ reason: e.reason, message: e.message.replace("LLM endpoint", `LLM endpoint ${endpoint}`) })
          : e
      )
    )
  const idleTimeout = () => new LlmError({ reason: "Timeout", message: `No data from the LLM stream for ${timeoutMs} ms` })

  const chatOnce = (request: ChatRequest) =>
    Effect.tryPromise({
      try: (signal) =>
        client.chat.completions.create({ ...toParams(request, settings), stream: false }, { signal }) as Promise<ChatCompletion>,
      catch: toLlmError
    }).pipe(
      Effect.flatMap((body) => {
        const response = toChatResponse(body)
        return response instanceof LlmError ? Effect.fail(response) : Effect.succeed(response)
      })
    )

  // One attempt at opening a stream: request, headers, first chunk. On failure or
  // interruption the attempt's request is aborted.
  const openOnce = (request: ChatRequest): Effect.Effect<OpenStream, LlmError> =>
    Effect.suspend(() => {
      const controller = new AbortController()
      const params = {
        ...toParams(request, settings),
        stream: true as const,
        ...(options.streamUsage === false ? {} : { stream_options: { include_usage: true } })
      }
      return Effect.tryPromise({
        try: async (signal) => {
          signal.addEventListener("abort", () => controller.abort(), { once: true })
          const stream = await client.chat.completions.create(params, { signal: controller.signal })
          const iterator = stream[Symbol.asyncIterator]()
          return { controller, iterator }
        },
        catch: toLlmError
      }).pipe(
        Effect.flatMap(({ controller, iterator }) =>
          Effect.tryPromise({ try: () => iterator.next(), catch: toLlmError }).pipe(
            Effect.timeoutFail({ duration: timeoutMs, onTimeout: idleTimeout }),
            Effect.map((first): OpenStream => ({ controller, iterator, first }))
          )
        ),
        Effect.onExit((exit) => (exit._tag === "Success" ? Effect.void : Effect.sync(() => controller.abort())))
      )
    })

  const release = (open: OpenStream) =>
    Effect.sync(() => open.controller.abort()).pipe(
      Effect.zipRight(Effect.promise(async () => {
        try {
          await open.iterator.return?.()
        } catch {
          // already failed or aborted
        }
      }).pipe(Effect.timeout(1000), Effect.ignore))
    )

  const streamChat = (request: ChatRequest): Stream.Stream<ChatDelta, LlmError> =>
    Stream.unwrapScoped(Effect.gen(function*() {
      const open = yield* Effect.uninterruptibleMask((restore) =>
        restore(retry(openOnce(request))).pipe(Effect.tap((o) => Effect.addFinalizer(() => release(o))))
      )
      const state: StreamState = { splitter: new ThinkSplitter(), usage: undefined }
      const first: Stream.Stream<ChatCompletionChunk> = open.first.done ? Stream.empty : Stream.succeed(open.first.value)
      const rest = Stream.repeatEffectOption(
        Effect.tryPromise({ try: () => open.iterator.next(), catch: (e) => Option.some(toLlmError(e)) }).pipe(
          Effect.flatMap((r) => (r.done ? Effect.fail(Option.none()) : Effect.succeed(r.value)))
        )
      ).pipe(Stream.timeoutFail(idleTimeout, timeoutMs))
      const chunks = open.first.done ? first : Stream.concat(first, rest)
      return chunks.pipe(
        Stream.mapConcat((chunk) => chunkToDeltas(chunk, state)),
        Stream.concat(Stream.suspend(() => Stream.fromIterable(endDeltas(state))))
      )
    }))

  return {
    model: options.model,
    abilities,
    contextSize: options.contextSize ?? defaults.contextSize,
    maxOutputTokens: options.maxOutputTokens ?? defaults.maxOutputTokens,
    chat: (request) => retry(chatOnce(request)),
    streamChat
  }
}

/** @since 0.1.0 @category layers */
export const layer = (options: OpenAiLlmOptions): Layer.Layer<Llm> => Layer.sync(Llm, () => make(options))

// ---------------------------------------------------------------------------
// Config

const trimmedOption = (name: string) =>
  Config.option(Config.string(name)).pipe(Config.map(Option.filter((s) => s.trim() !== "")), Config.map(Option.map((s) => s.trim())))

const isHttpUrl = (s: string): boolean => {
  try {
    const url = new URL(s)
    return url.protocol === "http:" || url.protocol === "https:"
  } catch {
    return false
  }
}

/** An optional http(s) URL variable (empty means unset). @since 0.1.0 @category config */
export const urlOption = (name: string): Config.Config<Option.Option<string>> =>
  Config.option(
    Config.string(name).pipe(
      Config.validate({
        message: "Expected an http(s) URL, e.g. http://localhost:11434/v1",
        validation: (s) => s.trim() === "" || isHttpUrl(s.trim())
      })
    )
  ).pipe(Config.map(Option.filter((s) => s.trim() !== "")), Config.map(Option.map((s) => s.trim())))

/** An optional secret variable (empty means unset). @since 0.1.0 @category config */
export const secretOption = (name: string): Config.Config<Option.Option<Redacted.Redacted<string>>> =>
  Config.option(Config.redacted(name)).pipe(Config.map(Option.filter((r) => Redacted.value(r).trim() !== "")))

/** An optional non-empty string variable (empty means unset). @since 0.1.0 @category config */
export const stringOption = (name: string): Config.Config<Option.Option<string>> => trimmedOption(name)

const int = (name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER) =>
  Config.integer(name).pipe(
    Config.validate({ message: `Expected an integer between ${min} and ${max}`, validation: (n) => n >= min && n <= max }),
    Config.withDefault(fallback)
  )

const bool = (name: string, fallback: boolean) => Config.boolean(name).pipe(Config.withDefault(fallback))

/**
 * Everything but the connection (model, URL, key): temperature, abilities, sizes,
 * retries, timeout. Shared by the main and the fast model.
 *
 * @since 0.1.0 @category config
 */
export const settingsConfig: Config.Config<Omit<OpenAiLlmOptions, "model" | "baseURL" | "apiKey" | "client">> = Config
  .all({
    temperature: Config.option(
      Config.number("LLM_TEMPERATURE").pipe(
        Config.validate({ message: "Expected a number between 0 and 2", validation: (t) => t >= 0 && t <= 2 })
      )
    ),
    toolCall: bool("LLM_TOOL_CALL_ENABLED", true),
    toolChoice: bool("LLM_TOOL_CHOICE_ENABLED", true),
    jsonMode: bool("LLM_JSON_MODE_ENABLED", true),
    vision: bool("LLM_VISION_ENABLED", false),
    contextSize: int("LLM_CONTEXT_SIZE", defaults.contextSize, 1),
    maxOutputTokens: int("LLM_MAX_OUTPUT_TOKENS", defaults.maxOutputTokens, 1),
    maxRetries: int("LLM_MAX_RETRIES", defaults.maxRetries, 0, 20),
    retryBaseDelayMs: int("LLM_RETRY_BASE_DELAY_MS", defaults.retryBaseDelayMs, 0, 60_000),
    timeoutMs: int("LLM_TIMEOUT_MS", defaults.timeoutMs, 1)
  })
  .pipe(Config.map((c) => ({
    temperature: Option.getOrUndefined(c.temperature),
    abilities: { toolCall: c.toolCall, toolChoice: c.toolChoice, jsonMode: c.jsonMode, vision: c.vision },
    contextSize: c.contextSize,
    maxOutputTokens: c.maxOutputTokens,
    maxRetries: c.maxRetries,
    retryBaseDelay: Duration.millis(c.retryBaseDelayMs),
    timeout: Duration.millis(c.timeoutMs)
  })))

/**
 * The main model's options from `LLM_*` variables (`LLM_MODEL` is required).
 *
 * @since 0.1.0 @category config
 */
export const config: Config.Config<OpenAiLlmOptions> = Config.all({
  model: Config.string("LLM_MODEL").pipe(
    Config.map((s) => s.trim()),
    Config.validate({ message: "Expected a model name (LLM_MODEL must not be empty)", validation: (s) => s !== "" })
  ),
  baseURL: urlOption("LLM_BASE_URL"),
  apiKey: secretOption("LLM_API_KEY"),
  settings: settingsConfig
}).pipe(Config.map(({ apiKey, baseURL, model, settings }) => ({
  ...settings,
  model,
  baseURL: Option.getOrUndefined(baseURL),
  apiKey: Option.getOrUndefined(apiKey)
})))

/**
 * The `Llm` from the environment (see docs/configuration.md, "LLM"). A missing or
 * malformed variable fails with a `ConfigError` naming it.
 *
 * @since 0.1.0 @category layers
 */
export const layerConfig: Layer.Layer<Llm, ConfigError.ConfigError> = Layer.effect(Llm, Effect.map(config, make))
