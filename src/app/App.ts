/**
 * The application layer of the bundled server and CLI: the LLM (OpenAI-compatible
 * models from `LLM_*` when `LLM_MODEL` or `LLM_BASE_URL` is set, else the built-in offline demo
 * model, clearly labelled), the tools (built-ins + MCP servers from
 * `MCP_CONFIG`), hooks (none by default), the context guard, the interrupt
 * queues and the ReAct agent.
 *
 * @since 0.1.0
 */
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as BuiltinTools from "../BuiltinTools.js"
import { ContextGuard } from "../ContextGuard.js"
import * as DemoLlm from "../DemoLlm.js"
import { Hooks } from "../Hooks.js"
import { Interrupts } from "../Interrupts.js"
import { Llm } from "../Llm.js"
import { McpTools } from "../McpTools.js"
import * as ModelRegistryModule from "../ModelRegistry.js"
import { ModelRegistry } from "../ModelRegistry.js"
import { ReactAgent } from "../ReactAgent.js"
import { AppInfo } from "../server/AppInfo.js"
import * as Toolkit from "../Toolkit.js"

export { AppInfo } from "../server/AppInfo.js"

/**
 * Built-in tools plus the tools of the `McpTools` in context.
 *
 * @since 0.1.0 @category layers
 */
export const ToolsLayer: Layer.Layer<Toolkit.Tools, never, McpTools> = Layer.effect(
  Toolkit.Tools,
  Effect.flatMap(McpTools, (mcp) =>
    Effect.try({
      try: () => Toolkit.make([...BuiltinTools.tools, ...mcp.tools]),
      catch: (e) => e
    }).pipe(Effect.orDie))
)

/**
 * The app's services over an LLM layer (`Llm`, optionally with `ModelRegistry`):
 * `ReactAgent`, `ContextGuard`, `Interrupts`, `Tools`, `Hooks` (empty), the LLM
 * and `AppInfo` (model name from the `Llm`, `demo` as given, the MCP servers
 * behind the tools), and `McpTools` unless `tools` is given.
 *
 * @since 0.1.0 @category layers
 */
export const make = <E, R>(
  llm: Layer.Layer<Llm, E, R>,
  options: {
    readonly demo: boolean
    /** Default: built-ins + the tools of `mcp`. Given: exactly these tools (all reported as built in). */
    readonly tools?: Layer.Layer<Toolkit.Tools>
    /** The MCP servers (ignored with `tools`). Default: the servers of `MCP_CONFIG`. */
    readonly mcp?: Layer.Layer<McpTools>
    /** Default: no hooks. */
    readonly hooks?: Layer.Layer<Hooks>
    /** Default: `ContextGuard.layer` (configured from the environment). */
    readonly guard?: Layer.Layer<ContextGuard, ConfigError.ConfigError>
  }
) => {
  const tools = options.tools !== undefined
    ? Layer.merge(options.tools, Layer.effect(AppInfo, Effect.map(Llm, (service) => ({ model: service.model, demo: options.demo }))))
    : Layer.merge(
      ToolsLayer,
      Layer.effect(AppInfo, Effect.all([Llm, McpTools]).pipe(Effect.map(([service, mcp]) => ({
        model: service.model,
        demo: options.demo,
        mcp: { servers: mcp.servers, failed: mcp.failed }
      }))))
    ).pipe(Layer.provideMerge(options.mcp ?? McpTools.layerConfig))
  const services = Layer.mergeAll(
    options.guard ?? ContextGuard.layer,
    Interrupts.layer,
    options.hooks ?? Hooks.layerEmpty,
    tools
  )
  return ReactAgent.layer().pipe(Layer.provideMerge(services), Layer.provideMerge(llm))
}

/**
 * True when no LLM is configured (neither `LLM_MODEL` nor `LLM_BASE_URL` set):
 * the app then runs on the offline demo model.
 *
 * @since 0.1.0 @category utils
 */
export const isDemo: Effect.Effect<boolean, ConfigError.ConfigError> = Effect.map(
  ModelRegistryModule.isLlmConfigured,
  (configured) => !configured
)

/**
 * The LLM from the environment: `ModelRegistry.layerConfig` when `LLM_MODEL` or
 * `LLM_BASE_URL` is set (it also provides `ModelRegistry`; a missing model name
 * is discovered from the endpoint), else the offline demo model (with a warning
 * in the log saying so).
 *
 * @since 0.1.0 @category layers
 */
export const LlmLayer: Layer.Layer<Llm, ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.gen(function*() {
    if (!(yield* isDemo)) return ModelRegistry.layerConfig as Layer.Layer<Llm, ConfigError.ConfigError>
    yield* Effect.logWarning(
      `No LLM configured (LLM_MODEL / LLM_BASE_URL not set): running on the built-in OFFLINE DEMO model "${DemoLlm.MODEL_NAME}". ` +
        "Set LLM_BASE_URL (and LLM_MODEL, LLM_API_KEY) to use a real model."
    )
    return DemoLlm.layer
  })
)

/**
 * Every app service, configured from the environment.
 *
 * @since 0.1.0 @category layers
 */
export const AppLayer = Layer.unwrapEffect(
  Effect.map(isDemo, (demo) => make(LlmLayer, { demo }))
)
