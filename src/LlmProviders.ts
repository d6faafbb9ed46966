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
import type * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
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

/**
 * The connection of one model of an `@effect/ai` provider: model, URL and key
 * from the role's variables (`LLM_*` or `FAST_LLM_*`), else the provider's own
 * (`ANTHROPIC_*`, `OPENAI_*`), else — for the fast model of the main model's
 * provider — the main model's.
 */
const connectionConfig = (
  provider: Exclude<Provider, "openai-compatible">,
  role: "main" | "fast",
  main: Option.Option<{ readonly baseURL: Option.Option<string>; readonly apiKey: Option.Option<Redacted.Redacted<string>> }>
) => {
  const prefix = role === "main" ? "LLM_" : "FAST_LLM_"
  return Config.all({
    model: OpenAiLlm.stringOption(`${prefix}MODEL`),
    baseURL: OpenAiLlm.urlOption(`${prefix}BASE_URL`),
    apiKey: OpenAiLlm.secretOption(`${prefix}API_KEY`),
    providerURL: OpenAiLlm.urlOption(URL_VARIABLE[provider]),
    providerKey: OpenAiLlm.secretOption(KEY_VARIABLE[provider])
  }).pipe(Config.mapOrFail(({ apiKey, baseURL, model, providerKey, providerURL }) => {
    if (Option.isNone(model)) {
      return Either.left(ConfigError.MissingData([`${prefix}MODEL`], `Expected ${prefix}MODEL to be set (the ${provider} model name)`))
    }
    const key = orElse(providerKey, () => orElse(apiKey, () => Option.flatMap(main, (m) => m.apiKey)))
    if (Option.isNone(key)) {
      return Either.left(ConfigError.MissingData(
        [KEY_VARIABLE[provider]],
        `Expected ${KEY_VARIABLE[provider]} (or ${prefix}API_KEY) to be set for the ${provider} provider`
      ))
    }
    let url = Option.getOrUndefined(orElse(baseURL, () => orElse(providerURL, () => Option.flatMap(main, (m) => m.baseURL))))
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
        `${variable}=${provider} needs the package ${missing ?? PACKAGE[provider]} (with @effect/ai and @effect/platform): ` +
          `npm install ${PACKAGE[provider]} @effect/ai @effect/platform (${text.split("\n")[0]})`
      )
    }
  }).pipe(Effect.flatMap((make) => make(connection)))

/**
 * The main and fast models from the environment, for any provider; `fast` is
 * none without `FAST_LLM_MODEL`. Built in the caller's scope (the providers' HTTP
 * clients live as long as it).
 *
 * @since 0.1.0
 * @category constructors
 */
export const loadModels: Effect.Effect<
  { readonly main: LlmService; readonly fast: Option.Option<LlmService> },
  ConfigError.ConfigError,
  Scope.Scope
> = Effect.gen(function*() {
  const mainProvider = yield* providerConfig("LLM_PROVIDER", "openai-compatible")
  const fastProvider = yield* providerConfig("FAST_LLM_PROVIDER", mainProvider)
  const promptCache = yield* promptCacheConfig
  const settings = yield* OpenAiLlm.settingsConfig
  const explicit = yield* Config.all({ contextSize: explicitInt("LLM_CONTEXT_SIZE"), maxOutput: explicitInt("LLM_MAX_OUTPUT_TOKENS") })
  const hasFast = Option.isSome(yield* OpenAiLlm.stringOption("FAST_LLM_MODEL"))
  const openAiCompatible = (role: "main" | "fast") =>
    Effect.map(role === "main" ? OpenAiLlm.loadConfig : fastOpenAiOptions(mainProvider), (options) => {
      // auto: `prompt_cache_key` only where it is known to be accepted (OpenAI itself)
      const isOpenAi = options.baseURL === undefined || /^https:\/\/api\.openai\.com(\/|$)/.test(options.baseURL)
      return OpenAiLlm.makeUnsafe({ ...options, promptCacheKey: promptCache === "auto" && isOpenAi })
    })
  const bridged = (provider: Exclude<Provider, "openai-compatible">, role: "main" | "fast", main: Parameters<typeof connectionConfig>[2]) =>
    Effect.flatMap(connectionConfig(provider, role, main), (c) =>
      makeEffectAi(provider, role === "main" ? "LLM_PROVIDER" : "FAST_LLM_PROVIDER", {
        ...c,
        temperature: settings.temperature,
        // no generic JSON mode through @effect/ai: the structured call uses its prompt-only levels
        abilities: { ...settings.abilities, jsonMode: false },
        contextSize: Option.getOrUndefined(explicit.contextSize),
        maxOutputTokens: Option.getOrUndefined(explicit.maxOutput),
        maxRetries: settings.maxRetries,
        retryBaseDelay: settings.retryBaseDelay,
        timeout: settings.timeout,
        totalTimeout: settings.totalTimeout,
        promptCache
      }))
  const mainConnection = mainProvider === "openai-compatible" ? Option.none() : Option.some(yield* mainUrlAndKey(mainProvider))
  const main = mainProvider === "openai-compatible" ? yield* openAiCompatible("main") : yield* bridged(mainProvider, "main", Option.none())
  if (!hasFast) return { main, fast: Option.none() }
  const fast = fastProvider === "openai-compatible"
    ? yield* openAiCompatible("fast")
    : yield* bridged(fastProvider, "fast", fastProvider === mainProvider ? mainConnection : Option.none())
  return { main, fast: Option.some(fast) }
})

// the main model's URL and key, which a fast model of the same provider falls back to
const mainUrlAndKey = (provider: Exclude<Provider, "openai-compatible">) =>
  Config.all({
    baseURL: Config.all([OpenAiLlm.urlOption("LLM_BASE_URL"), OpenAiLlm.urlOption(URL_VARIABLE[provider])]).pipe(
      Config.map(([a, b]) => orElse(a, () => b))
    ),
    apiKey: Config.all([OpenAiLlm.secretOption(KEY_VARIABLE[provider]), OpenAiLlm.secretOption("LLM_API_KEY")]).pipe(
      Config.map(([a, b]) => orElse(a, () => b))
    )
  })

// an OpenAI-compatible fast model: its own URL and key, else the main model's when that is OpenAI-compatible too
const fastOpenAiOptions = (mainProvider: Provider) =>
  Effect.map(
    Config.all({
      settings: OpenAiLlm.settingsConfig,
      model: OpenAiLlm.stringOption("FAST_LLM_MODEL"),
      baseURL: OpenAiLlm.urlOption("FAST_LLM_BASE_URL"),
      apiKey: OpenAiLlm.secretOption("FAST_LLM_API_KEY"),
      mainURL: OpenAiLlm.urlOption("LLM_BASE_URL"),
      mainKey: OpenAiLlm.secretOption("LLM_API_KEY")
    }),
    (c): OpenAiLlm.OpenAiLlmOptions => ({
      ...c.settings,
      model: Option.getOrElse(c.model, () => ""),
      baseURL: Option.getOrUndefined(orElse(c.baseURL, () => (mainProvider === "openai-compatible" ? c.mainURL : Option.none()))),
      apiKey: Option.getOrUndefined(orElse(c.apiKey, () => (mainProvider === "openai-compatible" ? c.mainKey : Option.none())))
    })
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
