/**
 * An agent used as a tool of another agent (SPEC §27). The tool's call runs
 * the sub-agent as a child run of the calling run, on the model's `query`, and
 * answers with the child's answer. Because it is a tool like any other, the
 * parent's hooks apply to the call, its timeout bounds it, and cancelling the
 * parent interrupts the call's fiber and with it the child run (its LLM
 * request is aborted, its tools interrupted).
 *
 * A child run has its own run id (`Done.run_id` of its own stream, `agent.run_id`
 * in the parent's) and its steps are stored under the calling run's, under the
 * call's step (`tool/2/call_x/agent/llm/1`, `…/agent/tool/1/call_y`): in a
 * durable run (the server's) a crash inside the child resumes inside the child
 * — its finished model calls and tools are not run again — because the call,
 * re-run after the restart, replays the child's stored steps. Its events reach
 * the parent's stream with `agent: {name, run_id, parent_run_id, depth,
 * tool_call_id}` between an `AgentStart` and an `AgentDone` (the child's own
 * `Done` and `RunFailed` never are: `AgentDone` stands for them).
 *
 * History hand-off (`history`): the child starts from the query alone
 * (`none`, the default), from a summary of the caller's thread (`summary`, no
 * model call), or from the caller's thread as plain messages (`thread`).
 *
 * The sub-run's usage is returned with the result (`RichResult.usage`): the
 * parent counts it in `done.usage.by_phase.subagents`, so the parent's total is
 * its own LLM calls plus every sub-run's. A durable parent stores it with the
 * call's outcome, so a replay counts it again without running the sub-agent.
 *
 * Approvals surface on the parent run: the sub-run's approval events are
 * forwarded into the parent's events, and the parent run's user answers them
 * (the sub-run's approver is the parent's conversation; give the sub-agent the
 * parent's `Approvals`).
 *
 * ```ts
 * const researcher = yield* ReactAgent.ReactAgent // built over its own Llm / Toolkit
 * const tool = ReactAgent.asTool(researcher, {
 *   name: "research",
 *   description: "Researches a question and answers it",
 *   onEvent: (event, call) => Console.log(call.toolCallId, event._tag)
 * })
 * // Toolkit.layer([tool, ...]) for the parent agent
 * ```
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { hash, randomUUID } from "node:crypto"
import type { HistoryHandoff } from "./internal/agentTool/handoff.js"
import { historyFor } from "./internal/agentTool/handoff.js"
import * as ChildJournal from "./internal/agentTool/journal.js"
import type { RunInput } from "./ReactAgent.js"
import type { AgentRef, RunEvent } from "./RunEvent.js"
import * as Journal from "./RunJournal.js"
import type { RunJournal } from "./RunJournal.js"
import * as Tool from "./Tool.js"

/**
 * What `asTool` needs of an agent: `ReactAgentService` and `DagAgentService`
 * both fit. With `execute` the child run goes through a journal nested in the
 * caller's (stored under it, resumable); an agent with `run` only runs as a
 * stream of its own, stored nowhere.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunnableAgent {
  readonly run: (input: RunInput) => Stream.Stream<RunEvent>
  readonly execute?: (input: RunInput, journal: RunJournal) => Effect.Effect<void>
}

/**
 * Where a sub-agent's event comes from: the parent's call (its `tool_call_id`,
 * absent in JSON mode or outside a run) and the sub-run's conversation.
 *
 * @since 0.1.0
 * @category models
 */
export interface SubRun {
  /** The parent's call (`Tool.currentCall`), `None` when the tool runs outside an agent. */
  readonly call: Option.Option<Tool.CallContext>
  /** The parent call's `tool_call_id` (shortcut of `call`). */
  readonly toolCallId: string | undefined
  /** The sub-run's own conversation id. */
  readonly conversationId: string
  /** The child run as the parent's stream names it (`agent`). */
  readonly agent: AgentRef
}

/**
 * @since 0.1.0
 * @category models
 */
export type { HistoryHandoff }

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The tool name (`^[a-zA-Z0-9_-]{1,64}$`); also the child's `agent.name`. */
  readonly name: string
  /** What the parent's model reads to decide when to delegate. */
  readonly description: string
  /** The description of the `query` argument. */
  readonly queryDescription?: string
  /** Max iterations of the sub-run (default: the sub-agent's own). */
  readonly maxIterations?: number
  /**
   * Bounds the whole sub-run (default 10 minutes; the parent's per-tool
   * timeout would be too short for a run of several LLM calls).
   */
  readonly timeout?: Duration.DurationInput
  /** What the child gets of the caller's thread (default `none`; see the module comment). */
  readonly history?: HistoryHandoff
  /**
   * Every event of the sub-run, as it happens (as the child emits it, `Done`
   * included, without `agent`), with the parent call it belongs to (the
   * sub-run waits for it). A failure or defect of the callback is logged and
   * ignored.
   */
  readonly onEvent?: (event: RunEvent, subRun: SubRun) => Effect.Effect<void>
}

/**
 * The default bound of a sub-run.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_TIMEOUT: Duration.DurationInput = "10 minutes"

/**
 * The child run whose tools are running (`None` in a top-level run): a
 * grandchild's `depth` and `parent_run_id` come from it.
 *
 * @since 0.1.0
 * @category context
 */
export class CurrentAgent extends Context.Reference<CurrentAgent>()("effect-react-engine/AgentTool/CurrentAgent", {
  defaultValue: (): Option.Option<AgentRef> => Option.none()
}) {}

/** A child's run id: derived from the calling run and the call's step, so that a replay finds the same one. */
const childRunId = (parentRunId: string, step: string): string =>
  `run_${hash("sha256", `${parentRunId}\u0000${step}`, "hex").slice(0, 32)}`

/** The step of a call made outside an agent's loop: a journal of its own. */
const detached = (): Journal.StepOfCall => ({
  journal: Journal.passThrough(() => Effect.void),
  name: `tool/${randomUUID().slice(0, 8)}`,
  thread: Effect.succeed([])
})

/**
 * A tool whose call runs `agent` as a child run on the model's `query` (see
 * the module comment). A child run that fails is a `ToolError` the parent's
 * model reads as the call's error; its usage is then not counted (only a
 * completed child reports usage).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (agent: RunnableAgent, options: Options): Tool.Tool =>
  Tool.make({
    name: options.name,
    description: options.description,
    parameters: Schema.Struct({
      query: Schema.String.pipe(
        Schema.filter((q) => q.trim().length > 0, { message: () => "query must not be empty" }),
        Schema.annotations({ description: options.queryDescription ?? "The question or task for the sub-agent" })
      )
    }),
    timeout: options.timeout ?? DEFAULT_TIMEOUT,
    // a call re-run after a crash replays the child's stored steps: it resumes where the child was
    idempotent: agent.execute !== undefined,
    handler: ({ query }) =>
      Effect.gen(function*() {
        const call = yield* FiberRef.get(Tool.currentCall)
        const parentCall = Option.getOrUndefined(call)
        const step = Option.getOrElse(yield* Journal.CurrentStep, detached)
        const caller = Option.getOrUndefined(yield* CurrentAgent)
        const parentRunId = step.journal.runId ?? caller?.run_id ?? "run"
        const runId = childRunId(parentRunId, step.name)
        const ref: AgentRef = {
          name: options.name,
          run_id: runId,
          parent_run_id: parentRunId,
          depth: (caller?.depth ?? 0) + 1,
          ...(parentCall?.toolCallId !== undefined ? { tool_call_id: parentCall.toolCallId } : {})
        }
        const conversationId = `${parentCall?.conversationId ?? "run"}/${options.name}/${runId.slice(4, 12)}`
        const subRun: SubRun = { call, toolCallId: parentCall?.toolCallId, conversationId, agent: ref }
        const onEvent = options.onEvent
        const observe = onEvent === undefined ?
          () => Effect.void :
          (event: RunEvent) =>
            onEvent(event, subRun).pipe(
              Effect.catchAllCause((cause) => Effect.logWarning(`${options.name}: onEvent failed`, cause))
            )
        const history = historyFor(options.history ?? "none", yield* step.thread)
        const input: RunInput = {
          query,
          conversationId,
          runId,
          name: options.name,
          ...(history.length > 0 ? { history } : {}),
          // the parent run's user answers the child's approvals
          ...(parentCall?.approverConversationId !== undefined
            ? { approvalConversationId: parentCall.approverConversationId }
            : {}),
          ...(options.maxIterations !== undefined ? { maxIterations: options.maxIterations } : {})
        }
        const outcome: ChildJournal.Outcome = {}
        const prefix = `${step.name}/agent/`
        yield* step.journal.emit({ _tag: "AgentStart", agent: ref, query }, { key: `${prefix}start` })
        const journal = ChildJournal.make({ parent: step.journal, prefix, runId, agent: ref, outcome, observe })
        const running = agent.execute !== undefined
          ? agent.execute(input, journal)
          : Stream.runForEach(agent.run(input), (event) => journal.emit(event))
        yield* Effect.provideService(running, CurrentAgent, Option.some(ref))
        const { done, failure } = outcome
        const error = failure ?? (done === undefined ? "the sub-run ended without a result" : undefined)
        yield* step.journal.emit({
          _tag: "AgentDone",
          agent: ref,
          answer: error === undefined ? done?.answer ?? "" : "",
          iterations: done?.iterations ?? 0,
          usage: done?.usage ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, llm_calls: 0, by_phase: {} },
          elapsed: done?.elapsed ?? 0,
          ...(error !== undefined ? { error } : {})
        }, { key: `${prefix}done` })
        if (error !== undefined || done === undefined) {
          return yield* Effect.fail(new Tool.ToolError({ message: `Sub-agent ${options.name} failed: ${error}` }))
        }
        const { by_phase: _, ...usage } = done.usage
        return { content: done.answer, contentType: "markdown" as const, usage }
      })
  })
