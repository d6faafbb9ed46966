/**
 * The agent a server runs, as one layer: the models, the tools (built-ins and
 * MCP servers), hooks, the context guard, interrupts, approvals, the ReAct and
 * DAG agents and `AppInfo` — every service `Server.serve` needs besides the
 * storage and `ServerConfig`. `npm start` builds its agent with it; an Effect
 * application that mounts the server (`effect-react-engine/server`) does too:
 *
 * ```ts
 * const agent = AgentServices.layer(AgentServices.modelsOf(DemoLlm.layer()), {
 *   demo: true,
 *   tools: Toolkit.layer(BuiltinTools.tools)
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as A2A from "../A2A.js"
import type { AgentOptions } from "../AgentConfig.js"
import * as Approvals from "../Approvals.js"
import * as BuiltinTools from "../BuiltinTools.js"
import * as ContextGuard from "../ContextGuard.js"
import * as DagAgent from "../DagAgent.js"
import * as Hooks from "../Hooks.js"
import * as Interrupts from "../Interrupts.js"
import { Llm } from "../Llm.js"
import * as McpTools from "../McpTools.js"
import * as Memory from "../Memory.js"
import type * as ModelRegistry from "../ModelRegistry.js"
import * as ModelRegistryModule from "../ModelRegistry.js"
import * as ReactAgent from "../ReactAgent.js"
import * as Recorder from "../Recorder.js"
import * as Replay from "../Replay.js"
import * as SubAgents from "../SubAgents.js"
import * as Toolkit from "../Toolkit.js"
import { AppInfo } from "./AppInfo.js"
import * as SqlApprovals from "./SqlApprovals.js"
import * as SqlInterrupts from "./SqlInterrupts.js"

/**
 * Built-in tools plus the tools of the `McpTools` in context.
 *
 * @since 0.1.0
 * @category layers
 */
export const ToolsLayer: Layer.Layer<Toolkit.Toolkit, never, McpTools.McpTools> = Layer.effect(
  Toolkit.Toolkit,
  Effect.flatMap(McpTools.McpTools, (mcp) =>
    Effect.try({
      try: () => Toolkit.makeUnsafe([...BuiltinTools.tools, ...mcp.tools]),
      catch: (e) => e
    }).pipe(Effect.orDie))
)

/**
 * The models of a single `Llm` (it is `main` and `fast`).
 *
 * @since 0.1.0
 * @category layers
 */
export const modelsOf = <E, R>(llm: Layer.Layer<Llm, E, R>): Layer.Layer<ModelRegistry.ModelRegistry | Llm, E, R> =>
  ModelRegistryModule.layerFromLlm.pipe(Layer.provideMerge(llm))

/**
 * The app's services over the models (`ModelRegistry` and `Llm`; see `modelsOf`
 * for a single LLM): `ReactAgent` and `DagAgent` (configured from `REACT_*` and
 * `DAG_*`; DAG steps pick their models from the registry), `ContextGuard`,
 * `Interrupts`, `Approvals` (one service for both agents: the server answers
 * every run's approvals through `ReactAgent.approve`), `Toolkit`, `Hooks`
 * (empty), the models and `AppInfo` (model name from the `Llm`, `demo` as given,
 * the MCP servers behind the tools), and `McpTools` unless `tools` is given.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = <E, R, RI = never, RA = never, EM = never, RM = never>(
  models: Layer.Layer<ModelRegistry.ModelRegistry | Llm, E, R>,
  options: {
    readonly demo: boolean
    /** Default: in-memory queues (`Interrupts.layerMemory`); the server passes its run log's (`SqlInterrupts.layer`). */
    readonly interrupts?: Layer.Layer<Interrupts.Interrupts, never, RI>
    /** Default: built-ins + the tools of `mcp`. Given: exactly these tools (all reported as built in). */
    readonly tools?: Layer.Layer<Toolkit.Toolkit>
    /** The MCP servers (ignored with `tools`). Default: the servers of `MCP_CONFIG`. */
    readonly mcp?: Layer.Layer<McpTools.McpTools, never, FileSystem.FileSystem>
    /** Default: no hooks. */
    readonly hooks?: Layer.Layer<Hooks.Hooks>
    /** Default: `ContextGuard.layerConfig()` (configured from the environment). */
    readonly guard?: Layer.Layer<ContextGuard.ContextGuard, ConfigError.ConfigError, ModelRegistry.ModelRegistry>
    /** Where tool calls wait for approval. Default: in memory (`Approvals.layerMemory`); the server passes its database's (`SqlApprovals.layer`). */
    readonly approvals?: Layer.Layer<Approvals.Approvals, never, RA>
    /** Agent options that win over the `REACT_*` environment (both agents; DAG steps too). */
    readonly agent?: Partial<AgentOptions>
    /**
     * The users' memory (docs/memory.md; the server's: `SqlMemory.layer`). Given, runs with a user id use it and
     * `update_memory` joins the tools. Default: none.
     */
    readonly memory?: Layer.Layer<Memory.Memory, EM, RM>
  }
) => {
  const tools = options.tools !== undefined
    ? Layer.merge(
      options.tools,
      Layer.effect(AppInfo, Effect.map(Llm, (service) => ({ model: service.model, demo: options.demo })))
    )
    : Layer.merge(
      ToolsLayer,
      Layer.effect(
        AppInfo,
        Effect.all([Llm, McpTools.McpTools]).pipe(Effect.map(([service, mcp]) => ({
          model: service.model,
          demo: options.demo,
          mcp: { servers: mcp.servers, failed: mcp.failed }
        })))
      )
    ).pipe(Layer.provideMerge(options.mcp ?? McpTools.layerConfig()))
  const shared = Layer.mergeAll(
    options.guard ?? ContextGuard.layerConfig(),
    options.interrupts ?? (Interrupts.layerMemory as Layer.Layer<Interrupts.Interrupts, never, RI>),
    options.hooks ?? Hooks.layerNoop,
    options.approvals ?? (Approvals.layerMemory as Layer.Layer<Approvals.Approvals, never, RA>)
  )
  // the memory's update_memory is one of the tools (recorded, replayed and forked like any); a run without a user drops it
  const memory = options.memory ?? (Layer.empty as Layer.Layer<never, EM, RM>)
  const toolsWithMemory = Layer.effect(
    Toolkit.Toolkit,
    Effect.gen(function*() {
      const toolkit = yield* Toolkit.Toolkit
      const found = yield* Effect.serviceOption(Memory.Memory)
      return Option.isNone(found) ? toolkit : Toolkit.makeUnsafe([...toolkit.tools, found.value.tool])
    })
  ).pipe(Layer.provideMerge(tools), Layer.provideMerge(memory))
  // the tools, the remote agents of REACT_A2A_AGENTS, and the sub-agents of REACT_SUBAGENTS_FILE (agents
  // over those tools and the shared services)
  const toolkit = SubAgents.layerConfig.pipe(Layer.provide(A2A.layerConfig), Layer.provide(toolsWithMemory))
  const services = Layer.merge(toolsWithMemory, toolkit).pipe(Layer.provideMerge(shared))
  const agents = Layer.unwrapEffect(Effect.map(Approvals.Approvals, (approvals) =>
    Layer.mergeAll(
      ReactAgent.layerConfig(Config.succeed(options.agent ?? {}), { approvals }),
      DagAgent.layerConfig(Config.succeed(options.agent ? { agent: options.agent } : {}), { approvals })
    )))
  return agents.pipe(
    // every model call, tool outcome and drain of a run made under a recording goes into it
    // (the server records each run for its cassette); outside one they pass straight through
    Layer.provideMerge(Recorder.layer),
    // a fork's run takes the original's steps before the fork point from storage (`Replay.withPrefix`);
    // under the recorder, so the fork's own cassette holds them too
    Layer.provideMerge(Layer.merge(Replay.layerPrefix, Replay.layerPrefixApprovals)),
    Layer.provideMerge(services),
    Layer.provideMerge(models),
    // the files the environment names (MCP_CONFIG, MODEL_PRICES_FILE, REACT_GUARDRAILS_FILE)
    Layer.provide(NodeFileSystem.layer)
  )
}

/**
 * The agent of a server: `layerMemory` with the server's database-backed interrupts
 * and approvals (`SqlInterrupts.layer`, `SqlApprovals.layer`: a run's
 * follow-ups and approvals work from any instance and survive a restart)
 * unless given. Needs the server's storage (`Server.storage`) for them.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = <E, R, EM = never, RM = never>(
  models: Layer.Layer<ModelRegistry.ModelRegistry | Llm, E, R>,
  options: Omit<Parameters<typeof layerMemory>[1], "interrupts" | "approvals" | "memory"> & {
    readonly memory?: Layer.Layer<Memory.Memory, EM, RM>
  }
) => layerMemory(models, { ...options, interrupts: SqlInterrupts.layer, approvals: SqlApprovals.layer })
