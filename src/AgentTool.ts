/**
 * An agent used as a tool of another agent. The tool's call runs the
 * sub-agent on a fresh conversation with the model's `query` and answers with
 * the sub-agent's answer. Because it is a tool like any other, the parent's
 * hooks apply to the call, its timeout bounds it, and cancelling the parent
 * interrupts the call's fiber and with it the sub-run (its LLM request is
 * aborted, its tools interrupted).
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
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { randomUUID } from "node:crypto"
import type { RunInput } from "./ReactAgent.js"
import type { RunEvent } from "./RunEvent.js"
import * as Tool from "./Tool.js"

/**
 * What `asTool` needs of an agent: `ReactAgentService` and `DagAgentService`
 * both fit.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunnableAgent {
  readonly run: (input: RunInput) => Stream.Stream<RunEvent>
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
  /** The sub-run's own (fresh) conversation id. */
  readonly conversationId: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The tool name (`^[a-zA-Z0-9_-]{1,64}$`). */
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
  /**
   * Every event of the sub-run, as it happens, with the parent call it belongs
   * to (the sub-run waits for it). A failure or defect of the callback is logged
   * and ignored.
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

/** What a sub-run came to: its answer and usage, or why it failed. */
const outcomeOf = (events: Stream.Stream<RunEvent>) =>
  Effect.suspend(() => {
    let done: Extract<RunEvent, { _tag: "Done" }> | undefined
    let failure: string | undefined
    return Stream.runForEach(events, (event) =>
      Effect.sync(() => {
        if (event._tag === "Done") done = event
        else if (event._tag === "RunFailed") failure = event.message
      })).pipe(Effect.map(() => ({ done, failure: failure ?? (done === undefined ? "the sub-run ended without a result" : undefined) })))
  })

/**
 * A tool whose call runs `agent` on the model's `query` (see the module
 * comment). A sub-run that fails is a `ToolError` the parent's model reads as
 * the call's error; its usage is then not counted (only a completed sub-run
 * reports usage).
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
    handler: ({ query }) =>
      Effect.gen(function*() {
        const call = yield* FiberRef.get(Tool.currentCall)
        const parent = Option.match(call, { onNone: () => "run", onSome: (c) => c.conversationId })
        const conversationId = `${parent}/${options.name}/${randomUUID().slice(0, 8)}`
        const subRun: SubRun = { call, toolCallId: Option.getOrUndefined(call)?.toolCallId, conversationId }
        const onEvent = options.onEvent
        const parentCall = Option.getOrUndefined(call)
        const events = agent.run({
          query,
          conversationId,
          // the parent run's user answers the sub-run's approvals
          ...(parentCall?.approverConversationId !== undefined ? { approvalConversationId: parentCall.approverConversationId } : {}),
          ...(options.maxIterations !== undefined ? { maxIterations: options.maxIterations } : {})
        })
        // approval requests and decisions surface on the parent run (its clients show them and answer them)
        const forward = parentCall?.emit
        const surfaced = forward === undefined ? events : Stream.tap(events, (event) =>
          event._tag === "ApprovalRequested" || event._tag === "ApprovalDecided" ? forward(event) : Effect.void)
        const observed = onEvent === undefined ? surfaced : Stream.tap(surfaced, (event) =>
          onEvent(event, subRun).pipe(
            Effect.catchAllCause((cause) => Effect.logWarning(`${options.name}: onEvent failed`, cause))
          ))
        const { done, failure } = yield* outcomeOf(observed)
        if (failure !== undefined || done === undefined) {
          return yield* Effect.fail(new Tool.ToolError({ message: `Sub-agent ${options.name} failed: ${failure}` }))
        }
        const { by_phase: _, ...usage } = done.usage
        return { content: done.answer, contentType: "markdown" as const, usage }
      })
  })
