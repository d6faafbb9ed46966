/**
 * The parts of one tool call of the ReAct loop: PreToolUse hooks and the
 * approval check, the tool (arguments decoded, handler run under its timeout),
 * PostToolUse hooks, the `ToolDone` event. `round.ts` puts them together (and
 * into the journal's activities). Every call yields exactly one outcome,
 * whatever happens (bad arguments, unknown tool, blocked, denied, failure,
 * defect, timeout); only the run's own interruption escapes.
 *
 * A call only computes its outcome: what the outcome changes in the run (the
 * step, the tool-result budget, the tool message) is applied by the loop after
 * the round, in request order (`state.ts`).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { isDeepStrictEqual } from "node:util"
import * as ErrorMessage from "../../ErrorMessage.js"
import type { PreDecision, ToolUseContext } from "../../Hooks.js"
import * as Json from "../../Json.js"
import type { RunEvent, Step } from "../../RunEvent.js"
import { CurrentStep, restartError } from "../../RunJournal.js"
import * as Tool from "../../Tool.js"
import { ToolOutcome } from "../../Tool.js"
import { deniedMessage, MISMATCH, type Verdict } from "./approval.js"
import type { LoopEnv } from "./env.js"
import { throttledEmit } from "./progress.js"
import * as Prompts from "./prompts.js"

/** One tool call as the model asked for it. */
export interface CallRequest {
  readonly name: string
  /** The decoded arguments, or why they could not be decoded. */
  readonly args: Either.Either<Record<string, unknown>, string>
  /** The arguments as shown in events (the object, or the raw text when invalid). */
  readonly shownArgs: unknown
  /** The provider's call id (native mode); absent in JSON mode. */
  readonly id?: string
}

/** What a call came to: the arguments it ran with, its outcome, how long it took. Stored by durable runs. */
export const CallOutcome = Schema.Struct({
  /** The arguments after PreToolUse hooks (or as the model sent them when it did not run). */
  args: Schema.Unknown,
  outcome: ToolOutcome,
  /** Seconds. */
  elapsed: Schema.Number
})
export type CallOutcome = typeof CallOutcome.Type

/**
 * The journal step of a call: `tool/<iteration>/<call id>` (`json` for the one
 * call of a JSON-mode iteration). Its activities are named after it, and its
 * idempotency key derives from it.
 */
export const stepName = (iteration: number, id: string | undefined): string => `tool/${iteration}/${id ?? "json"}`

/** The call's idempotency key (`Tool.CallContext.idempotencyKey`), when the journal gives keys. */
const keyOf = (env: LoopEnv, iteration: number, id: string | undefined): string | undefined =>
  env.journal.idempotencyKey?.(stepName(iteration, id))

/** The cycle-detection identity of a call: its name and canonical arguments. */
export const cycleKey = (call: CallRequest): string =>
  `${call.name}\u0000${Either.isRight(call.args) ? Json.canonical(call.args.right) : String(call.shownArgs)}`

const availableNames = (env: LoopEnv): string => {
  const names = env.tools.advertised().map((t) => t.name)
  return names.length > 0 ? names.join(", ") : "(none)"
}

/** A Failure outcome. */
export const failure = (message: string): ToolOutcome => ({ _tag: "Failure", message })

/**
 * Decode + handler, bounded by the tool's declared timeout, if it has one (its
 * own, else the agent's `toolTimeout`; `Effect.timeoutTo`: the handler runs in
 * a fiber the timeout interrupts, the caller goes on with the "timed out"
 * outcome). Without one the handler runs in the call's own fiber, bounded by
 * the run's deadline (`runTimeout`). Failures, defects, the timeout and the handler's own
 * interruption become a Failure outcome; only the run's interruption escapes.
 * The handler knows which call it handles (`Tool.currentCall`, set with
 * `Effect.locally`: agent tools nest their events under it).
 */
const runTool = (env: LoopEnv, tool: Tool.Tool, context: ToolUseContext): Effect.Effect<ToolOutcome> => {
  const declared = tool.timeout ?? env.options.toolTimeout
  const key = keyOf(env, context.iteration, context.toolCallId)
  const call: Tool.CallContext = {
    toolName: context.toolName,
    iteration: context.iteration,
    conversationId: context.conversationId,
    approverConversationId: env.approverConversationId,
    emit: throttledEmit(env.journal.emit),
    ...(context.toolCallId !== undefined ? { toolCallId: context.toolCallId } : {}),
    ...(key !== undefined ? { idempotencyKey: key } : {})
  }
  const succeeded = (result: unknown): ToolOutcome => {
    const output = Tool.checkOutput(tool, result)
    return Either.isRight(output)
      ? { _tag: "Success", output: output.right }
      : failure(ErrorMessage.messageOf(output.left))
  }
  const failed = (cause: Cause.Cause<Tool.ToolError>): ToolOutcome => {
    const error = Cause.failureOption(cause)
    if (Option.isSome(error)) return failure(ErrorMessage.messageOf(error.value))
    const defect = Cause.dieOption(cause)
    if (Option.isSome(defect)) return failure(`Tool ${tool.name} crashed: ${ErrorMessage.fromUnknown(defect.value)}`)
    return failure(`Tool ${tool.name} was interrupted`)
  }
  // an agent used as a tool nests its run's journal under the call's step
  const step = Option.some({
    journal: env.journal,
    name: stepName(context.iteration, context.toolCallId),
    thread: env.thread
  })
  const handler = Effect.provideService(Tool.executeUnchecked(tool, context.args), CurrentStep, step)
  const handling = Effect.matchCause(Effect.locally(handler, Tool.currentCall, Option.some(call)), {
    onSuccess: succeeded,
    onFailure: failed
  })
  // a tool without a declared timeout runs without a timer of its own: the run's deadline bounds it
  if (declared === undefined) return handling
  const timeout = Duration.decode(declared)
  if (!Duration.isFinite(timeout)) return handling
  return Effect.timeoutTo(handling, {
    duration: timeout,
    onSuccess: identity,
    onTimeout: () => failure(`Tool ${tool.name} timed out after ${Duration.format(timeout)}`)
  })
}

const blocked = (defect: unknown): PreDecision => ({
  allow: false,
  reason: `hook failed: ${ErrorMessage.fromUnknown(defect)}`,
  hook: "PreToolUse"
})

/**
 * Where a call stands on its way to its outcome (only the call's own fiber
 * moves it on): answered without running its tool (bad arguments, an unknown
 * tool, blocked, denied), allowed to run with the arguments that would run
 * (once approved, where it must be), stopped before its tool for a person's
 * approval, or its tool ran.
 */
export type CallStage =
  | { readonly _tag: "Answered"; readonly args: unknown; readonly outcome: ToolOutcome }
  | {
    readonly _tag: "Allowed"
    readonly tool: Tool.Tool
    readonly context: ToolUseContext
    readonly args: Record<string, unknown>
    readonly needsApproval: boolean
  }
  | { readonly _tag: "AwaitingApproval"; readonly args: Record<string, unknown> }
  | { readonly _tag: "Ran"; readonly context: ToolUseContext; readonly result: ToolOutcome }

/** A call after its checks. */
type Checked = Extract<CallStage, { readonly _tag: "Answered" | "Allowed" }>

const answered = (args: unknown, outcome: ToolOutcome): Checked => ({ _tag: "Answered", args, outcome })

/** The context hooks and approval checks see. */
const contextOf = (
  env: LoopEnv,
  call: CallRequest,
  tool: Tool.Tool,
  args: Record<string, unknown>,
  iteration: number
): ToolUseContext => ({
  toolName: call.name,
  args,
  iteration,
  conversationId: env.conversationId,
  tool,
  ...(call.id !== undefined ? { toolCallId: call.id } : {})
})

/**
 * Arguments, the tool, the PreToolUse hooks, then whether a person must
 * approve (on the arguments that would run). What is known at once (bad
 * arguments, an unknown tool, no hook for the tool) is an `Effect.succeed`.
 */
const check = (env: LoopEnv, call: CallRequest, iteration: number): Effect.Effect<Checked> => {
  if (Either.isLeft(call.args)) return Effect.succeed(answered(call.shownArgs, failure(call.args.left)))
  const tool = env.tools.resolve(call.name)
  if (tool === undefined) {
    return Effect.succeed(
      answered(call.shownArgs, failure(`Unknown tool "${call.name}". Available tools: ${availableNames(env)}`))
    )
  }
  const context = contextOf(env, call, tool, call.args.right, iteration)
  const decided = (decision: PreDecision): Effect.Effect<Checked> => {
    if (!decision.allow) {
      return Effect.succeed(answered(call.shownArgs, failure(`Blocked by ${decision.hook}: ${decision.reason}`)))
    }
    const allowed = decision.args === context.args ? context : { ...context, args: decision.args }
    return Effect.map(
      env.approval.required(tool, allowed),
      (needsApproval): Checked => ({ _tag: "Allowed", tool, context: allowed, args: decision.args, needsApproval })
    )
  }
  // a hook that dies blocks the call; the run's interruption goes on
  return Effect.matchCauseEffect(env.hooks.runPreToolUse(context), {
    onFailure: (cause) => {
      const defect = Cause.dieOption(cause)
      return Option.isSome(defect) ? decided(blocked(defect.value)) : Effect.failCause(cause)
    },
    onSuccess: decided
  })
}

/** A call whose fiber is done: answered without running its tool, or its tool ran. */
export type Finished = Extract<CallStage, { readonly _tag: "Answered" | "Ran" }>

/** What a call's own fiber came to: done, or waiting for a person. */
export type Ran = Finished | Extract<CallStage, { readonly _tag: "AwaitingApproval" }>

const ran = (env: LoopEnv, tool: Tool.Tool, context: ToolUseContext): Effect.Effect<Finished> =>
  Effect.map(runTool(env, tool, context), (result): Finished => ({ _tag: "Ran", context, result }))

/**
 * A call up to its outcome, without its PostToolUse hooks: the checks, then the
 * tool. A call that needs a person's approval stops before the tool (`"stop"`:
 * the caller asks, in a journal activity of its own) or asks here and runs the
 * tool only when approved (`"ask"`).
 */
export function callBody(env: LoopEnv, call: CallRequest, iteration: number, approval: "ask"): Effect.Effect<Finished>
export function callBody(env: LoopEnv, call: CallRequest, iteration: number, approval: "stop"): Effect.Effect<Ran>
export function callBody(
  env: LoopEnv,
  call: CallRequest,
  iteration: number,
  approval: "ask" | "stop"
): Effect.Effect<Ran> {
  const then = (checked: Checked): Effect.Effect<Ran> => {
    if (checked._tag === "Answered") return Effect.succeed(checked)
    if (!checked.needsApproval) return ran(env, checked.tool, checked.context)
    if (approval === "stop") return Effect.succeed({ _tag: "AwaitingApproval", args: checked.args })
    return Effect.flatMap(
      env.approval.ask(askOf(call, checked.args, iteration)),
      (verdict) => decidedBody(env, call, iteration, checked.args, verdict)
    )
  }
  return Effect.flatMap(check(env, call, iteration), then)
}

/** What the approval gate is asked about a call. */
export const askOf = (call: CallRequest, args: Record<string, unknown>, iteration: number) => ({
  name: call.name,
  args,
  iteration,
  ...(call.id !== undefined ? { id: call.id } : {})
})

/** A call once a person answered: the tool runs only when approved. */
export const decidedBody = (
  env: LoopEnv,
  call: CallRequest,
  iteration: number,
  args: Record<string, unknown>,
  verdict: Verdict
): Effect.Effect<Finished> => {
  const tool = verdict.approved ? env.tools.resolve(call.name) : undefined
  if (tool === undefined) {
    return Effect.succeed({
      _tag: "Answered",
      args,
      outcome: failure(deniedMessage(verdict.approved ? MISMATCH : verdict.reason))
    })
  }
  return ran(env, tool, contextOf(env, call, tool, args, iteration))
}

/**
 * The outcome of a call once its body is over: its PostToolUse hooks run (when
 * its tool ran and a hook applies), without its `ToolDone` event — a durable
 * run stores the outcome first and emits the event once it is stored
 * (`emitDone`). `started`: when the call began (milliseconds, `Clock`), for its
 * elapsed time.
 */
export const settle = (env: LoopEnv, call: CallRequest, started: number, ran: Finished): Effect.Effect<CallOutcome> => {
  const finished = (args: unknown, outcome: ToolOutcome) =>
    Effect.map(Clock.currentTimeMillis, (now): CallOutcome => ({ args, outcome, elapsed: (now - started) / 1000 }))
  if (ran._tag === "Answered") return finished(ran.args, ran.outcome)
  const { context, result } = ran
  // a hook that dies keeps the observation; the run's interruption goes on
  return Effect.matchCauseEffect(env.hooks.runPostToolUse(context, result), {
    onFailure: (cause) => (Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : finished(context.args, result)),
    onSuccess: (outcome) => finished(context.args, outcome)
  })
}

/** The call's `ToolDone` event (`key`: its identity, for a durable host; see `EmitOptions`). */
export const emitDone = (
  env: LoopEnv,
  call: CallRequest,
  iteration: number,
  o: CallOutcome,
  key?: string
): Effect.Effect<void> => env.journal.emit(doneEvent(call, iteration, o), key === undefined ? undefined : { key })

/**
 * The `ToolDone` event of a call: its step, with `tool_args` only when they are
 * not the `ToolStart`'s (a PreToolUse hook rewrote them). A model's large
 * arguments are then stored and sent once per call, not twice; the run's `steps`
 * keep them.
 */
const doneEvent = (call: CallRequest, iteration: number, o: CallOutcome): RunEvent => {
  const { tool_args, ...step } = stepOf(call, iteration, o)
  return tool_args === call.shownArgs || isDeepStrictEqual(tool_args, call.shownArgs)
    ? { _tag: "ToolDone", ...step }
    : { _tag: "ToolDone", ...step, tool_args }
}

/** The step (events, synthesis trace) of a call's outcome. */
export const stepOf = (call: CallRequest, iteration: number, o: CallOutcome): Step => {
  const id = call.id !== undefined ? { tool_call_id: call.id } : {}
  if (o.outcome._tag === "Failure") {
    return {
      iteration,
      tool_name: call.name,
      tool_args: o.args,
      observation: `Error: ${o.outcome.message}`,
      error: o.outcome.message,
      iter_elapsed: o.elapsed,
      ...id
    }
  }
  const rich = Tool.toRich(o.outcome.output)
  const artifacts = rich.artifacts ?? []
  return {
    iteration,
    tool_name: call.name,
    tool_args: o.args,
    observation: rich.content,
    error: null,
    iter_elapsed: o.elapsed,
    content_type: rich.contentType,
    ...id,
    ...(artifacts.length > 0 ? { artifacts } : {}),
    // an agent run as a tool reports what its run cost (`by_phase.subagents`)
    ...(rich.usage !== undefined ? { usage: rich.usage } : {})
  }
}

/**
 * What the model is to see of an outcome, before the tool-result budget: the
 * content, an artifact summary for html/markdown with artifacts, `Error: …`.
 */
export const observationOf = (o: CallOutcome): { readonly text: string; readonly budgeted: boolean } => {
  if (o.outcome._tag === "Failure") return { text: `Error: ${o.outcome.message}`, budgeted: false }
  const rich = Tool.toRich(o.outcome.output)
  const artifacts = rich.artifacts ?? []
  const text = (rich.contentType === "html" || rich.contentType === "markdown") && artifacts.length > 0
    ? Prompts.artifactSummary(artifacts.map((a) => a.name))
    : rich.content
  return { text, budgeted: true }
}

/** The `ToolStart` event of a call (with the idempotency key its handler gets). */
export const emitStart = (env: LoopEnv, call: CallRequest, iteration: number): Effect.Effect<void> => {
  const key = keyOf(env, iteration, call.id)
  return env.journal.emit({
    _tag: "ToolStart",
    iteration,
    tool_name: call.name,
    tool_args: call.shownArgs,
    ...(call.id !== undefined ? { tool_call_id: call.id } : {}),
    ...(key !== undefined ? { idempotency_key: key } : {})
  })
}

/** The observation of a call that was in flight when its process died and is not run again. */
export const RESTART_ERROR = restartError
