/**
 * The LLM service over any OpenAI-compatible chat-completions endpoint (OpenAI,
 * DeepSeek, Qwen, vLLM, Ollama, llama.cpp, LM Studio…), through the official
 * `openai` SDK.
 *
 * - Retries are Effect's, not the SDK's (`maxRetries: 0` on the client): rate
 *   limits, 5xx, timeouts and connection errors are retried `maxRetries` times with
 *   exponential backoff and jitter — for `chat`, and for `streamChat` until its
 *   first chunk arrives (never after: deltas already emitted cannot be taken back).
 * - Time bounds are Effect timeouts: each attempt as a whole (`timeout`: a whole
 *   reply, headers and body — the SDK's own timer stops at the headers — or a
 *   stream until its first chunk), the call across its retries (`totalTimeout`),
 *   and a stream between two chunks (`timeout` again, as an idle bound).
 *   Each retry is announced to the fiber's retry observer (`Llm.notifyRetry`).
 * - One budget per logical call (`oneCall`): requests made inside it share the
 *   retry count, the backoff and the `totalTimeout` deadline — the agent's
 *   streamed loop call and its non-streamed fallback are one call.
 * - Interruption aborts the HTTP request (`chat` via the `AbortSignal`, the stream
 *   by aborting its controller when the stream's scope closes).
 * - Reasoning: `reasoning_content` (DeepSeek style; also `reasoning`) and inline
 *   `<think>…</think>` blocks, in replies and in stream deltas (tags split across
 *   chunks are handled).
 * - Errors are `LlmError`s typed by reason (see `Llm.ts`).
 * - `abilities.streaming: false` (endpoints without streaming): `streamChat`
 *   makes one non-streaming call and emits the reply as deltas.
 *
 * ```ts
 * const llm = OpenAiLlm.layer({ model: "gpt-4o-mini", apiKey: Redacted.make(key) })
 * // or from the environment (LLM_BASE_URL, LLM_API_KEY, LLM_MODEL, …), options given as Configs winning:
 * const fromEnv = OpenAiLlm.layerConfig()
 * const mine = OpenAiLlm.layerConfig({ model: Config.string("MY_MODEL"), temperature: Config.succeed(0) })
 * ```
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import OpenAI from "openai"
import type { ChatCompletion, ChatCompletionChunk } from "openai/resources/chat/completions"
import * as Attachments from "./Attachments.js"
import * as Attached from "./internal/llm/attachments.js"
import * as CallBudget from "./internal/llm/callBudget.js"
import * as Service from "./internal/llm/service.js"
import { ThinkSplitter } from "./internal/llm/think.js"
import * as internal from "./internal/openAiLlm/config.js"
import { paramsOf, toChatResponse, toLlmError } from "./internal/openAiLlm/request.js"
import type { StreamState } from "./internal/openAiLlm/stream.js"
import { chunkToDeltas, endDeltas } from "./internal/openAiLlm/stream.js"
import type { Abilities, ChatDelta, ChatRequest, LlmService } from "./Llm.js"
import { defaultAbilities, Llm, LlmError, unwrapDeltasScoped } from "./Llm.js"

/**
 * @since 0.1.0
 * @category models
 */
export type OpenAiLlmOptions = internal.OpenAiLlmOptions

/**
 * Defaults of the options.
 *
 * @since 0.1.0
 * @category constants
 */
export const defaults = internal.defaults

/**
 * The retry policy: exponential backoff from `base`, jittered, capped at 30 s,
 * at most `maxRetries` retries. (The LLM also waits at least as long as a 429's
 * `Retry-After` asks, up to 60 s.)
 *
 * @since 0.1.0
 * @category utils
 */
export const retrySchedule: (
  maxRetries: number,
  base: Duration.DurationInput
) => Schedule.Schedule<[Duration.Duration, number], unknown> = CallBudget.retrySchedule

const makeClient = (options: Omit<OpenAiLlmOptions, "model">, timeoutMs: number): OpenAI => {
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
 * Builds the service at once (it creates its `OpenAI` client). Never throws;
 * every failure of a call is an `LlmError`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe = (options: OpenAiLlmOptions): LlmService => {
  const endpoint = options.client ? undefined : options.baseURL ?? "https://api.openai.com/v1"
  const policy = Service.policy(options, defaults, endpoint)
  const { attemptTimeout, idleTimeout, retry, timeoutMs } = policy
  const client = makeClient(options, timeoutMs)
  const abilities: Abilities = { ...defaultAbilities, ...options.abilities }
  const settings = {
    model: options.model,
    abilities,
    temperature: options.temperature,
    sendReasoningContent: options.sendReasoningContent,
    extraBody: options.extraBody,
    promptCacheKey: options.promptCacheKey,
    attachments: Attached.context(options.inputModalities, options.attachments)
  }

  // One attempt, headers and body: the timeout interrupts the promise, which aborts
  // its request through the signal (a reply stalled mid-body included).
  const chatOnce = (request: ChatRequest) =>
    Effect.flatMap(paramsOf(request, settings), (params) =>
      Effect.tryPromise({
        try: (signal) =>
          client.chat.completions.create({ ...params, stream: false }, { signal }) as Promise<ChatCompletion>,
        catch: toLlmError
      })).pipe(
        Effect.timeoutFail({ duration: timeoutMs, onTimeout: attemptTimeout }),
        Effect.flatMap((body) => {
          const response = toChatResponse(body)
          return response instanceof LlmError ? Effect.fail(response) : Effect.succeed(response)
        })
      )

  // One attempt at opening a stream: request, headers, first chunk, bounded as a
  // whole. On failure, timeout or interruption the attempt's request is aborted.
  const openOnce = (request: ChatRequest): Effect.Effect<OpenStream, LlmError> =>
    Effect.flatMap(paramsOf(request, settings), (body) => {
      const controller = new AbortController()
      const params = {
        ...body,
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
            Effect.map((first): OpenStream => ({ controller, iterator, first }))
          )
        ),
        Effect.timeoutFail({ duration: timeoutMs, onTimeout: idleTimeout }),
        Effect.onExit((exit) => (exit._tag === "Success" ? Effect.void : Effect.sync(() => controller.abort())))
      )
    })

  const release = (open: OpenStream) =>
    Effect.sync(() => open.controller.abort()).pipe(
      Effect.zipRight(
        Effect.promise(async () => {
          try {
            await open.iterator.return?.()
          } catch {
            // already failed or aborted
          }
        }).pipe(Effect.timeout(1000), Effect.ignore)
      )
    )

  // the response is opened (and its first chunk awaited) when the stream runs, released when it ends
  // (`unwrapDeltasScoped`: `Stream.unwrapScoped`)
  const streamChat = (request: ChatRequest): Stream.Stream<ChatDelta, LlmError> =>
    unwrapDeltasScoped(Effect.gen(function*() {
      const open = yield* Effect.uninterruptibleMask((restore) =>
        restore(retry(openOnce(request))).pipe(Effect.tap((o) => Effect.addFinalizer(() => release(o))))
      )
      const state: StreamState = { splitter: new ThinkSplitter(), usage: undefined }
      const first: Stream.Stream<ChatCompletionChunk> = open.first.done
        ? Stream.empty
        : Stream.succeed(open.first.value)
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

  return Service.make({ options, defaults, abilities, policy, chatOnce, streamChat })
}

/**
 * The service, built when the effect runs (see `makeUnsafe`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: OpenAiLlmOptions): Effect.Effect<LlmService> =>
  Effect.map(
    Effect.serviceOption(Attachments.Attachments),
    (store) =>
      makeUnsafe(
        options.attachments !== undefined || Option.isNone(store) ? options : { ...options, attachments: store.value }
      )
  )

/**
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: OpenAiLlmOptions): Layer.Layer<Llm> => Layer.effect(Llm, make(options))

// ---------------------------------------------------------------------------
// Config

/**
 * An optional http(s) URL variable (empty means unset).
 *
 * @since 0.1.0
 * @category config
 */
export const urlOption: (name: string) => Config.Config<Option.Option<string>> = internal.urlOption

/**
 * An optional secret variable (empty means unset).
 *
 * @since 0.1.0
 * @category config
 */
export const secretOption: (name: string) => Config.Config<Option.Option<Redacted.Redacted<string>>> =
  internal.secretOption

/**
 * An optional non-empty string variable (empty means unset).
 *
 * @since 0.1.0
 * @category config
 */
export const stringOption: (name: string) => Config.Config<Option.Option<string>> = internal.stringOption

/**
 * What a model takes, from a variable (`LLM_INPUT_MODALITIES`): a comma-separated
 * list of `text`, `image`, `file` (text is always taken).
 *
 * @since 0.1.0
 * @category config
 */
export const modalitiesOption: (
  name: string
) => Config.Config<Option.Option<ReadonlyArray<"text" | "image" | "file">>> = internal.modalitiesOption

/**
 * Everything but the connection (model, URL, key): temperature, abilities, sizes,
 * retries, timeouts (`LLM_TEMPERATURE`, `LLM_*_ENABLED`, `LLM_CONTEXT_SIZE`,
 * `LLM_MAX_OUTPUT_TOKENS`, `LLM_MAX_RETRIES`, `LLM_RETRY_BASE_DELAY_MS`,
 * `LLM_TIMEOUT_MS`, `LLM_TOTAL_TIMEOUT_MS`). Shared by the main and the fast model.
 *
 * @since 0.1.0
 * @category config
 */
export const settingsConfig = internal.settingsConfig

/**
 * The main model's options from `LLM_*` variables, `LLM_MODEL` required (no
 * network). `loadConfig` also accepts a missing `LLM_MODEL` when `LLM_BASE_URL`
 * is set.
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<OpenAiLlmOptions> = internal.config

/**
 * Lists the endpoint's models (`GET /models`) and returns the first one — for
 * servers that serve one model (llama.cpp, LM Studio, vLLM, Ollama with one model).
 *
 * @since 0.1.0
 * @category utils
 */
export const discoverModel = (
  options: Omit<OpenAiLlmOptions, "model">
): Effect.Effect<string, LlmError> => {
  const timeoutMs = options.timeout !== undefined ? Duration.toMillis(options.timeout) : defaults.timeoutMs
  const client = makeClient(options, timeoutMs)
  return Effect.tryPromise({
    try: async (signal) => (await client.models.list({ signal })).data,
    catch: toLlmError
  }).pipe(
    Effect.flatMap((models) => {
      const first = Array.isArray(models) ? models.find((m) => typeof m?.id === "string" && m.id !== "") : undefined
      return first
        ? Effect.succeed(first.id)
        : Effect.fail(new LlmError({ reason: "Decode", message: "The endpoint lists no models" }))
    })
  )
}

/**
 * What `layerConfig` takes (as a `Config.Wrap`): any option but a ready
 * `client`; each one given wins over its `LLM_*` variable.
 *
 * @since 0.1.0
 * @category models
 */
export type ConfigOptions = internal.ConfigOptions

/**
 * The model's options: `config` (see `layerConfig`) over the `LLM_*` variables.
 * When no model is given and `LLM_MODEL` is unset but a base URL is (given or
 * `LLM_BASE_URL`), the endpoint's first model is used (`discoverModel`); when
 * that fails, or there is no URL either, the error is a `ConfigError` naming
 * `LLM_MODEL`.
 *
 * @since 0.1.0
 * @category config
 */
export const loadConfig = (
  config: Config.Config.Wrap<ConfigOptions> = {}
): Effect.Effect<OpenAiLlmOptions, ConfigError.ConfigError> =>
  Effect.flatMap(
    Config.all([internal.unwrap(config), internal.configModelOptional]),
    ([given, env]): Effect.Effect<OpenAiLlmOptions, ConfigError.ConfigError> => {
      const { model, options } = internal.mergeOptions(given, env)
      if (Option.isSome(model)) return Effect.succeed({ ...options, model: model.value })
      if (options.baseURL === undefined) {
        return Effect.fail(ConfigError.MissingData(
          ["LLM_MODEL"],
          "Expected LLM_MODEL to be set (or LLM_BASE_URL, to use the endpoint's first model)"
        ))
      }
      const url = options.baseURL
      return discoverModel(options).pipe(
        Effect.tap((found) => Effect.logInfo(`LLM_MODEL is not set: using ${found}, the first model listed by ${url}`)),
        Effect.map((found) => ({ ...options, model: found })),
        Effect.mapError((e) =>
          ConfigError.InvalidData(
            ["LLM_MODEL"],
            `LLM_MODEL is not set and no model could be listed from ${url}/models: ${e.message}`
          )
        )
      )
    }
  )

/**
 * The `Llm` from the environment (see docs/configuration.md, "LLM"); `config`
 * (as Effect's packages take it: each option a `Config`, or one `Config` of them
 * all) sets options that win over the `LLM_*` variables, e.g.
 * `layerConfig({ model: Config.string("MY_MODEL"), apiKey: Config.redacted("MY_KEY") })`
 * or `layerConfig(Config.succeed({ temperature: 0 }))`. A missing or malformed
 * variable fails with a `ConfigError` naming it.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<ConfigOptions> = {}
): Layer.Layer<Llm, ConfigError.ConfigError> => Layer.effect(Llm, Effect.flatMap(loadConfig(config), make))
