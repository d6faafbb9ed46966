/**
 * Options of the OpenAI-compatible LLM and how they are read from the
 * environment (`LLM_*`).
 *
 * @internal
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type OpenAI from "openai"
import type { Modality } from "../../Attachments.js"
import type { Defaults, LlmOptions } from "../llm/service.js"

/** `LlmOptions` (default context window 128000) and the connection to the endpoint. */
export interface OpenAiLlmOptions extends LlmOptions {
  /** e.g. `https://api.deepseek.com/v1`, `http://localhost:11434/v1`; the SDK default (OpenAI) when unset. */
  readonly baseURL?: string | undefined
  /** Omitted for local servers that need no key. */
  readonly apiKey?: Redacted.Redacted<string> | string | undefined
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

export const defaults = {
  contextSize: 128_000,
  maxOutputTokens: 64_000,
  maxRetries: 3,
  retryBaseDelayMs: 500,
  timeoutMs: 120_000,
  totalTimeoutMs: 300_000
} as const satisfies Defaults

const trimmedOption = (name: string) =>
  Config.option(Config.string(name)).pipe(
    Config.map(Option.filter((s) => s.trim() !== "")),
    Config.map(Option.map((s) => s.trim()))
  )

const isHttpUrl = (s: string): boolean => {
  try {
    const url = new URL(s)
    return url.protocol === "http:" || url.protocol === "https:"
  } catch {
    return false
  }
}

/**
 * An optional http(s) URL variable (empty means unset).
 *
 * @since 0.1.0
 * @category config
 */
export const urlOption = (name: string): Config.Config<Option.Option<string>> =>
  Config.option(
    Config.string(name).pipe(
      Config.validate({
        message: "Expected an http(s) URL, e.g. http://localhost:11434/v1",
        validation: (s) => s.trim() === "" || isHttpUrl(s.trim())
      })
    )
  ).pipe(Config.map(Option.filter((s) => s.trim() !== "")), Config.map(Option.map((s) => s.trim())))

/**
 * An optional secret variable (empty means unset).
 *
 * @since 0.1.0
 * @category config
 */
export const secretOption = (name: string): Config.Config<Option.Option<Redacted.Redacted<string>>> =>
  Config.option(Config.redacted(name)).pipe(Config.map(Option.filter((r) => Redacted.value(r).trim() !== "")))

/**
 * An optional non-empty string variable (empty means unset).
 *
 * @since 0.1.0
 * @category config
 */
export const stringOption = (name: string): Config.Config<Option.Option<string>> => trimmedOption(name)

const int = (name: string, fallback: number, min: number, max = Number.MAX_SAFE_INTEGER) =>
  Config.integer(name).pipe(
    Config.validate({
      message: `Expected an integer between ${min} and ${max}`,
      validation: (n) => n >= min && n <= max
    }),
    Config.withDefault(fallback)
  )

const bool = (name: string, fallback: boolean) => Config.boolean(name).pipe(Config.withDefault(fallback))

const MODALITIES: ReadonlyArray<Modality> = ["text", "image", "file"]

/**
 * What a model takes (`LLM_INPUT_MODALITIES`, `FAST_LLM_INPUT_MODALITIES`): a
 * comma-separated list of `text`, `image`, `file` (text is always taken).
 *
 * @since 0.1.0
 * @category config
 */
export const modalitiesOption = (name: string): Config.Config<Option.Option<ReadonlyArray<Modality>>> =>
  Config.option(
    Config.string(name).pipe(
      Config.mapOrFail((raw) => {
        const entries = raw.split(",").map((e) => e.trim().toLowerCase()).filter((e) => e !== "")
        const wrong = entries.find((e) => !(MODALITIES as ReadonlyArray<string>).includes(e))
        return wrong !== undefined
          ? Either.left(
            ConfigError.InvalidData([], `Expected a comma-separated list of text, image, file; got "${wrong}"`)
          )
          : Either.right([...new Set<Modality>(["text", ...entries as Array<Modality>])] as ReadonlyArray<Modality>)
      })
    )
  )

/**
 * Everything but the connection (model, URL, key): temperature, abilities, sizes,
 * retries, timeout. Shared by the main and the fast model.
 *
 * @since 0.1.0
 * @category config
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
    jsonSchema: bool("LLM_JSON_SCHEMA_ENABLED", true),
    inputModalities: modalitiesOption("LLM_INPUT_MODALITIES"),
    streaming: bool("LLM_STREAMING_ENABLED", true),
    contextSize: int("LLM_CONTEXT_SIZE", defaults.contextSize, 1),
    maxOutputTokens: int("LLM_MAX_OUTPUT_TOKENS", defaults.maxOutputTokens, 1),
    maxRetries: int("LLM_MAX_RETRIES", defaults.maxRetries, 0, 20),
    retryBaseDelayMs: int("LLM_RETRY_BASE_DELAY_MS", defaults.retryBaseDelayMs, 0, 60_000),
    timeoutMs: int("LLM_TIMEOUT_MS", defaults.timeoutMs, 1),
    totalTimeoutMs: int("LLM_TOTAL_TIMEOUT_MS", defaults.totalTimeoutMs, 1)
  })
  .pipe(Config.map((c) => ({
    temperature: Option.getOrUndefined(c.temperature),
    abilities: {
      toolCall: c.toolCall,
      toolChoice: c.toolChoice,
      jsonMode: c.jsonMode,
      jsonSchema: c.jsonSchema,
      vision: Option.match(c.inputModalities, { onNone: () => true, onSome: (m) => m.includes("image") }),
      streaming: c.streaming
    },
    inputModalities: Option.getOrUndefined(c.inputModalities),
    contextSize: c.contextSize,
    maxOutputTokens: c.maxOutputTokens,
    maxRetries: c.maxRetries,
    retryBaseDelay: Duration.millis(c.retryBaseDelayMs),
    timeout: Duration.millis(c.timeoutMs),
    totalTimeout: Duration.millis(c.totalTimeoutMs)
  })))

/**
 * The main model's options from `LLM_*` variables (`LLM_MODEL` is required).
 *
 * @since 0.1.0
 * @category config
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

/** Like `config`, but `LLM_MODEL` may be missing (then discovered from the endpoint). */
export const configModelOptional: Config.Config<{
  readonly model: Option.Option<string>
  readonly options: Omit<OpenAiLlmOptions, "model">
}> = Config.all({
  model: stringOption("LLM_MODEL"),
  baseURL: urlOption("LLM_BASE_URL"),
  apiKey: secretOption("LLM_API_KEY"),
  settings: settingsConfig
}).pipe(Config.map(({ apiKey, baseURL, model, settings }) => ({
  model,
  options: { ...settings, baseURL: Option.getOrUndefined(baseURL), apiKey: Option.getOrUndefined(apiKey) }
})))

/** What `OpenAiLlm.layerConfig` takes: any option but a ready client, each winning over its `LLM_*` variable. */
export type ConfigOptions = Partial<Omit<OpenAiLlmOptions, "client">>

/** The options that are set (an explicit `undefined` does not hide the environment's value). */
export const definedOf = <A extends object>(options: A): Partial<A> =>
  Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<A>

/** A `Config.Wrap` as one `Config` (`Config.unwrap` of an empty record fails: no option given is the empty record). */
export const unwrap = <A extends object>(wrapped: Config.Config.Wrap<A>): Config.Config<Partial<A>> =>
  Config.isConfig(wrapped) || Object.keys(wrapped).length > 0 ? Config.unwrap(wrapped) : Config.succeed({})

/**
 * `given` over the `LLM_*` variables (an ability at a time): the model is
 * `given.model`, else `LLM_MODEL`, else none (to discover).
 */
export const mergeOptions = (
  given: ConfigOptions,
  env: Config.Config.Success<typeof configModelOptional>
): { readonly model: Option.Option<string>; readonly options: Omit<OpenAiLlmOptions, "model"> } => {
  const { model, ...rest } = definedOf(given)
  return {
    model: model !== undefined ? Option.some(model) : env.model,
    options: { ...env.options, ...rest, abilities: { ...env.options.abilities, ...definedOf(given.abilities ?? {}) } }
  }
}
