/**
 * The model providers the server (and any app reading the environment) can use,
 * chosen with `LLM_PROVIDER` (main model) and `FAST_LLM_PROVIDER` (fast model):
 *
 * - `openai-compatible` (default): `OpenAiLlm`, the `openai` SDK's chat
 *   completions (OpenAI, DeepSeek, vLLM, Ollama, …).
 * - `anthropic`: `EffectAiLlm` over `@effect/ai-anthropic` (key
 *   `ANTHROPIC_API_KEY` or `LLM_API_KEY`; `LLM_BASE_URL` / `ANTHROPIC_BASE_URL`
 *   is the API origin, without `/v1`).
 * - `openai`: `EffectAiLlm` over `@effect/ai-openai`, the Responses API (key
 *   `OPENAI_API_KEY` or `LLM_API_KEY`; `LLM_BASE_URL` / `OPENAI_BASE_URL`
 *   includes `/v1`).
 *
 * The `@effect/ai` providers are optional peer dependencies, imported only when
 * configured: a missing one is a start-up `ConfigError` naming the package to
 * install. `openrouter`, `bedrock` and `google` are refused with the reason (their
 * published `@effect/ai-*` versions need an older `@effect/ai` than ours).
 * `LLM_PROMPT_CACHE=auto|off` (default `auto`): Anthropic cache breakpoints,
 * OpenAI `prompt_cache_key`.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as Attachments from "./Attachments.js"
import type { ProviderConnection } from "./internal/llmProviders/connection.js"
import type { LlmService } from "./Llm.js"
import * as OpenAiLlm from "./OpenAiLlm.js"

/**
 * @since 0.1.0
 * @category models
 */
export type Provider = "openai-compatible" | "anthropic" | "openai"

/**
 * Providers `@effect/ai` has but this engine refuses, and why.
 *
 * @since 0.1.0
 * @category constants
 */
export const unsupported: Readonly<Record<string, string>> = {
  openrouter: "@effect/ai-openrouter (latest 0.10.1) requires @effect/ai ^0.35, and this engine is on @effect/ai 0.37",
  bedrock: "@effect/ai-amazon-bedrock (latest 0.15.0) requires @effect/ai ^0.35, and this engine is on @effect/ai 0.37",
  google: "@effect/ai-google (latest 0.15.0) requires @effect/ai ^0.36, and this engine is on @effect/ai 0.37"
}

const PROVIDERS: ReadonlyArray<Provider> = ["openai-compatible", "anthropic", "openai"]

/**
 * A provider variable (`LLM_PROVIDER`, `FAST_LLM_PROVIDER`); unset or empty is `fallback`.
 *
 * @since 0.1.0
 * @category config
 */
export const providerConfig = (name: string, fallback: Provider): Config.Config<Provider> =>
  Config.string(name).pipe(
    Config.withDefault(""),
    Config.mapOrFail((raw): Either.Either<Provider, ConfigError.ConfigError> => {
      const value = raw.trim().toLowerCase()
      if (value === "") return Either.right(fallback)
      if ((PROVIDERS as ReadonlyArray<string>).includes(value)) return Either.right(value as Provider)
      const why = unsupported[value]
      return Either.left(ConfigError.InvalidData(
        [name],
        why !== undefined
          ? `${name}=${value} is not supported: ${why}. Use one of ${PROVIDERS.join(", ")}`
          : `Expected one of ${PROVIDERS.join(", ")}, got "${raw}"`
      ))
    })
  )

/**
 * `LLM_PROMPT_CACHE`: `auto` (default) or `off`.
 *
 * @since 0.1.0
 * @category config
 */
export const promptCacheConfig: Config.Config<"auto" | "off"> = Config.literal("auto", "off")("LLM_PROMPT_CACHE").pipe(
  Config.withDefault("auto" as const)
)

const KEY_VARIABLE: Record<Exclude<Provider, "openai-compatible">, string> = {
  anthropic: "ANTHROPIC_API_KEY",
  openai: "OPENAI_API_KEY"
}
const URL_VARIABLE: Record<Exclude<Provider, "openai-compatible">, string> = {
  anthropic: "ANTHROPIC_BASE_URL",
  openai: "OPENAI_BASE_URL"
}
const PACKAGE: Record<Exclude<Provider, "openai-compatible">, string> = {
  anthropic: "@effect/ai-anthropic",
  openai: "@effect/ai-openai"
}

const orElse = <A>(a: Option.Option<A>, b: () => Option.Option<A>) => (Option.isSome(a) ? a : b())

/** A model's URL and key as far as they are known (given, or read). */
interface Connection {
  readonly baseURL: Option.Option<string>
  readonly apiKey: Option.Option<Redacted.Redacted<string>>
}

/** A given key as a secret. */
const secret = (key: Redacted.Redacted<string> | string | undefined): Option.Option<Redacted.Redacted<string>> =>
  key === undefined ? Option.none() : Option.some(typeof key === "string" ? Redacted.make(key) : key)

/**
 * The connection of one model of an `@effect/ai` provider: model, URL and key
 * as given, else from the role's variables (`LLM_*` or `FAST_LLM_*`), else the
 * provider's own (`ANTHROPIC_*`, `OPENAI_*`), else — for the fast model of the
 * main model's provider — the main model's.
 */
const connectionConfig = (
  provider: Exclude<Provider, "openai-compatible">,
  role: "main" | "fast",
  given: ModelOptions,
  main: Option.Option<Connection>
) => {
  const prefix = role === "main" ? "LLM_" : "FAST_LLM_"
  return Config.all({
    model: OpenAiLlm.stringOption(`${prefix}MODEL`),
    baseURL: OpenAiLlm.urlOption(`${prefix}BASE_URL`),
    apiKey: OpenAiLlm.secretOption(`${prefix}API_KEY`),
    providerURL: OpenAiLlm.urlOption(URL_VARIABLE[provider]),
    providerKey: OpenAiLlm.secretOption(KEY_VARIABLE[provider])
  }).pipe(Config.mapOrFail((env) => {
    const model = orElse(Option.fromNullable(given.model), () => env.model)
    if (Option.isNone(model)) {
      return Either.left(
        ConfigError.MissingData([`${prefix}MODEL`], `Expected ${prefix}MODEL to be set (the ${provider} model name)`)
      )
    }
    const key = [secret(given.apiKey), env.providerKey, env.apiKey].reduceRight(
      (rest, first) => orElse(first, () => rest),
      Option.flatMap(main, (m) => m.apiKey)
    )
    if (Option.isNone(key)) {
      return Either.left(ConfigError.MissingData(
        [KEY_VARIABLE[provider]],
        `Expected ${KEY_VARIABLE[provider]} (or ${prefix}API_KEY) to be set for the ${provider} provider`
      ))
    }
    let url = Option.getOrUndefined(
      [Option.fromNullable(given.baseURL), env.baseURL, env.providerURL].reduceRight(
        (rest, first) => orElse(first, () => rest),
        Option.flatMap(main, (m) => m.baseURL)
      )
    )
    // Anthropic's clients take the origin: a pasted ".../v1" would make ".../v1/v1/messages"
    if (provider === "anthropic" && url !== undefined) url = url.replace(/\/v1\/?$/, "").replace(/\/$/, "")
    return Either.right({ model: model.value, baseURL: url, apiKey: key.value })
  }))
}

const explicitInt = (name: string) => Config.option(Config.integer(name))

/**
 * Builds the model of an `@effect/ai` provider, importing the provider's module
 * now; a missing package fails with a `ConfigError` naming it.
 */
const makeEffectAi = (
  provider: Exclude<Provider, "openai-compatible">,
  variable: string,
  connection: ProviderConnection
): Effect.Effect<LlmService, ConfigError.ConfigError, Scope.Scope> =>
  Effect.tryPromise({
    try: () =>
      provider === "anthropic"
        ? import("./internal/llmProviders/anthropic.js").then((m) => m.make)
        : import("./internal/llmProviders/openai.js").then((m) => m.make),
    catch: (e) => {
      const text = e instanceof Error ? e.message : String(e)
      const missing = /Cannot find (?:package|module) '((?:@[^/']+\/)?[^/']+)/.exec(text)?.[1]
      return ConfigError.InvalidData(
        [variable],
        `${variable}=${provider} needs the package ${
          missing ?? PACKAGE[provider]
        } (with @effect/ai and @effect/platform): ` +
          `npm install ${PACKAGE[provider]} @effect/ai @effect/platform (${text.split("\n")[0]})`
      )
    }
  }).pipe(Effect.flatMap((make) => make(connection)))

/**
 * One model's options for `loadModels` (and `ModelRegistry.layerConfig`): its
 * provider and `OpenAiLlm`'s options, each winning over its variable. The
 * `@effect/ai` providers take the options they share with `OpenAiLlm`
 * (connection, sizes, retries, timeouts, temperature, abilities but JSON mode,
 * `promptCacheKey`: true is `LLM_PROMPT_CACHE=auto`, false `off`).
 *
 * @since 0.1.0
 * @category models
 */
export interface ModelOptions extends OpenAiLlm.ConfigOptions {
  readonly provider?: Provider | undefined
}

/**
 * The options of both models. The fast model shares the main model's settings
 * (not its model, URL or key, which it falls back to as its variables do), as
 * `FAST_LLM_*` shares the other `LLM_*` variables; its own win.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  readonly main?: ModelOptions | undefined
  readonly fast?: ModelOptions | undefined
}

/** The options that are set (an explicit `undefined` does not hide the environment's value). */
const definedOf = <A extends object>(options: A): Partial<A> =>
  Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<A>

/** The settings of a model's options: all but its provider and connection. */
const settingsOf = ({ apiKey: _k, baseURL: _u, model: _m, provider: _p, ...settings }: ModelOptions) =>
  definedOf(settings)

/**
 * The main and fast models: `options` over the environment, for any provider;
 * `fast` is none without a fast model (given or `FAST_LLM_MODEL`). Built in the
 * caller's scope (the providers' HTTP clients live as long as it).
 *
 * @since 0.1.0
 * @category constructors
 */
export const loadModels = (options: Options = {}): Effect.Effect<
  { readonly main: LlmService; readonly fast: Option.Option<LlmService> },
  ConfigError.ConfigError,
  Scope.Scope
> =>
  Effect.gen(function*() {
    const given = { main: options.main ?? {}, fast: options.fast ?? {} }
    const mainProvider = given.main.provider ?? (yield* providerConfig("LLM_PROVIDER", "openai-compatible"))
    const fastProvider = given.fast.provider ?? (yield* providerConfig("FAST_LLM_PROVIDER", mainProvider))
    const promptCache = yield* promptCacheConfig
    const env = yield* OpenAiLlm.settingsConfig
    const explicit = yield* Config.all({
      contextSize: explicitInt("LLM_CONTEXT_SIZE"),
      maxOutput: explicitInt("LLM_MAX_OUTPUT_TOKENS")
    })
    const hasFast = given.fast.model !== undefined || Option.isSome(yield* OpenAiLlm.stringOption("FAST_LLM_MODEL"))
    // attachments: the store in context (the models read the bytes when they build a request), and
    // what each model takes (`FAST_LLM_INPUT_MODALITIES` for the fast one, else `LLM_INPUT_MODALITIES`)
    const store = Option.getOrUndefined(yield* Effect.serviceOption(Attachments.Attachments))
    const fastModalities = Option.getOrUndefined(yield* OpenAiLlm.modalitiesOption("FAST_LLM_INPUT_MODALITIES"))
    const attached = <A extends { readonly inputModalities?: ReadonlyArray<Attachments.Modality> | undefined }>(
      role: "main" | "fast",
      o: A
    ) => ({
      ...o,
      attachments: store,
      inputModalities: role === "fast"
        ? given.fast.inputModalities ?? fastModalities ?? o.inputModalities
        : o.inputModalities
    })
    // a role's given settings: the main model's, then its own (abilities one at a time)
    const givenSettings = (role: "main" | "fast") => {
      const main = settingsOf(given.main)
      const own = role === "main" ? {} : settingsOf(given.fast)
      return { ...main, ...own, abilities: { ...main.abilities, ...own.abilities } }
    }
    const openAiCompatible = (role: "main" | "fast") =>
      Effect.map(
        role === "main"
          ? OpenAiLlm.loadConfig(Config.succeed(definedOf({ ...given.main, provider: undefined })))
          : fastOpenAiOptions(mainProvider, given, givenSettings("fast")),
        (options) => {
          // auto: `prompt_cache_key` only where it is known to be accepted (OpenAI itself)
          const isOpenAi = options.baseURL === undefined || /^https:\/\/api\.openai\.com(\/|$)/.test(options.baseURL)
          return OpenAiLlm.makeUnsafe(
            attached(role, {
              ...options,
              promptCacheKey: options.promptCacheKey ?? (promptCache === "auto" && isOpenAi)
            })
          )
        }
      )
    const bridged = (
      provider: Exclude<Provider, "openai-compatible">,
      role: "main" | "fast",
      main: Option.Option<Connection>
    ) =>
      Effect.flatMap(connectionConfig(provider, role, given[role], main), (c) => {
        const s = givenSettings(role)
        return makeEffectAi(
          provider,
          role === "main" ? "LLM_PROVIDER" : "FAST_LLM_PROVIDER",
          attached(role, {
            ...c,
            inputModalities: s.inputModalities ?? env.inputModalities,
            temperature: s.temperature ?? env.temperature,
            // no generic JSON mode through @effect/ai: the structured call uses its prompt-only levels
            // (nor `response_format: json_schema`: its native structured output is a forced tool, the structured call's level 1)
            abilities: { ...env.abilities, ...definedOf(s.abilities), jsonMode: false, jsonSchema: false },
            contextSize: s.contextSize ?? Option.getOrUndefined(explicit.contextSize),
            maxOutputTokens: s.maxOutputTokens ?? Option.getOrUndefined(explicit.maxOutput),
            maxRetries: s.maxRetries ?? env.maxRetries,
            retryBaseDelay: s.retryBaseDelay ?? env.retryBaseDelay,
            timeout: s.timeout ?? env.timeout,
            totalTimeout: s.totalTimeout ?? env.totalTimeout,
            promptCache: s.promptCacheKey === undefined ? promptCache : s.promptCacheKey ? "auto" : "off"
          })
        )
      })
    const mainConnection = mainProvider === "openai-compatible"
      ? Option.none()
      : Option.some(yield* mainUrlAndKey(mainProvider, given.main))
    const main = mainProvider === "openai-compatible"
      ? yield* openAiCompatible("main")
      : yield* bridged(mainProvider, "main", Option.none())
    if (!hasFast) return { main, fast: Option.none() }
    const fast = fastProvider === "openai-compatible"
      ? yield* openAiCompatible("fast")
      : yield* bridged(fastProvider, "fast", fastProvider === mainProvider ? mainConnection : Option.none())
    return { main, fast: Option.some(fast) }
  })

// the main model's URL and key (given, else read), which a fast model of the same provider falls back to
const mainUrlAndKey = (provider: Exclude<Provider, "openai-compatible">, given: ModelOptions) =>
  Config.all({
    baseURL: Config.all([OpenAiLlm.urlOption("LLM_BASE_URL"), OpenAiLlm.urlOption(URL_VARIABLE[provider])]).pipe(
      Config.map(([a, b]) => orElse(Option.fromNullable(given.baseURL), () => orElse(a, () => b)))
    ),
    apiKey: Config.all([OpenAiLlm.secretOption(KEY_VARIABLE[provider]), OpenAiLlm.secretOption("LLM_API_KEY")]).pipe(
      Config.map(([a, b]) => orElse(secret(given.apiKey), () => orElse(a, () => b)))
    )
  })

// an OpenAI-compatible fast model: its own URL and key (given, else read), else the main model's
// when that is OpenAI-compatible too; the settings read, the given ones winning
const fastOpenAiOptions = (
  mainProvider: Provider,
  given: { readonly main: ModelOptions; readonly fast: ModelOptions },
  settings: OpenAiLlm.ConfigOptions
) =>
  Effect.map(
    Config.all({
      settings: OpenAiLlm.settingsConfig,
      model: OpenAiLlm.stringOption("FAST_LLM_MODEL"),
      baseURL: OpenAiLlm.urlOption("FAST_LLM_BASE_URL"),
      apiKey: OpenAiLlm.secretOption("FAST_LLM_API_KEY"),
      mainURL: OpenAiLlm.urlOption("LLM_BASE_URL"),
      mainKey: OpenAiLlm.secretOption("LLM_API_KEY")
    }),
    (c): OpenAiLlm.OpenAiLlmOptions => {
      const sameProvider = mainProvider === "openai-compatible"
      const baseURL = orElse(Option.fromNullable(given.fast.baseURL), () => c.baseURL)
      const apiKey = orElse(Option.fromNullable(given.fast.apiKey), () => c.apiKey)
      return {
        ...c.settings,
        ...settings,
        abilities: { ...c.settings.abilities, ...definedOf(settings.abilities ?? {}) },
        model: given.fast.model ?? Option.getOrElse(c.model, () => ""),
        baseURL: Option.getOrUndefined(
          orElse(baseURL, () => (sameProvider
            ? orElse(Option.fromNullable(given.main.baseURL), () => c.mainURL)
            : Option.none()))
        ),
        apiKey: Option.getOrUndefined(
          orElse<Redacted.Redacted<string> | string>(
            apiKey,
            () => (sameProvider
              ? orElse<Redacted.Redacted<string> | string>(Option.fromNullable(given.main.apiKey), () => c.mainKey)
              : Option.none())
          )
        )
      }
    }
  )

/**
 * True when `LLM_PROVIDER` names a provider other than the default (then
 * `LLM_MODEL` is required rather than falling back to the demo model).
 *
 * @since 0.1.0
 * @category config
 */
export const isProviderSet: Config.Config<boolean> = OpenAiLlm.stringOption("LLM_PROVIDER").pipe(
  Config.map(Option.match({ onNone: () => false, onSome: (p) => p.toLowerCase() !== "openai-compatible" }))
)
