/**
 * Embeddings: text to vectors, for memory's recall (docs/memory.md). The `Embedder`
 * service has one call, `embed(texts)`, and three kinds of implementation:
 *
 * - `layer(options)` / `layerConfig()`: any OpenAI-compatible `POST
 *   /embeddings` through the official `openai` SDK (`EMBEDDING_MODEL`, default
 *   `text-embedding-3-small`; `EMBEDDING_BASE_URL` / `EMBEDDING_API_KEY`,
 *   default the `LLM_*` ones);
 * - `EffectAiEmbedder.layer(options)` (subpath `effect-react-engine/EffectAiEmbedder`): any
 *   `@effect/ai` `EmbeddingModel` in context;
 * - `layerLocal(options?)`: a local deterministic embedder for the offline demo
 *   (hashed words, not meaning), labelled as such.
 *
 * ```ts
 * const memory = Memory.layerMemory().pipe(Layer.provide(Embedder.layer({ model: "text-embedding-3-small" })))
 * ```
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import OpenAI from "openai"
import { embedText } from "./internal/embedder/local.js"
import * as TokenEstimator from "./TokenEstimator.js"

/**
 * An embedding call failed: `retryable` for rate limits, server errors,
 * timeouts and lost connections.
 *
 * @since 0.1.0
 * @category errors
 */
export class EmbeddingError extends Schema.TaggedError<EmbeddingError>()("EmbeddingError", {
  message: Schema.String,
  retryable: Schema.Boolean
}) {}

/**
 * The vectors of a call, in the order of its texts, and the tokens it was
 * billed (estimated when the provider reports none).
 *
 * @since 0.1.0
 * @category models
 */
export interface Embeddings {
  readonly vectors: ReadonlyArray<Float32Array>
  readonly tokens: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface EmbedderService {
  /** The model name (stored with each vector: vectors of different models are never compared). */
  readonly model: string
  /** What embeds, for people (the server's start-up line): e.g. `openai-compatible text-embedding-3-small at …`. */
  readonly label: string
  /** True for the local deterministic embedder: its vectors hash words, they know no meaning. */
  readonly local: boolean
  readonly embed: (texts: ReadonlyArray<string>) => Effect.Effect<Embeddings, EmbeddingError>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Embedder extends Context.Tag("effect-react-engine/Embedder")<Embedder, EmbedderService>() {}

/**
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_MODEL = "text-embedding-3-small"

/**
 * Options of the OpenAI-compatible embedder.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** Default `text-embedding-3-small`. */
  readonly model?: string | undefined
  /** e.g. `http://localhost:11434/v1`; the SDK's default (OpenAI) when unset. */
  readonly baseURL?: string | undefined
  readonly apiKey?: Redacted.Redacted<string> | string | undefined
  /** Ask for vectors of this size (models that can shorten theirs: `text-embedding-3-*`). */
  readonly dimensions?: number | undefined
  /** Per request, milliseconds (default 30000). */
  readonly timeoutMs?: number | undefined
  /** A ready client (tests); the connection options above are then ignored. */
  readonly client?: OpenAI | undefined
}

const statusOf = (error: unknown): number | undefined =>
  error instanceof OpenAI.APIError && typeof error.status === "number" ? error.status : undefined

const failure = (error: unknown): EmbeddingError => {
  const status = statusOf(error)
  const message = error instanceof Error ? error.message : String(error)
  const retryable = status === undefined || status === 429 || status >= 500
  return new EmbeddingError({ message: status === undefined ? message : `${status} ${message}`, retryable })
}

const where = (baseURL: string | undefined): string => {
  if (baseURL === undefined) return "OpenAI"
  try {
    const url = new URL(baseURL)
    return `${url.protocol}//${url.host}${url.pathname}`
  } catch {
    return "a custom endpoint"
  }
}

/**
 * The OpenAI-compatible embedder (`POST /embeddings` through the `openai`
 * SDK; it asks for base64 vectors and decodes them, as the SDK does).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe = (options: Options = {}): EmbedderService => {
  const model = options.model ?? DEFAULT_MODEL
  const key = options.apiKey === undefined
    ? ""
    : typeof options.apiKey === "string"
    ? options.apiKey
    : Redacted.value(options.apiKey)
  const client = options.client ?? new OpenAI({
    apiKey: key === "" ? "no-key" : key,
    ...(options.baseURL !== undefined ? { baseURL: options.baseURL } : {}),
    maxRetries: 1,
    timeout: options.timeoutMs ?? 30_000
  })
  return {
    model,
    label: `openai-compatible ${model} at ${where(options.client !== undefined ? client.baseURL : options.baseURL)}`,
    local: false,
    embed: (texts) =>
      texts.length === 0 ? Effect.succeed({ vectors: [], tokens: 0 }) : Effect.tryPromise({
        try: (signal) =>
          client.embeddings.create(
            {
              model,
              input: [...texts],
              ...(options.dimensions !== undefined ? { dimensions: options.dimensions } : {})
            },
            { signal }
          ),
        catch: failure
      }).pipe(Effect.flatMap((response) => {
        const vectors = [...response.data].sort((a, b) => a.index - b.index).map((d) => Float32Array.from(d.embedding))
        if (vectors.length !== texts.length) {
          return Effect.fail(
            new EmbeddingError({ message: `expected ${texts.length} vectors, got ${vectors.length}`, retryable: false })
          )
        }
        return Effect.succeed({ vectors, tokens: response.usage?.prompt_tokens ?? estimate(texts) })
      }))
  }
}

const estimate = (texts: ReadonlyArray<string>): number =>
  texts.reduce((sum, text) => sum + TokenEstimator.estimateText(text), 0)

/**
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: Options = {}): Layer.Layer<Embedder> => Layer.sync(Embedder, () => makeUnsafe(options))

const nonEmpty = (name: string) =>
  Config.option(Config.string(name)).pipe(
    Config.map(Option.filter((s) => s.trim() !== "")),
    Config.map(Option.map((s) => s.trim()))
  )

const secret = (name: string) =>
  Config.option(Config.redacted(name)).pipe(Config.map(Option.filter((r) => Redacted.value(r).trim() !== "")))

const httpUrl = (name: string) =>
  nonEmpty(name).pipe(Config.validate({
    message: "Expected an http(s) URL, e.g. http://localhost:11434/v1",
    validation: Option.match({ onNone: () => true, onSome: (s) => /^https?:\/\/[^/]/i.test(s) })
  }))

/**
 * The embedder's options from the environment: `EMBEDDING_MODEL` (default
 * `text-embedding-3-small`), `EMBEDDING_BASE_URL` (default `LLM_BASE_URL`),
 * `EMBEDDING_API_KEY` (default `LLM_API_KEY`), `EMBEDDING_DIMENSIONS` (unset:
 * the model's own), `EMBEDDING_TIMEOUT_MS` (30000).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<Options> = Config.all({
  model: nonEmpty("EMBEDDING_MODEL"),
  baseURL: httpUrl("EMBEDDING_BASE_URL"),
  llmBaseURL: httpUrl("LLM_BASE_URL"),
  apiKey: secret("EMBEDDING_API_KEY"),
  llmApiKey: secret("LLM_API_KEY"),
  dimensions: Config.option(
    Config.integer("EMBEDDING_DIMENSIONS").pipe(
      Config.validate({ message: "Expected an integer between 1 and 8192", validation: (n) => n >= 1 && n <= 8192 })
    )
  ),
  timeoutMs: Config.integer("EMBEDDING_TIMEOUT_MS").pipe(
    Config.validate({ message: "Expected a positive integer", validation: (n) => n >= 1 }),
    Config.withDefault(30_000)
  )
}).pipe(Config.map((c): Options => ({
  model: Option.getOrElse(c.model, () => DEFAULT_MODEL),
  baseURL: Option.getOrUndefined(Option.orElse(c.baseURL, () => c.llmBaseURL)),
  apiKey: Option.getOrUndefined(Option.orElse(c.apiKey, () => c.llmApiKey)),
  dimensions: Option.getOrUndefined(c.dimensions),
  timeoutMs: c.timeoutMs
})))

/**
 * The OpenAI-compatible embedder configured from the environment (`config`);
 * `options` win over the variables.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (options: Options = {}): Layer.Layer<Embedder, ConfigError.ConfigError> =>
  Layer.effect(Embedder, Effect.map(config, (read) => makeUnsafe({ ...read, ...definedOf(options) })))

const definedOf = (options: Options): Options =>
  Object.fromEntries(Object.entries(options).filter(([, v]) => v !== undefined)) as Options

/**
 * What the embedder uses of an `@effect/ai` `EmbeddingModel` (its `Service`
 * has this shape; written here so that the main entry's types do not need
 * `@effect/ai`, an optional peer dependency).
 *
 * @since 0.1.0
 * @category models
 */
export interface EmbeddingModelLike {
  readonly embedMany: (
    input: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<ReadonlyArray<number>>, { readonly message: string }>
}

/**
 * An embedder over an `@effect/ai` `EmbeddingModel` (which reports no usage:
 * its tokens are estimated).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromEmbeddingModel = (
  model: EmbeddingModelLike,
  options: { readonly model: string }
): EmbedderService => ({
  model: options.model,
  label: `@effect/ai EmbeddingModel ${options.model}`,
  local: false,
  embed: (texts) =>
    model.embedMany(texts).pipe(
      Effect.map((vectors) => ({ vectors: vectors.map((v) => Float32Array.from(v)), tokens: estimate(texts) })),
      Effect.mapError((error) => new EmbeddingError({ message: error.message, retryable: true }))
    )
})

/**
 * The local deterministic embedder (offline demo, tests): words and their
 * trigrams hashed into `dimensions` (default 256), unit length. It finds texts
 * that share words, not texts that mean the same; its label says so. No
 * network, no tokens billed (the estimate is counted).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeLocal = (options: { readonly dimensions?: number } = {}): EmbedderService => {
  const dimensions = options.dimensions ?? 256
  return {
    model: `local-hash-${dimensions}`,
    label: `local deterministic embedder (hashed words, ${dimensions} dimensions; offline demo, not semantic)`,
    local: true,
    embed: (texts) =>
      Effect.sync(() => ({ vectors: texts.map((t) => embedText(t, dimensions)), tokens: estimate(texts) }))
  }
}

/**
 * @since 0.1.0
 * @category layers
 */
export const layerLocal = (options: { readonly dimensions?: number } = {}): Layer.Layer<Embedder> =>
  Layer.sync(Embedder, () => makeLocal(options))
