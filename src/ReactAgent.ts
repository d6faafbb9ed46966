/**
 * The ReAct agent: a tool loop (native function calling or the JSON protocol)
 * followed by one streaming answer-synthesis call, emitted as a `Stream` of
 * `RunEvent`s that always ends with `Done`.
 *
 * The run is one code path whatever hosts it: `run` (a `Stream`) and
 * `runCollect` (the result) run it in process through `RunJournal.passThrough`;
 * a durable host calls `execute` with its own journal.
 *
 * ```ts
 * const program = Effect.gen(function*() {
 *   const agent = yield* ReactAgent
 *   yield* agent.run({ query: "What is 2+2?" }).pipe(
 *     Stream.runForEach((event) => Console.log(event._tag))
 *   )
 * })
 * ```
 *
 * @since 0.1.0
 */
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { AgentOptions } from "./AgentConfig.js"
import * as AgentConfig from "./AgentConfig.js"
import * as AgentTool from "./AgentTool.js"
import * as Approvals from "./Approvals.js"
import * as Budget from "./Budget.js"
import * as ContextGuard from "./ContextGuard.js"
import { extractJson } from "./ExtractJson.js"
import * as Hooks from "./Hooks.js"
import type { AgentServices } from "./internal/reactAgent/run.js"
import { execute as executeRun } from "./internal/reactAgent/run.js"
import * as Interrupts from "./Interrupts.js"
import type { LlmService } from "./Llm.js"
import { Llm } from "./Llm.js"
import * as Memory from "./Memory.js"
import type { ChatMessage, Content } from "./Message.js"
import * as ModelRegistry from "./ModelRegistry.js"
import * as Output from "./Output.js"
import { isOwn, type RunEvent, type RunResult } from "./RunEvent.js"
import type { RunJournal } from "./RunJournal.js"
import * as Journal from "./RunJournal.js"
import type { Tool } from "./Tool.js"
import { Toolkit } from "./Toolkit.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface RunInput {
  /** The user's query (text or multimodal content). */
  readonly query: Content
  /** Conversation id (interrupt queue key); a fresh id when absent. */
  readonly conversationId?: string
  /** Earlier turns of the conversation (user/assistant messages), oldest first. */
  readonly history?: ReadonlyArray<ChatMessage>
  /** Overrides the agent's max iterations for this run. */
  readonly maxIterations?: number
  /**
   * Cancellation: when this effect completes, the run stops at once (LLM request
   * aborted, tools interrupted, every tool call already sent answered with
   * `Error: interrupted` in `Done.messages`) and ends with `Done` (answer `""`,
   * no `RunFailed`). E.g. `Deferred.await(cancelled)`.
   */
  readonly cancel?: Effect.Effect<void>
  /**
   * The conversation whose user answers this run's tool approvals (default
   * `conversationId`). A DAG step, which runs under a conversation id of its
   * own, passes its run's.
   */
  readonly approvalConversationId?: string
  /** The run's id (`Done.run_id`, the base of its idempotency keys); a fresh `run_…` id when absent. */
  readonly runId?: string
  /** The agent's name in the run's `invoke_agent` span (a sub-agent's: its tool name); default `ReactAgent`. */
  readonly name?: string
  /**
   * The answer's schema: the run answers with a value of it (`Done.output`, the
   * answer text its JSON), or fails with `RunFailed.code` `output_invalid`. See `Output`.
   */
  readonly output?: Schema.Schema<any, any>
  /**
   * The user the run is for (`Memory.UserId`): with a `Memory` in the agent's
   * context the run reads and writes that user's memory (docs/memory.md). Absent:
   * nothing of any memory is read or written.
   */
  readonly userId?: string
}

/**
 * `runCollect`: with an output schema, the decoded value (`output`) or why
 * there is none; without, the run's result.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunCollect {
  <A, I>(input: RunInput & { readonly output: Schema.Schema<A, I> }): Effect.Effect<
    Output.TypedRunResult<A>,
    Output.OutputInvalid | Output.OutputUnavailable
  >
  (input: RunInput): Effect.Effect<RunResult>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ReactAgentService {
  /**
   * Runs the agent; its events as a stream that never fails and ends with
   * `Done` (after `RunFailed` when the run failed). Stopping the stream early
   * interrupts the run.
   */
  readonly run: (input: RunInput) => Stream.Stream<RunEvent>
  /** Runs the agent and collects its result (typed by `input.output` when given). */
  readonly runCollect: RunCollect
  /**
   * Runs the agent through a journal (a durable host's): every activity and
   * event goes through it. Never fails; the last event is `Done`.
   */
  readonly execute: (input: RunInput, journal: RunJournal) => Effect.Effect<void>
  /**
   * Answers a tool call waiting for approval: the run goes on with
   * the call run (approve) or answered as denied (deny). Refused, and nothing
   * changes, for an unknown approval or one of another conversation
   * (`ApprovalNotFound`), one already decided (`AlreadyDecided`), or a
   * `toolCallId` / `argsHash` that is not the call's (`ApprovalMismatch`).
   */
  readonly approve: (input: Approvals.DecideInput) => Effect.Effect<Approvals.Decided, Approvals.DecideError>
  /** Where this agent's calls wait for approval (`pending` lists them). */
  readonly approvals: Approvals.ApprovalsService
}

/**
 * @since 0.1.0
 * @category Context
 */
export class ReactAgent extends Context.Tag("effect-react-engine/ReactAgent")<ReactAgent, ReactAgentService>() {}

/** Folds events as they are emitted; `result()` builds the run's result. */
const makeCollector = () => {
  let done: Extract<RunEvent, { _tag: "Done" }> | undefined
  let error: RunResult["error"]
  // the run's own answer text as shown: a typed answer that did not validate is reported with its value
  let shown = ""
  return {
    push: (event: RunEvent): void => {
      if (event._tag === "Done") done = event
      else if (event._tag === "RunFailed") error = failureOf(event, shown)
      else if (event._tag === "AnswerDelta" && isOwn(event)) shown += event.content
      else if ((event._tag === "AnswerStart" || event._tag === "AnswerReset") && isOwn(event)) shown = ""
    },
    result: (): RunResult => {
      if (done === undefined) {
        return {
          answer: "",
          steps: [],
          iterations: 0,
          usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, llm_calls: 0, by_phase: {} },
          messages: [],
          elapsed: 0,
          pendingInjections: [],
          error: error ?? { message: "The run ended without a result", retryable: true }
        }
      }
      return {
        answer: done.answer,
        steps: done.steps ?? [],
        iterations: done.iterations,
        usage: done.usage,
        messages: done.messages ?? [],
        elapsed: done.elapsed,
        pendingInjections: done.pending_injections,
        ...(done.run_id !== undefined ? { runId: done.run_id } : {}),
        ...(error ? { error } : {}),
        ...(done.output !== undefined ? { output: done.output } : {})
      }
    }
  }
}

const failureOf = (event: Extract<RunEvent, { _tag: "RunFailed" }>, shown: string): RunResult["error"] => {
  if (event.code === undefined) return { message: event.message, retryable: event.retryable }
  const value = event.code === Output.INVALID_CODE ? Option.getOrUndefined(extractJson(shown)) : undefined
  return {
    message: event.message,
    retryable: event.retryable,
    code: event.code,
    ...(value !== undefined ? { value } : {})
  }
}

/**
 * Collects a run's events into its result (the `Done` payload, plus the
 * `RunFailed` message when the run failed).
 *
 * @since 0.1.0
 * @category utils
 */
export const collect = (events: Stream.Stream<RunEvent>): Effect.Effect<RunResult> =>
  Effect.suspend(() => {
    const collector = makeCollector()
    return Effect.map(Stream.runForEach(events, (event) => Effect.sync(() => collector.push(event))), collector.result)
  })

/**
 * The agent over the services it was built with.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromServices = (services: AgentServices): ReactAgentService => {
  const execute = (input: RunInput, journal: RunJournal): Effect.Effect<void> => executeRun(services, input, journal)
  return {
    execute,
    approve: services.approvals.decide,
    approvals: services.approvals,
    run: (input) =>
      Stream.unwrapScoped(Effect.gen(function*() {
        // a producer as a Stream, the way @effect/ai does it: a Mailbox of events, not of Exit values
        const mailbox = yield* Mailbox.make<RunEvent>()
        const journal = Journal.passThrough((event) => Effect.asVoid(mailbox.offer(event)), { runId: input.runId })
        // the run's fiber lives in the stream's scope: the stream's end (or its interruption) ends it
        yield* execute(input, journal).pipe(Mailbox.into(mailbox), Effect.forkScoped)
        return Mailbox.toStream(mailbox)
      })),
    runCollect: ((input: RunInput) => {
      const collected = Effect.suspend(() => {
        const collector = makeCollector()
        const journal = Journal.passThrough((event) => Effect.sync(() => collector.push(event)), { runId: input.runId })
        return Effect.map(execute(input, journal), collector.result)
      })
      const schema = input.output
      return schema === undefined ? collected : Effect.flatMap(collected, (result) => Output.typed(schema, result))
    }) as RunCollect
  }
}

/**
 * Options of `make` / `layer`: the loop's settings (see `AgentConfig`), the
 * model that selects tools when the toolkit is large (default: the agent's
 * `Llm`), and where calls wait for approval (default: a fresh in-memory
 * `Approvals` service of this agent; pass one to share it, e.g. with a
 * `DagAgent`, or a durable one).
 *
 * @since 0.1.0
 * @category models
 */
export interface Options extends Partial<AgentOptions> {
  readonly selectionLlm?: LlmService
  readonly approvals?: Approvals.ApprovalsService
}

const build = (
  options: AgentOptions,
  selectionLlm: LlmService | undefined,
  approvals: Approvals.ApprovalsService | undefined
) =>
  Effect.gen(function*() {
    const llm = yield* Llm
    // a money budget needs a price for every model the run calls: a start-up error naming the model
    if (options.budget !== undefined) yield* Budget.check(options.budget, [llm.model, (selectionLlm ?? llm).model])
    return fromServices({
      options,
      llm,
      selectionLlm: selectionLlm ?? llm,
      toolkit: yield* Toolkit,
      hooks: yield* Hooks.Hooks,
      guard: yield* ContextGuard.ContextGuard,
      interrupts: yield* Interrupts.Interrupts,
      approvals: approvals ?? (yield* Approvals.make),
      memory: Option.getOrUndefined(yield* Effect.serviceOption(Memory.Memory))
    })
  })

const split = ({ approvals, selectionLlm, ...settings }: Options = {}) => ({ approvals, selectionLlm, settings })

/**
 * Builds the agent from its services: `Llm` runs the loop and writes the
 * answer. Settings are the given options, else the defaults (the environment is
 * not read: see `layerConfig`); an invalid option is a `ConfigError` naming it.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (
  options?: Options
): Effect.Effect<
  ReactAgentService,
  ConfigError.ConfigError,
  Llm | Toolkit | Hooks.Hooks | ContextGuard.ContextGuard | Interrupts.Interrupts
> => {
  const { approvals, selectionLlm, settings } = split(options)
  return Effect.flatMap(AgentConfig.resolve(settings), (resolved) => build(resolved, selectionLlm, approvals))
}

/**
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options?: Options
): Layer.Layer<
  ReactAgent,
  ConfigError.ConfigError,
  Llm | Toolkit | Hooks.Hooks | ContextGuard.ContextGuard | Interrupts.Interrupts
> => Layer.effect(ReactAgent, make(options))

/**
 * The agent configured from the environment (`REACT_*` variables, see
 * docs/configuration.md; `AgentConfig.config`), selecting tools with the
 * registry's `fast` model. `config` (as Effect's packages take it: each option
 * a `Config`, or one `Config` of them all) sets options that win over the
 * variables, e.g. `{ maxIterations: Config.integer("MY_MAX_STEPS") }` or
 * `Config.succeed({ maxIterations: 5 })`. The files the variables name are
 * read through the `FileSystem`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig = (
  config: Config.Config.Wrap<Partial<AgentOptions>> = {},
  options: { readonly approvals?: Approvals.ApprovalsService } = {}
): Layer.Layer<
  ReactAgent,
  ConfigError.ConfigError,
  | Llm
  | Toolkit
  | Hooks.Hooks
  | ContextGuard.ContextGuard
  | Interrupts.Interrupts
  | ModelRegistry.ModelRegistry
  | FileSystem.FileSystem
> =>
  Layer.effect(
    ReactAgent,
    Effect.gen(function*() {
      // (`Config.unwrap` of an empty record fails: no option given is the empty record)
      const explicit = Config.isConfig(config) || Object.keys(config).length > 0 ? yield* Config.unwrap(config) : {}
      const registry = yield* ModelRegistry.ModelRegistry
      return yield* build(yield* AgentConfig.load(explicit), registry.fast, options.approvals)
    })
  )

/**
 * The agent as a tool of another agent: the call runs this agent on a fresh
 * conversation and answers with its answer; its usage rolls up into the
 * parent's `done.usage.by_phase.subagents`. See `AgentTool`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const asTool: (agent: AgentTool.RunnableAgent, options: AgentTool.Options) => Tool = AgentTool.make
