/**
 * Named models: `main` and `fast` (which falls back to `main`), resolved by hint.
 *
 * CONTRACT. `ModelRegistry.layerConfig` builds `main` from the `LLM_*` variables
 * and `fast` from `FAST_LLM_MODEL` (+ `FAST_LLM_BASE_URL`, `FAST_LLM_API_KEY`,
 * falling back to the main URL and key; every other setting is shared), and
 * provides `Llm` (= main) too; options given to it (a `Config.Wrap`) win over
 * the variables. `isLlmConfigured` tells whether any LLM is
 * configured at all (the server falls back to its offline demo model when not).
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { LlmService } from "./Llm.js"
import { Llm } from "./Llm.js"
import * as LlmProviders from "./LlmProviders.js"
import * as OpenAiLlm from "./OpenAiLlm.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface ModelRegistryService {
  readonly main: LlmService
  /** The fast model, or `main` when none is configured. */
  readonly fast: LlmService
  readonly hasFast: boolean
  /** Resolves a hint (`main`, `fast`, or another registered name) to a model; unknown hints give `main`. */
  readonly resolve: (hint?: string) => LlmService
  readonly names: ReadonlyArray<string>
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe = (
  models: { readonly main: LlmService; readonly fast?: LlmService; readonly [name: string]: LlmService | undefined }
): ModelRegistryService => {
  const table = new Map<string, LlmService>()
  for (const [name, llm] of Object.entries(models)) if (llm) table.set(name, llm)
  const fast = models.fast ?? models.main
  return {
    main: models.main,
    fast,
    hasFast: models.fast !== undefined,
    resolve: (hint) => (hint === "fast" ? fast : (hint && table.get(hint)) || models.main),
    names: [...table.keys()]
  }
}

/**
 * True when an LLM is configured (`LLM_MODEL` or `LLM_BASE_URL` set and not empty, or
 * `LLM_PROVIDER` naming a provider other than the default).
 *
 * @since 0.1.0
 * @category config
 */
export const isLlmConfigured: Config.Config<boolean> = Config.all([
  OpenAiLlm.stringOption("LLM_MODEL"),
  OpenAiLlm.stringOption("LLM_BASE_URL"),
  LlmProviders.isProviderSet
]).pipe(Config.map(([model, baseURL, provider]) => Option.isSome(model) || Option.isSome(baseURL) || provider))

const fastConfig = Config.all({
  model: OpenAiLlm.stringOption("FAST_LLM_MODEL"),
  baseURL: OpenAiLlm.urlOption("FAST_LLM_BASE_URL"),
  apiKey: OpenAiLlm.secretOption("FAST_LLM_API_KEY")
})

const withFast = (
  main: OpenAiLlm.OpenAiLlmOptions,
  fast: Config.Config.Success<typeof fastConfig>
): Option.Option<OpenAiLlm.OpenAiLlmOptions> =>
  Option.map(fast.model, (model) => ({
    ...main,
    model,
    baseURL: Option.getOrElse(fast.baseURL, () => main.baseURL),
    apiKey: Option.getOrElse(fast.apiKey, () => main.apiKey)
  }))

/**
 * The options of the configured models: `main` from `LLM_*` (`LLM_MODEL`
 * required), `fast` (when `FAST_LLM_MODEL` is set) with the main options, its own
 * model name, and its own URL / key when given.
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<{
  readonly main: OpenAiLlm.OpenAiLlmOptions
  readonly fast: Option.Option<OpenAiLlm.OpenAiLlmOptions>
}> = Config.all({ main: OpenAiLlm.config, fast: fastConfig }).pipe(
  Config.map(({ fast, main }) => ({ main, fast: withFast(main, fast) }))
)

/**
 * Like `config`, but a missing `LLM_MODEL` is discovered from `LLM_BASE_URL`
 * (see `OpenAiLlm.loadConfig`).
 *
 * @since 0.1.0
 * @category config
 */
export const loadConfig: Effect.Effect<{
  readonly main: OpenAiLlm.OpenAiLlmOptions
  readonly fast: Option.Option<OpenAiLlm.OpenAiLlmOptions>
}, ConfigError.ConfigError> = Effect.map(
  Effect.all([OpenAiLlm.loadConfig(), fastConfig]),
  ([main, fast]) => ({ main, fast: withFast(main, fast) })
)

const registryContext = (registry: ModelRegistryService) =>
  Context.make(ModelRegistry, registry).pipe(Context.add(Llm, registry.main))

/**
 * @since 0.1.0
 * @category Context
 */
export class ModelRegistry
  extends Context.Tag("effect-react-engine/ModelRegistry")<ModelRegistry, ModelRegistryService>()
{}

/**
 * A registry of these models; also provides `Llm` (= `main`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (models: Parameters<typeof makeUnsafe>[0]): Layer.Layer<ModelRegistry | Llm> =>
  Layer.succeedContext(registryContext(makeUnsafe(models)))

/**
 * A registry whose only model is the `Llm` in context (`main` and `fast`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromLlm: Layer.Layer<ModelRegistry, never, Llm> = Layer.effect(
  ModelRegistry,
  Effect.map(Llm, (main) => makeUnsafe({ main }))
)

/**
 * What `layerConfig` takes (as a `Config.Wrap`): for `main` and `fast`, a
 * provider and `OpenAiLlm`'s options, each winning over its variable; the fast
 * model shares the main model's settings (see `LlmProviders.Options`).
 *
 * @since 0.1.0
 * @category models
 */
export type ConfigOptions = LlmProviders.Options

/**
 * The models from the environment (see docs/configuration.md and
 * docs/providers.md): `LLM_PROVIDER` / `FAST_LLM_PROVIDER` choose the provider
 * (default `openai-compatible`); provides `ModelRegistry` and `Llm` (= main).
 * With the OpenAI-compatible provider `LLM_MODEL` may be left unset when
 * `LLM_BASE_URL` is set (the endpoint's first model is used); a missing model, a
 * missing provider package or a bad value fails with a `ConfigError` naming the
 * variable. `config` (as Effect's packages take it: each option a `Config`, or
 * one `Config` of them all) sets options that win over the variables, e.g.
 * `layerConfig({ main: { model: Config.string("MY_MODEL") }, fast: { model: Config.succeed("small") } })`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<ConfigOptions> = {}
): Layer.Layer<ModelRegistry | Llm, ConfigError.ConfigError> =>
  Layer.scopedContext(
    Effect.gen(function*() {
      // (`Config.unwrap` of an empty record fails: no option given is the empty record)
      const given: ConfigOptions = Config.isConfig(config) || Object.keys(config).length > 0
        ? yield* Config.unwrap(config)
        : {}
      const { fast, main } = yield* LlmProviders.loadModels(given)
      return registryContext(makeUnsafe({ main, ...(Option.isSome(fast) ? { fast: fast.value } : {}) }))
    })
  )
