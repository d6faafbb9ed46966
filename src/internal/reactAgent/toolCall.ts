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
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as ErrorMessage from "../../ErrorMessage.js"
import type { PreDecision, ToolUseContext } from "../../Hooks.js"
import { ToolOutcome } from "../../Hooks.js"
import * as Json from "../../Json.js"
import type { Step } from "../../RunEvent.js"
import * as Telemetry from "../../Telemetry.js"
import * as Tool from "../../Tool.js"
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

/** Decode + handler under the timeout; failures, defects and timeouts become a Failure outcome. */
const runTool = (env: LoopEnv, tool: Tool.Tool, args: Record<string, unknown>): Effect.Effect<ToolOutcome> => {
  const timeout = Duration.decode(tool.timeout ?? env.options.toolTimeout)
  return Tool.execute(tool, args).pipe(
    Effect.timeoutFail({
      duration: timeout,
      onTimeout: () => new Tool.ToolError({ message: `Tool ${tool.name} timed out after ${Duration.format(timeout)}` })
    }),
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

/** Hooks and the tool: the arguments that ran and the outcome. */
const decide = (
  env: LoopEnv,
  call: CallRequest,
  iteration: number
): Effect.Effect<{ readonly args: unknown; readonly outcome: ToolOutcome }> => {
  if (Either.isLeft(call.args)) return Effect.succeed({ args: call.shownArgs, outcome: failure(call.args.left) })
  const tool = env.tools.resolve(call.name)
  if (tool === undefined) {
    return Effect.succeed({
      args: call.shownArgs,
      outcome: failure(`Unknown tool "${call.name}". Available tools: ${availableNames(env)}`)
    })
  }
  const context: ToolUseContext = {
    toolName: call.name,
    args: call.args.right,
    iteration,
    conversationId: env.conversationId,
    tool,
    ...(call.id !== undefined ? { toolCallId: call.id } : {})
  }
  return env.hooks.runPreToolUse(context).pipe(
    Effect.catchAllDefect((defect) => Effect.succeed(blocked(defect))),
    Effect.flatMap((decision) => {
      if (!decision.allow) {
        return Effect.succeed({
          args: call.shownArgs,
          outcome: failure(`Blocked by ${decision.hook}: ${decision.reason}`)
        })
      }
      return runTool(env, tool, decision.args).pipe(
        // the handler can see which call it runs for (`Tool.currentCall`: agent tools nest their events under it)
        Tool.withCall({ toolName: call.name, iteration, conversationId: env.conversationId, ...(call.id !== undefined ? { toolCallId: call.id } : {}) }),
        Effect.flatMap((result) =>
          env.hooks.runPostToolUse({ ...context, args: decision.args }, result).pipe(
            Effect.catchAllDefect(() => Effect.succeed(result))
          )
        ),
        Effect.map((outcome) => ({ args: decision.args, outcome }))
      )
    })
  )
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

/**
 * Runs one call (its `ToolStart` was emitted by the loop, so every start of a
 * parallel round precedes its results), emits its `ToolDone`, returns its
 * outcome. A journal activity named after the iteration and the call id: a
 * durable run stores the outcome, and answers a non-idempotent call that was in
 * flight at a crash with `RESTART_ERROR` instead of running it twice.
 */
export const runCall = (env: LoopEnv, call: CallRequest, iteration: number): Effect.Effect<CallOutcome> => {
  const tool = Either.isRight(call.args) ? env.tools.resolve(call.name) : undefined
  return env.journal.activity({
    name: `tool/${iteration}/${call.id ?? "json"}`,
    success: CallOutcome,
    ...(tool?.idempotent === true ? {} : {
      onRestart: () =>
        finish(env, call, iteration, { args: call.shownArgs, outcome: failure(RESTART_ERROR), elapsed: 0 })
    }),
    execute: () =>
      Effect.gen(function*() {
        const started = yield* Clock.currentTimeMillis
        const { args, outcome } = yield* decide(env, call, iteration)
        const elapsed = ((yield* Clock.currentTimeMillis) - started) / 1000
        return yield* finish(env, call, iteration, { args, outcome, elapsed })
      }).pipe(Telemetry.toolSpan({ name: call.name, id: call.id, iteration }, report))
  })
}

/** What the call's `execute_tool` span records (arguments and result only when content is captured). */
const report = (o: CallOutcome, content: boolean): Telemetry.ToolReport => {
  const error = o.outcome._tag === "Failure" ? o.outcome.message : undefined
  return content ? { error, args: o.args, result: observationOf(o).text } : { error }
}
