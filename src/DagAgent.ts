/**
 * DAG mode: a planner splits the goal into a graph of steps, the steps
 * run as fresh ReAct agents (in parallel where the graph allows), an analyzer
 * judges the results and re-plans when the goal is not achieved, and a streamed
 * synthesis writes the answer. Same stream contract as `ReactAgent`: `run`
 * returns a `Stream` of `RunEvent`s that never fails and ends with one `Done`.
 *
 * One code path whatever hosts it, as for `ReactAgent`: `run` and `runCollect`
 * run it in process through `RunJournal.passThrough`; a durable host calls
 * `execute` with its own journal, and the plan, each step's ReAct run, the
 * analysis, the drains and the synthesis are its stored steps (see
 * docs/durability.md). See docs/dag-mode.md.
 *
 * ```ts
 * import * as DagAgent from "./DagAgent.js"
 *
 * const program = Effect.gen(function*() {
 *   const agent = yield* DagAgent.DagAgent
 *   const result = yield* agent.runCollect({ query: "Compare the populations of Lyon and Porto" })
 *   console.log(result.answer, result.usage.by_phase)
 * })
 * // DagAgent.layerConfig needs Llm, ModelRegistry, Tools, Hooks, ContextGuard and Interrupts
 * program.pipe(Effect.provide(DagAgent.layerConfig()))
 * ```
 *
 * @since 0.1.0
 */
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as AgentConfig from "./AgentConfig.js"
import * as AgentTool from "./AgentTool.js"
import * as Approvals from "./Approvals.js"
import * as Budget from "./Budget.js"
import * as ContextGuard from "./ContextGuard.js"
import type * as Hooks from "./Hooks.js"
import { FUNCTION_NAME as ANALYSIS_FUNCTION } from "./internal/dagAgent/analyze.js"
import { config as envConfig, type DagOptions, settingsOf } from "./internal/dagAgent/options.js"
import { FUNCTION_NAME as PLAN_FUNCTION } from "./internal/dagAgent/plan.js"
import { FUNCTION_NAME as ROUTE_FUNCTION, route as routeQuery } from "./internal/dagAgent/route.js"
import { execute } from "./internal/dagAgent/run.js"
import * as Interrupts from "./Interrupts.js"
import type { LlmService } from "./Llm.js"
import { Llm } from "./Llm.js"
import * as Message from "./Message.js"
import * as ModelRegistry from "./ModelRegistry.js"
import * as Output from "./Output.js"
import * as ReactAgent from "./ReactAgent.js"
import type { RunEvent } from "./RunEvent.js"
import type { RunJournal } from "./RunJournal.js"
import * as Journal from "./RunJournal.js"
import type { Tool } from "./Tool.js"
import * as Toolkit from "./Toolkit.js"
import * as Usage from "./Usage.js"

/**
 * The function names of DAG mode's structured calls (planner, analysis, router), as the
 * model sees them in native mode: a model that plans (the offline demo model) answers
 * them by name.
 *
 * @since 0.1.0
 * @category constants
 */
export const functionNames = {
  plan: PLAN_FUNCTION,
  analysis: ANALYSIS_FUNCTION,
  route: ROUTE_FUNCTION
} as const

/** DAG mode's knobs: `DagOptions`, their `defaults`, and `config` (the `DAG_*` variables). */
export { config, type DagOptions, defaults } from "./internal/dagAgent/options.js"

/**
 * How a run is executed: the ReAct loop, DAG mode, or `auto` (a router on the
 * fast model picks one per query).
 *
 * @since 0.1.0
 * @category models
 */
export const Mode = Schema.Literal("react", "dag", "auto")
/**
 * @since 0.1.0
 * @category models
 */
export type Mode = typeof Mode.Type

/**
 * The default mode of the server and the CLI: `REACT_DEFAULT_MODE`, default `react`.
 *
 * @since 0.1.0
 * @category config
 */
export const modeConfig: Config.Config<Mode> = Config.literal("react", "dag", "auto")("REACT_DEFAULT_MODE").pipe(
  Config.withDefault<Mode>("react")
)

/**
 * The journal a DAG run goes through: a `RunJournal`, and — from a durable
 * host — `emitOnce`, which stores an event under a key of the caller's choosing
 * (skipped when that key is stored). A DAG run's steps run concurrently, so the
 * order in which their events reach the journal differs from one execution to
 * the next; with `emitOnce` each step's events are keyed by the step and their
 * position in it, so that a replay skips exactly the events already stored.
 * Without it (in process) events are simply emitted.
 *
 * @since 0.1.0
 * @category models
 */
export interface DagJournal extends RunJournal {
  readonly emitOnce?: (key: string, event: RunEvent) => Effect.Effect<void>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface DagAgentService {
  /** Runs in DAG mode. The stream never fails: failures become `RunFailed` then `Done`. */
  readonly run: (input: ReactAgent.RunInput) => Stream.Stream<RunEvent>
  /** Runs and collects the result (typed by `input.output` when given). */
  readonly runCollect: ReactAgent.RunCollect
  /**
   * Runs in DAG mode through a journal (a durable host's): every stored step
   * and every event goes through it. Never fails; the last event is `Done`.
   */
  readonly execute: (input: ReactAgent.RunInput, journal: DagJournal) => Effect.Effect<void>
  /** The `auto` router: ReAct or DAG mode for this query (ReAct on any failure), and the call's usage. */
  readonly route: (
    query: Message.Content
  ) => Effect.Effect<{ readonly mode: "react" | "dag"; readonly usage: Usage.Usage }>
  /**
   * Answers a tool call of a step waiting for approval (the run's conversation
   * id, not the step's), as `ReactAgent.approve` does.
   */
  readonly approve: (input: Approvals.DecideInput) => Effect.Effect<Approvals.Decided, Approvals.DecideError>
  /** Where the steps' calls wait for approval (shared by every step agent). */
  readonly approvals: Approvals.ApprovalsService
}

/**
 * Options of `make` / `layer`: DAG mode's knobs, and where the steps' tool calls
 * wait for approval (default: a fresh in-memory `Approvals` service of this
 * agent; pass the `ReactAgent`'s to answer both through one service).
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends Partial<DagOptions> {
  readonly approvals?: Approvals.ApprovalsService
}

/**
 * @since 0.1.0
 * @category Context
 */
export class DagAgent extends Context.Tag("effect-react-engine/DagAgent")<DagAgent, DagAgentService>() {}

/**
 * Builds the DAG agent from its services: `Llm` plans, analyzes, writes the
 * answer and runs the ReAct fallback; `ModelRegistry` resolves each step's
 * model hint (and its `fast` model routes `auto` mode); the step agents use the
 * same `Tools`, `Hooks`, `ContextGuard` and `Interrupts`. Options: explicit
 * values, else the defaults (see `layerConfig` for the environment).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options: Options = {}
): Effect.Effect<
  DagAgentService,
  ConfigError.ConfigError,
  Llm | ModelRegistry.ModelRegistry | Toolkit.Toolkit | Hooks.Hooks | ContextGuard.ContextGuard | Interrupts.Interrupts
> =>
  Effect.gen(function*() {
    const settings = yield* settingsOf(options)
    const llm = yield* Llm
    const registry = yield* ModelRegistry.ModelRegistry
    const toolkit = yield* Toolkit.Toolkit
    const guard = yield* ContextGuard.ContextGuard
    const interrupts = yield* Interrupts.Interrupts
    const context = yield* Effect.context<
      ModelRegistry.ModelRegistry | Toolkit.Toolkit | Hooks.Hooks | ContextGuard.ContextGuard | Interrupts.Interrupts
    >()
    const approvals = options.approvals ?? (yield* Approvals.make)
    // The one construction of a step agent: a fresh ReactAgent on the given model
    // over the same toolkit, hooks, guard, interrupts and approvals.
    const build = (model: LlmService) =>
      ReactAgent.make({ ...options.agent, approvals }).pipe(Effect.provideService(Llm, model), Effect.provide(context))
    // a bad agent option fails here, once, rather than in every step
    yield* build(llm)
    const services = {
      settings,
      llm,
      registry,
      toolkit,
      guard,
      interrupts,
      agentFor: (model: LlmService) => Effect.orDie(build(model)),
      outputRetries: options.agent?.outputRetries ?? AgentConfig.defaults.outputRetries
    }
    // the run's budget account: planning, analysis, synthesis and every step draw from one ledger
    const executeWith = (input: ReactAgent.RunInput, journal: DagJournal): Effect.Effect<void> =>
      Effect.flatMap(FiberRef.get(Budget.currentAccount), (parent) =>
        Effect.locally(
          execute(services, input, journal),
          Budget.currentAccount,
          Budget.makeAccount(options.agent?.budget, parent)
        ))
    // The run's fiber lives in the stream's scope: it starts when the stream is
    // pulled, is interrupted when the consumer stops, and ends the stream (or
    // fails it with a defect) when it exits.
    const run = (input: ReactAgent.RunInput): Stream.Stream<RunEvent> =>
      Stream.unwrapScoped(Effect.gen(function*() {
        // a producer as a Stream, the way @effect/ai does it: a Mailbox of events, not of Exit values
        const mailbox = yield* Mailbox.make<RunEvent>()
        const journal = Journal.passThrough((event) => Effect.asVoid(mailbox.offer(event)), { runId: input.runId })
        yield* executeWith(input, journal).pipe(Mailbox.into(mailbox), Effect.forkScoped)
        return Mailbox.toStream(mailbox)
      }))
    return {
      run,
      execute: executeWith,
      runCollect: ((input: ReactAgent.RunInput) => {
        const schema = input.output
        const collected = ReactAgent.collect(run(input))
        return schema === undefined ? collected : Effect.flatMap(collected, (result) => Output.typed(schema, result))
      }) as ReactAgent.RunCollect,
      route: (query) => routeQuery(registry.fast, Message.textOf(query)),
      approve: approvals.decide,
      approvals
    }
  })

/**
 * The DAG agent with explicit options (unset ones take the defaults).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options?: Options
): Layer.Layer<
  DagAgent,
  ConfigError.ConfigError,
  Llm | ModelRegistry.ModelRegistry | Toolkit.Toolkit | Hooks.Hooks | ContextGuard.ContextGuard | Interrupts.Interrupts
> => Layer.effect(DagAgent, make(options))

/**
 * The DAG agent configured from the environment (`DAG_*`, see `config`; its step
 * agents from `REACT_*`, as `ReactAgent.layerConfig` reads them, with the files
 * those name read through the `FileSystem`). `config` (each option a `Config`,
 * or one `Config` of them all) sets options that win over the variables.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<Partial<DagOptions>> = {},
  options: { readonly approvals?: Approvals.ApprovalsService } = {}
): Layer.Layer<
  DagAgent,
  ConfigError.ConfigError,
  | Llm
  | ModelRegistry.ModelRegistry
  | Toolkit.Toolkit
  | Hooks.Hooks
  | ContextGuard.ContextGuard
  | Interrupts.Interrupts
  | FileSystem.FileSystem
> =>
  Layer.effect(
    DagAgent,
    Effect.gen(function*() {
      const fromEnv = yield* envConfig
      // (`Config.unwrap` of an empty record fails: no option given is the empty record)
      const explicit: Partial<DagOptions> = Config.isConfig(config) || Object.keys(config).length > 0
        ? yield* Config.unwrap(config)
        : {}
      const agent = yield* AgentConfig.load(explicit.agent)
      return yield* make({
        ...fromEnv,
        ...explicit,
        agent,
        ...(options.approvals ? { approvals: options.approvals } : {})
      })
    })
  )

/**
 * Runs `input` in `mode`: the ReAct agent, the DAG agent, or (`auto`) the one
 * the router picks, whose usage is added to `done.usage` (phase `routing`).
 * The mode dispatch of the server and the CLI.
 *
 * @since 0.1.0
 * @category utils
 */
export const runWithMode = (
  agents: { readonly react: ReactAgent.ReactAgentService; readonly dag: DagAgentService },
  mode: Mode,
  input: ReactAgent.RunInput
): Stream.Stream<RunEvent> => {
  if (mode === "react") return agents.react.run(input)
  if (mode === "dag") return agents.dag.run(input)
  return Stream.unwrap(Effect.map(agents.dag.route(input.query), ({ mode, usage }) => {
    const stream = mode === "dag" ? agents.dag.run(input) : agents.react.run(input)
    return Stream.map(stream, (event): RunEvent =>
      event._tag === "Done"
        ? { ...event, usage: Usage.fromPhases(Usage.addToPhase(event.usage.by_phase, "routing", usage)) }
        : event)
  }))
}

/**
 * The DAG agent as a tool of another agent (same shape as `ReactAgent.asTool`):
 * the call runs a DAG-mode sub-run on the model's `query`; its usage rolls up
 * into the parent's `done.usage.by_phase.subagents`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const asTool: (agent: AgentTool.RunnableAgent, options: AgentTool.Options) => Tool = AgentTool.make
