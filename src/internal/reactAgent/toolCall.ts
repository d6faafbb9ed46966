/**
 * Executing the tool calls of the ReAct loop: PreToolUse hooks → execute (decode,
 * handler, timeout) → PostToolUse hooks → the observation the model sees (artifact
 * summary, tool-result budget) and the full step the events and trace keep.
 * Every call yields exactly one result, whatever happens; only interruption escapes.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Runtime from "effect/Runtime"
import type { PreDecision, ToolOutcome, ToolUseContext } from "../../Hooks.js"
import type { Step } from "../../RunEvent.js"
import * as Tool from "../../Tool.js"
import type { LoopEnv, RunState } from "./state.js"
import { chain, interruptedOnly, isDone, runTimed } from "./timeout.js"
import * as Prompts from "./prompts.js"

/** One tool call as the model asked for it. */
export interface CallRequest {
  readonly name: string
  /** The decoded arguments, or why they could not be decoded. */
  readonly args: Either.Either<Record<string, unknown>, string>
  /** The arguments as shown in events (the object, or the raw text when invalid). */
  readonly shownArgs: unknown
  readonly id?: string
}

/** The outcome of one call. */
export interface CallResult {
  /** What the model sees (`Error: …` for failures). */
  readonly modelText: string
  readonly step: Step
}

/** Canonical JSON with sorted object keys (cycle detection). */
export const canonicalJson = (value: unknown): string => {
  if (value === null || typeof value !== "object") return JSON.stringify(value) ?? "null"
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`
  const keys = Object.keys(value).sort()
  const obj = value as Record<string, unknown>
  return `{${keys.filter((k) => obj[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonicalJson(obj[k])}`).join(",")}}`
}

/** The cycle-detection key of a call. */
export const cycleKey = (call: CallRequest): string =>
  `${call.name}\u0000${Either.isRight(call.args) ? canonicalJson(call.args.right) : String(call.shownArgs)}`

const NON_ASCII = /[^\x00-\x7f]/

/** Token estimate of a text (SPEC §7: ASCII ≈ 4 chars/token, other chars ≈ 1.5). */
export const estimateText = (text: string): number => {
  if (!NON_ASCII.test(text)) return Math.ceil(text.length / 4)
  let ascii = 0
  const n = text.length
  for (let i = 0; i < n; i++) if (text.charCodeAt(i) < 128) ascii++
  return Math.ceil(ascii / 4 + (n - ascii) / 1.5)
}

/** Applies the per-run tool-result budget to an observation. */
const applyBudget = (env: LoopEnv, state: RunState, text: string): string => {
  const budget = env.options.toolResultBudget
  if (budget <= 0) return text
  const tokens = estimateText(text)
  if (state.obsTokens + tokens <= budget) {
    state.obsTokens += tokens
    return text
  }
  const remaining = Math.max(0, budget - state.obsTokens)
  state.obsTokens = budget
  const keep = tokens === 0 ? 0 : Math.floor(text.length * (remaining / tokens))
  return text.slice(0, keep) + Prompts.budgetNotice(budget)
}

const describe = (u: unknown): string => {
  if (u instanceof Error) return u.message
  try {
    return typeof u === "string" ? u : JSON.stringify(u) ?? String(u)
  } catch {
    return String(u)
  }
}

const validOutput = (output: unknown): boolean =>
  typeof output === "string" ||
  (typeof output === "object" && output !== null && typeof (output as { content?: unknown }).content === "string")

const invalidResult = (tool: Tool.Tool): ToolOutcome => ({
  _tag: "Failure",
  message: `Tool ${tool.name} returned an invalid result (expected text or {content, contentType})`
})

/** The outcome of a tool's exit: ToolError, defects and self-interruption become a Failure outcome. */
const toOutcome = (tool: Tool.Tool, exit: Exit.Exit<Tool.ToolOutput, Tool.ToolError>): Effect.Effect<ToolOutcome> => {
  if (exit._tag === "Success") {
    return Effect.succeed(validOutput(exit.value) ? { _tag: "Success", output: exit.value } : invalidResult(tool))
  }
  const cause = exit.cause
  if (interruptedOnly(cause)) return Effect.succeed({ _tag: "Failure", message: `Tool ${tool.name} was interrupted` })
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) return Effect.succeed({ _tag: "Failure", message: failure.value.message })
  const defect = Cause.dieOption(cause)
  if (Option.isSome(defect)) {
    return Effect.succeed({ _tag: "Failure", message: `Tool ${tool.name} crashed: ${describe(defect.value)}` })
  }
  return Effect.succeed({ _tag: "Failure", message: `Tool ${tool.name} failed: ${Cause.pretty(cause)}` })
}

/**
 * Runs decode + handler with the timeout; ToolError, defects and timeouts become a
 * Failure outcome. An already successful `Exit` when the tool finished synchronously.
 */
const runTool = (
  env: LoopEnv,
  runtime: Runtime.Runtime<never>,
  tool: Tool.Tool,
  args: Record<string, unknown>
): Effect.Effect<ToolOutcome> => {
  const timeout = tool.timeout ?? env.options.toolTimeout
  return runTimed(
    runtime,
    Tool.execute(tool, args),
    timeout,
    () => new Tool.ToolError({ message: `Tool ${tool.name} timed out after ${Duration.format(timeout)}` }),
    (exit) => toOutcome(tool, exit),
    (e) => Effect.succeed<ToolOutcome>({ _tag: "Failure", message: e.message })
  )
}

const availableNames = (env: LoopEnv): string => {
  const names = env.tools.advertised().map((t) => t.name)
  return names.length > 0 ? names.join(", ") : "(none)"
}

const failedCall = (env: LoopEnv, call: CallRequest, iteration: number, defect: unknown): CallResult => {
  const message = `Tool call failed: ${describe(defect)}`
  const step: Step = {
    iteration,
    tool_name: call.name,
    tool_args: call.shownArgs,
    observation: `Error: ${message}`,
    error: message,
    iter_elapsed: 0,
    ...(call.id !== undefined ? { tool_call_id: call.id } : {})
  }
  env.emit({ _tag: "ToolDone", ...step })
  return { modelText: `Error: ${message}`, step }
}

/**
 * Executes one call (the `ToolStart` event is emitted by the caller, so that every
 * start of a parallel round precedes its results) and emits `ToolDone`.
 *
 * Runs as far as it can synchronously: with hooks that answer at once and a tool
 * that finishes without suspending, the whole call is done on return and the result
 * is an already successful `Exit` (see `isDone`), so a round needs no fiber for it.
 * `runtime` is the run's (the tool fiber gets its context and fiber refs).
 */
export const executeCall = (
  env: LoopEnv,
  state: RunState,
  call: CallRequest,
  iteration: number,
  runtime: Runtime.Runtime<never>
): Effect.Effect<CallResult> => {
  let effect: Effect.Effect<CallResult>
  try {
    effect = executeUnsafe(env, state, call, iteration, runtime)
  } catch (defect) {
    return Effect.succeed(failedCall(env, call, iteration, defect))
  }
  return isDone(effect)
    ? effect
    : Effect.catchAllDefect(effect, (defect) => Effect.sync(() => failedCall(env, call, iteration, defect)))
}

const preFailed = (defect: unknown) =>
  Effect.succeed<PreDecision>({ allow: false, reason: `hook failed: ${describe(defect)}`, hook: "PreToolUse" })

const executeUnsafe = (
  env: LoopEnv,
  state: RunState,
  call: CallRequest,
  iteration: number,
  runtime: Runtime.Runtime<never>
): Effect.Effect<CallResult> => {
  const started = Date.now()
  const tool = env.tools.resolve(call.name)
  if (Either.isLeft(call.args)) {
    return Effect.succeed(finish(env, state, call, iteration, started, call.shownArgs, {
      _tag: "Failure",
      message: call.args.left
    }))
  }
  if (tool === undefined) {
    return Effect.succeed(finish(env, state, call, iteration, started, call.shownArgs, {
      _tag: "Failure",
      message: `Unknown tool "${call.name}". Available tools: ${availableNames(env)}`
    }))
  }
  const context: ToolUseContext = {
    toolName: call.name,
    args: call.args.right,
    iteration,
    conversationId: env.conversationId,
    tool,
    ...(call.id !== undefined ? { toolCallId: call.id } : {})
  }
  const pre = env.hooks.runPreToolUse(context)
  return chain(isDone(pre) ? pre : Effect.catchAllDefect(pre, preFailed), (decision) => {
    if (!decision.allow) {
      return Effect.succeed(finish(env, state, call, iteration, started, call.shownArgs, {
        _tag: "Failure",
        message: `Blocked by ${decision.hook}: ${decision.reason}`
      }))
    }
    return chain(runTool(env, runtime, tool, decision.args), (result) => {
      const post = env.hooks.runPostToolUse({ ...context, args: decision.args }, result)
      return chain(
        isDone(post) ? post : Effect.catchAllDefect(post, () => Effect.succeed(result)),
        (outcome) => Effect.succeed(finish(env, state, call, iteration, started, decision.args, outcome))
      )
    })
  })
}

/** Builds the call's result from its outcome and emits `ToolDone`. */
const finish = (
  env: LoopEnv,
  state: RunState,
  call: CallRequest,
  iteration: number,
  started: number,
  finalArgs: unknown,
  outcome: ToolOutcome
): CallResult => {
  const elapsed = (Date.now() - started) / 1000
  let modelText: string
  let step: Step
  if (outcome._tag === "Success") {
    const rich = Tool.toRich(outcome.output)
    const artifacts = rich.artifacts ?? []
    const seen = (rich.contentType === "html" || rich.contentType === "markdown") && artifacts.length > 0
      ? Prompts.artifactSummary(artifacts.map((a) => a.name))
      : rich.content
    modelText = applyBudget(env, state, seen)
    step = {
      iteration,
      tool_name: call.name,
      tool_args: finalArgs,
      observation: rich.content,
      error: null,
      iter_elapsed: elapsed,
      content_type: rich.contentType,
      ...(call.id !== undefined ? { tool_call_id: call.id } : {}),
      ...(artifacts.length > 0 ? { artifacts } : {})
    }
  } else {
    modelText = `Error: ${outcome.message}`
    step = {
      iteration,
      tool_name: call.name,
      tool_args: finalArgs,
      observation: `Error: ${outcome.message}`,
      error: outcome.message,
      iter_elapsed: elapsed,
      ...(call.id !== undefined ? { tool_call_id: call.id } : {})
    }
  }
  env.emit({ _tag: "ToolDone", ...step })
  return { modelText, step }
}

/** Emits `ToolStart` for a call. */
export const emitStart = (env: LoopEnv, call: CallRequest, iteration: number): void =>
  env.emit({
    _tag: "ToolStart",
    iteration,
    tool_name: call.name,
    tool_args: call.shownArgs,
    ...(call.id !== undefined ? { tool_call_id: call.id } : {})
  })
