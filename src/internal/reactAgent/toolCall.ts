/**
 * One tool call of the ReAct loop: PreToolUse hooks → the tool (arguments
 * decoded, handler run under its timeout) → PostToolUse hooks, giving the
 * call's `CallOutcome` and its `ToolDone` event. Every call yields exactly one
 * outcome, whatever happens (bad arguments, unknown tool, blocked, failure,
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
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as ErrorMessage from "../../ErrorMessage.js"
import type { PreDecision, ToolUseContext } from "../../Hooks.js"
import { ToolOutcome } from "../../Hooks.js"
import * as Json from "../../Json.js"
import type { Step } from "../../RunEvent.js"
import * as Telemetry from "../../Telemetry.js"
import * as Tool from "../../Tool.js"
import { deniedMessage, MISMATCH, type Verdict } from "./approval.js"
import type { LoopEnv } from "./env.js"
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

/** The cycle-detection identity of a call: its name and canonical arguments. */
export const cycleKey = (call: CallRequest): string =>
  `${call.name}\u0000${Either.isRight(call.args) ? Json.canonical(call.args.right) : String(call.shownArgs)}`

const availableNames = (env: LoopEnv): string => {
  const names = env.tools.advertised().map((t) => t.name)
  return names.length > 0 ? names.join(", ") : "(none)"
}

const failure = (message: string): ToolOutcome => ({ _tag: "Failure", message })

/**
 * Decode + handler in the tool's own fiber, under the timeout (`deadlines.ts`);
 * failures, defects and timeouts become a Failure outcome. The fiber knows
 * which call it handles (`Tool.currentCall`: agent tools nest their events
 * under it).
 */
const runTool = (env: LoopEnv, tool: Tool.Tool, args: Record<string, unknown>, call: Tool.CallContext): Effect.Effect<ToolOutcome> => {
  const timeout = Duration.decode(tool.timeout ?? env.options.toolTimeout)
  const handling = Effect.zipRight(FiberRef.set(Tool.currentCall, Option.some(call)), Tool.execute(tool, args))
  return env.deadlines.within(
    handling,
    timeout,
    () => new Tool.ToolError({ message: `Tool ${tool.name} timed out after ${Duration.format(timeout)}` })
  ).pipe(
    Effect.matchCause({
      onSuccess: (output): ToolOutcome => ({ _tag: "Success", output }),
      onFailure: (cause): ToolOutcome => {
        const error = Cause.failureOption(cause)
        if (Option.isSome(error)) return failure(ErrorMessage.messageOf(error.value))
        const defect = Cause.dieOption(cause)
        if (Option.isSome(defect)) return failure(`Tool ${tool.name} crashed: ${ErrorMessage.fromUnknown(defect.value)}`)
        return failure(`Tool ${tool.name} was interrupted`)
      }
    })
  )
}

const blocked = (defect: unknown): PreDecision => ({
  allow: false,
  reason: `hook failed: ${ErrorMessage.fromUnknown(defect)}`,
  hook: "PreToolUse"
})

/** A call after its checks: answered already (it does not run), or allowed with the arguments that would run. */
type Checked =
  | { readonly _tag: "Answered"; readonly args: unknown; readonly outcome: ToolOutcome }
  | {
    readonly _tag: "Allowed"
    readonly tool: Tool.Tool
    readonly context: ToolUseContext
    readonly args: Record<string, unknown>
    readonly needsApproval: boolean
  }

const answered = (args: unknown, outcome: ToolOutcome): Checked => ({ _tag: "Answered", args, outcome })

/** The context hooks and approval checks see. */
const contextOf = (env: LoopEnv, call: CallRequest, tool: Tool.Tool, args: Record<string, unknown>, iteration: number): ToolUseContext => ({
  toolName: call.name,
  args,
  iteration,
  conversationId: env.conversationId,
  tool,
  ...(call.id !== undefined ? { toolCallId: call.id } : {})
})

/** Arguments, the tool, the PreToolUse hooks, then whether a person must approve (on the arguments that would run). */
const check = (env: LoopEnv, call: CallRequest, iteration: number): Effect.Effect<Checked> => {
  if (Either.isLeft(call.args)) return Effect.succeed(answered(call.shownArgs, failure(call.args.left)))
  const tool = env.tools.resolve(call.name)
  if (tool === undefined) {
    return Effect.succeed(
      answered(call.shownArgs, failure(`Unknown tool "${call.name}". Available tools: ${availableNames(env)}`))
    )
  }
  const context = contextOf(env, call, tool, call.args.right, iteration)
  return env.hooks.runPreToolUse(context).pipe(
    Effect.catchAllDefect((defect) => Effect.succeed(blocked(defect))),
    Effect.flatMap((decision): Effect.Effect<Checked> => {
      if (!decision.allow) {
        return Effect.succeed(answered(call.shownArgs, failure(`Blocked by ${decision.hook}: ${decision.reason}`)))
      }
      const allowed = { ...context, args: decision.args }
      return Effect.map(env.approval.required(tool, allowed), (needsApproval) => ({
        _tag: "Allowed",
        tool,
        context: allowed,
        args: decision.args,
        needsApproval
      }))
    })
  )
}

/** The tool, then the PostToolUse hooks. */
const perform = (env: LoopEnv, tool: Tool.Tool, context: ToolUseContext): Effect.Effect<ToolOutcome> =>
  runTool(env, tool, context.args, {
    toolName: context.toolName,
    iteration: context.iteration,
    conversationId: context.conversationId,
    approverConversationId: env.approverConversationId,
    emit: env.journal.emit,
    ...(context.toolCallId !== undefined ? { toolCallId: context.toolCallId } : {})
  }).pipe(
    Effect.flatMap((result) => env.hooks.runPostToolUse(context, result).pipe(Effect.catchAllDefect(() => Effect.succeed(result))))
  )

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

/** The `ToolStart` event of a call. */
export const emitStart = (env: LoopEnv, call: CallRequest, iteration: number): Effect.Effect<void> =>
  env.journal.emit({
    _tag: "ToolStart",
    iteration,
    tool_name: call.name,
    tool_args: call.shownArgs,
    ...(call.id !== undefined ? { tool_call_id: call.id } : {})
  })

const finish = (env: LoopEnv, call: CallRequest, iteration: number, outcome: CallOutcome) =>
  Effect.as(env.journal.emit({ _tag: "ToolDone", ...stepOf(call, iteration, outcome) }), outcome)

/** The observation of a call that was in flight when its process died and is not run again. */
export const RESTART_ERROR = "interrupted by a server restart; not retried"

/** The first part of a call that needs approval: it stops before the tool, with the arguments that would run. */
const AwaitingApproval = Schema.TaggedStruct("AwaitingApproval", {
  args: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

/** What the first activity of a call stores: its outcome, or that it waits for a person. */
const FirstPart = Schema.Union(CallOutcome, AwaitingApproval)

const elapsedSince = (started: number) => Effect.map(Clock.currentTimeMillis, (now) => (now - started) / 1000)

/**
 * Runs one call (its `ToolStart` was emitted by the loop, so every start of a
 * parallel round precedes its results), emits its `ToolDone`, returns its
 * outcome. A journal activity named after the iteration and the call id: a
 * durable run stores the outcome, and answers a non-idempotent call that was in
 * flight at a crash with `RESTART_ERROR` instead of running it twice.
 *
 * A call that needs approval stops that activity before the tool; the approval
 * is asked and waited for outside it (`approval.ts`: its own activity, so a
 * restart while waiting waits again instead of answering `RESTART_ERROR`), and
 * the tool runs — approved — or is answered `Error: the user denied this call`
 * in a third activity (`tool/<iteration>/<call id>/decided`).
 */
export const runCall = (env: LoopEnv, call: CallRequest, iteration: number): Effect.Effect<CallOutcome> => {
  const tool = Either.isRight(call.args) ? env.tools.resolve(call.name) : undefined
  const name = `tool/${iteration}/${call.id ?? "json"}`
  const onRestart = tool?.idempotent === true ? {} : {
    onRestart: () => finish(env, call, iteration, { args: call.shownArgs, outcome: failure(RESTART_ERROR), elapsed: 0 })
  }
  /** The call once a person answered: the tool runs only when approved. */
  const decided = (args: Record<string, unknown>, verdict: Verdict) =>
    env.journal.activity({
      name: `${name}/decided`,
      success: CallOutcome,
      ...onRestart,
      execute: () =>
        Effect.gen(function*() {
          const started = yield* Clock.currentTimeMillis
          const outcome = verdict.approved && tool !== undefined
            ? yield* perform(env, tool, contextOf(env, call, tool, args, iteration))
            : failure(deniedMessage(verdict.approved ? MISMATCH : verdict.reason))
          return yield* finish(env, call, iteration, { args, outcome, elapsed: yield* elapsedSince(started) })
        }).pipe(Telemetry.toolSpan({ name: call.name, id: call.id, iteration }, report))
    })
  return env.journal.activity({
    name,
    success: FirstPart,
    ...onRestart,
    execute: () =>
      Effect.gen(function*() {
        const started = yield* Clock.currentTimeMillis
        const checked = yield* check(env, call, iteration)
        if (checked._tag === "Allowed" && checked.needsApproval) return { _tag: "AwaitingApproval" as const, args: checked.args }
        const outcome = checked._tag === "Answered" ? checked.outcome : yield* perform(env, checked.tool, checked.context)
        return yield* finish(env, call, iteration, { args: checked.args, outcome, elapsed: yield* elapsedSince(started) })
      }).pipe(Telemetry.toolSpan<CallOutcome | typeof AwaitingApproval.Type>({ name: call.name, id: call.id, iteration }, reportChecked))
  }).pipe(
    Effect.flatMap((first) => {
      if (!("_tag" in first)) return Effect.succeed(first)
      const ask = { name: call.name, args: first.args, iteration, ...(call.id !== undefined ? { id: call.id } : {}) }
      return Effect.flatMap(env.approval.ask(ask), (verdict) => decided(first.args, verdict))
    })
  )
}

const report = (o: CallOutcome, content: boolean): Telemetry.ToolReport => {
  const error = o.outcome._tag === "Failure" ? o.outcome.message : undefined
  return content ? { error, args: o.args, result: observationOf(o).text } : { error }
}

/** The first part of a call: its outcome, or (waiting for a person) nothing to report yet. */
const reportChecked = (o: CallOutcome | typeof AwaitingApproval.Type, content: boolean): Telemetry.ToolReport =>
  "_tag" in o ? { error: undefined } : report(o, content)
