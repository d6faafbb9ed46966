/**
 * The application layer of the bundled server and CLI (the services themselves:
 * `AgentServices` of `effect-react-engine/server`): the LLM (OpenAI-compatible
 * models from `LLM_*` when `LLM_MODEL` or `LLM_BASE_URL` is set, else the built-in offline demo
 * model, clearly labelled), the tools (built-ins + MCP servers from
 * `MCP_CONFIG`), hooks (none by default), the context guard, the interrupt
 * queues, the ReAct agent and the DAG agent (`DAG_*`).
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as DemoLlm from "../DemoLlm.js"
import * as Embedder from "../Embedder.js"
import type { Llm } from "../Llm.js"
import * as ModelRegistry from "../ModelRegistry.js"
import { layerMemory, modelsOf } from "../server/AgentServices.js"
import * as Database from "../server/Database.js"
import * as SqlMemory from "../server/SqlMemory.js"

export { AppInfo } from "../server/AppInfo.js"

export {
  /** @since 0.1.0 */
  layer,
  /** @since 0.1.0 */
  layerMemory,
  /** @since 0.1.0 */
  modelsOf,
  /** @since 0.1.0 */
  ToolsLayer
} from "../server/AgentServices.js"

/**
 * True when no LLM is configured (neither `LLM_MODEL` nor `LLM_BASE_URL` set):
 * the app then runs on the offline demo model.
 *
 * @since 0.1.0
 * @category utils
 */
export const isDemo: Effect.Effect<boolean, ConfigError.ConfigError> = Effect.map(
  ModelRegistry.isLlmConfigured,
  (configured) => !configured
)

/**
 * The LLM from the environment, and the registry of models: `ModelRegistry.layerConfig()`
 * when `LLM_MODEL` or `LLM_BASE_URL` is set (a missing model name is discovered
 * from the endpoint), else the offline demo model (with a warning in the log
 * saying so) as the registry's only model.
 *
 * @since 0.1.0
 * @category layers
 */
export const LlmLayer: Layer.Layer<ModelRegistry.ModelRegistry | Llm, ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.gen(function*() {
    if (!(yield* isDemo)) return ModelRegistry.layerConfig()
    yield* Effect.logWarning(
      `No LLM configured (LLM_MODEL / LLM_BASE_URL not set): running on the built-in OFFLINE DEMO model "${DemoLlm.MODEL_NAME}". ` +
        "Set LLM_BASE_URL (and LLM_MODEL, LLM_API_KEY) to use a real model."
    )
    return modelsOf(DemoLlm.layer())
  })
)

/**
 * The embedder of the users' memory (docs/memory.md): `EMBEDDING_PROVIDER` —
 * `openai-compatible` (`EMBEDDING_*`, defaults from `LLM_*`; the default with
 * a configured LLM) or `local` (the deterministic offline embedder; the
 * default of the demo, labelled as such in the start-up log).
 *
 * @since 0.1.0
 * @category layers
 */
export const EmbedderLayer: Layer.Layer<Embedder.Embedder, ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.gen(function*() {
    const demo = yield* isDemo
    const provider = yield* Config.literal("openai-compatible", "local")("EMBEDDING_PROVIDER").pipe(
      Config.withDefault(demo ? "local" as const : "openai-compatible" as const)
    )
    return provider === "local" ? Embedder.layerLocal() : Embedder.layerConfig()
  })
)

/**
 * Every app service, configured from the environment.
 *
 * @since 0.1.0
 * @category layers
 */
export const AppLayer = Layer.unwrapEffect(
  Effect.map(isDemo, (demo) => layerMemory(LlmLayer, { demo }))
)

/**
 * `AppLayer` with the users' memory in the SQLite file of `DATABASE_PATH` (or
 * the PostgreSQL of `DATABASE_URL`), as the server keeps it: the CLI's `--user`.
 *
 * @since 0.1.0
 * @category layers
 */
export const AppLayerWithMemory = Layer.unwrapEffect(
  Effect.map(isDemo, (demo) =>
    layerMemory(LlmLayer, {
      demo,
      memory: SqlMemory.layerConfig().pipe(Layer.provide(EmbedderLayer), Layer.provide(Database.layerConfig))
    }))
)
