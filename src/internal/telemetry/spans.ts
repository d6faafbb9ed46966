/**
 * The engine's spans, after the OpenTelemetry GenAI conventions: `invoke_agent
 * {agent}` per run, `chat {model}` per LLM call, `execute_tool {tool}` per tool
 * call, and span events. Attributes are set one by one on the span (no
 * attribute objects per call); content and metrics only when the telemetry
 * layer turned them on (`currentInstrumentation`). No stack traces are captured.
 *
 * Spans are Effect's own (`Effect.useSpan`): whichever tracer is installed
 * gets them, and with tracing turned off (`Layer.setTracerEnabled(false)`)
 * they are no-op spans.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import type * as Tracer from "effect/Tracer"
import type { ChatRequest, ResponseToolCall } from "../../Llm.js"
import type { Content } from "../../Message.js"
import type { Phase, RunUsage, Usage } from "../../Usage.js"
import * as GenAiContent from "./content.js"
import type { Instrumentation } from "./instrumentation.js"
import * as I from "./instrumentation.js"

/** The telemetry layer's settings (content capture, metrics) on the current fiber. */
const instrumentation = FiberRef.get(I.currentInstrumentation)

const CLIENT: Tracer.SpanOptions = { kind: "client", captureStackTrace: false }
const INTERNAL: Tracer.SpanOptions = { kind: "internal", captureStackTrace: false }

/** Where an LLM call belongs, for its `chat` span. */
export interface ChatSpanOptions {
  /** The usage phase the call counts for. */
  readonly phase?: Phase
  /** The loop iteration (loop calls). */
  readonly iteration?: number
  /** The structured-call level of the call. */
  readonly level?: "schema" | "native" | "json" | "text"
  /** A streaming call. */
  readonly stream?: boolean
}

/** What a `chat` span records of a reply. */
export interface ChatReply {
  readonly content: string
  readonly toolCalls?: ReadonlyArray<ResponseToolCall>
  readonly finishReason?: string | null
  readonly usage?: Usage
}

const errorType = (error: unknown): string => {
  if (typeof error === "object" && error !== null) {
    const e = error as { readonly reason?: unknown; readonly _tag?: unknown }
    if (typeof e.reason === "string") return e.reason
    if (typeof e._tag === "string") return e._tag
  }
  return "_OTHER"
}

const recordTokens = (model: string, phase: Phase | undefined, usage: Usage): Effect.Effect<void> => {
  const labels = [MetricLabel.make(I.GenAi.requestModel, model), MetricLabel.make(I.Engine.phase, phase ?? "unknown")]
  return Effect.zipRight(
    Metric.update(
      Metric.taggedWithLabels(I.tokenUsage, [...labels, MetricLabel.make(I.GenAi.tokenType, "input")]),
      usage.prompt_tokens
    ),
    Metric.update(
      Metric.taggedWithLabels(I.tokenUsage, [...labels, MetricLabel.make(I.GenAi.tokenType, "output")]),
      usage.completion_tokens
    )
  )
}

const annotateRequest = (
  span: Tracer.Span,
  model: string,
  request: ChatRequest,
  options: ChatSpanOptions,
  inst: Instrumentation
) => {
  span.attribute(I.GenAi.operationName, "chat")
  span.attribute(I.GenAi.requestModel, model)
  if (options.phase !== undefined) span.attribute(I.Engine.phase, options.phase)
  if (options.iteration !== undefined) span.attribute(I.Engine.iteration, options.iteration)
  if (options.level !== undefined) span.attribute(I.Engine.structuredLevel, options.level)
  if (options.stream === true) span.attribute(I.GenAi.requestStream, true)
  if (request.responseFormat !== undefined && request.responseFormat.type !== "text") {
    span.attribute(I.GenAi.outputType, "json")
  }
  if (request.maxTokens !== undefined) span.attribute(I.GenAi.requestMaxTokens, request.maxTokens)
  if (request.temperature !== undefined) span.attribute(I.GenAi.requestTemperature, request.temperature)
  if (inst.captureContent) {
    const system = GenAiContent.systemInstructions(request.messages)
    if (system !== undefined) span.attribute(I.GenAi.systemInstructions, system)
    span.attribute(I.GenAi.inputMessages, GenAiContent.inputMessages(request.messages))
  }
}

const annotateReply = (span: Tracer.Span, reply: ChatReply, inst: Instrumentation) => {
  if (reply.finishReason !== undefined && reply.finishReason !== null) {
    span.attribute(I.GenAi.finishReasons, [reply.finishReason])
  }
  const usage = reply.usage
  if (usage !== undefined) {
    span.attribute(I.GenAi.inputTokens, usage.prompt_tokens)
    span.attribute(I.GenAi.outputTokens, usage.completion_tokens)
    const read = usage.cached_input_tokens ?? usage.cached_tokens
    if (read !== undefined) span.attribute(I.GenAi.cachedInputTokens, read)
    if (usage.cache_write_input_tokens !== undefined) {
      span.attribute(I.GenAi.cacheWriteInputTokens, usage.cache_write_input_tokens)
    }
  }
  if (inst.captureContent) {
    span.attribute(
      I.GenAi.outputMessages,
      GenAiContent.outputMessages(reply.content, reply.toolCalls ?? [], reply.finishReason ?? null)
    )
  }
}

/**
 * `effect` (one LLM call, whatever its form) in a `chat {model}` span; `observe`
 * reads the reply off its result once it succeeded. A failure sets `error.type`
 * (the `LlmError` reason) and the span's error status.
 */
export const chatSpan = <A, E, R>(
  model: string,
  request: ChatRequest,
  options: ChatSpanOptions,
  effect: Effect.Effect<A, E, R>,
  observe: (a: A) => ChatReply
): Effect.Effect<A, E, R> =>
  Effect.flatMap(instrumentation, (inst) =>
    Effect.useSpan(`chat ${model}`, CLIENT, (span) => {
      annotateRequest(span, model, request, options, inst)
      return Effect.withParentSpan(effect, span).pipe(
        Effect.tapBoth({
          onFailure: (error) => Effect.sync(() => span.attribute(I.GenAi.errorType, errorType(error))),
          onSuccess: (a) => {
            const reply = observe(a)
            annotateReply(span, reply, inst)
            return inst.metrics && reply.usage !== undefined
              ? recordTokens(model, options.phase, reply.usage)
              : Effect.void
          }
        })
      )
    }))

// ---------------------------------------------------------------------------
// tools

/** A tool call, for its `execute_tool` span. */
export interface ToolSpan {
  readonly name: string
  readonly id?: string | undefined
  readonly iteration?: number
}

/** What an `execute_tool` span records of a call's outcome. */
export interface ToolReport {
  /** The failure message when the call ended in an error observation. */
  readonly error?: string | undefined
  /** The arguments it ran with (content: asked for only when captured). */
  readonly args?: unknown
  /** What the model sees (content: asked for only when captured). */
  readonly result?: string
}

/** Ends a span with an error status while the call itself still succeeds with its value. */
class Failed extends Data.TaggedError("ToolCallFailed")<{ readonly message: string; readonly value: unknown }> {}

const labelToolSpan = (span: Tracer.Span, call: ToolSpan): void => {
  span.attribute(I.GenAi.operationName, "execute_tool")
  span.attribute(I.GenAi.toolName, call.name)
  span.attribute(I.GenAi.toolType, "function")
  if (call.id !== undefined) span.attribute(I.GenAi.toolCallId, call.id)
  if (call.iteration !== undefined) span.attribute(I.Engine.iteration, call.iteration)
}

/** Sets the outcome's attributes on the span; the error message, if the call ended in one. */
const recordToolOutcome = (span: Tracer.Span, inst: Instrumentation, r: ToolReport): string | undefined => {
  if (inst.captureContent) {
    if (r.args !== undefined) span.attribute(I.GenAi.toolCallArguments, JSON.stringify(r.args) ?? "null")
    if (r.result !== undefined) span.attribute(I.GenAi.toolCallResult, r.result)
  }
  if (r.error !== undefined) span.attribute(I.GenAi.errorType, "tool_error")
  return r.error
}

/**
 * `effect` (one tool call, hooks included) in an `execute_tool {name}` span.
 * A call whose report has an `error` ends the span with an error status (and
 * `error.type` `tool_error`); the call's value is returned either way.
 */
export const toolSpan = <A, R>(
  call: ToolSpan,
  effect: Effect.Effect<A, never, R>,
  report: (a: A, content: boolean) => ToolReport
): Effect.Effect<A, never, R> =>
  Effect.flatMap(instrumentation, (inst) =>
    Effect.useSpan(`execute_tool ${call.name}`, INTERNAL, (span) => {
      labelToolSpan(span, call)
      return Effect.withParentSpan(effect, span).pipe(
        Effect.flatMap((a) => {
          const error = recordToolOutcome(span, inst, report(a, inst.captureContent))
          const counted = inst.metrics ? countTool(call.name, error !== undefined) : Effect.void
          if (error === undefined) return Effect.as(counted, a)
          return Effect.zipRight(counted, Effect.fail(new Failed({ message: error, value: a })))
        })
      )
    }).pipe(Effect.catchAll((failed) => Effect.succeed(failed.value as A))))

const countTool = (name: string, failed: boolean): Effect.Effect<void> => {
  const label = [MetricLabel.make(I.GenAi.toolName, name)]
  const calls = Metric.increment(Metric.taggedWithLabels(I.toolCalls, label))
  return failed ? Effect.zipRight(calls, Metric.increment(Metric.taggedWithLabels(I.toolErrors, label))) : calls
}

// ---------------------------------------------------------------------------
// runs

/** A run, for its `invoke_agent` span. */
export interface AgentSpan {
  /** `gen_ai.agent.name`: `ReactAgent`, `DagAgent`. */
  readonly name: string
  readonly mode: "react" | "dag"
  readonly conversationId: string
  readonly model: string
  /** The ReAct loop's protocol. */
  readonly protocol?: "native" | "json"
  readonly query: Content
}

/** How a run ended, for its `invoke_agent` span. */
export interface AgentOutcome {
  readonly usage: RunUsage
  readonly iterations: number
  readonly answer: string
  readonly cancelled: boolean
  readonly failure?: { readonly message: string; readonly type: string } | undefined
}

const outcomeOf = (outcome: AgentOutcome): "failed" | "cancelled" | "completed" =>
  outcome.failure !== undefined ? "failed" : outcome.cancelled ? "cancelled" : "completed"

class RunEnded extends Data.TaggedError("RunEnded")<{ readonly message: string }> {}

const recordRun = (name: string, outcome: string, started: number): Effect.Effect<void> =>
  Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const labels = [MetricLabel.make(I.GenAi.agentName, name), MetricLabel.make(I.Engine.outcome, outcome)]
    return Effect.zipRight(
      Metric.increment(Metric.taggedWithLabels(I.runs, labels)),
      Metric.update(Metric.taggedWithLabels(I.runDuration, labels), (now - started) / 1000)
    )
  })

/**
 * A run in an `invoke_agent {name}` span: the run's LLM and tool calls are its
 * children. The span ends with the run's usage and, for a failed or cancelled
 * run, an error status (`error.type`: the failure's type, or `cancelled`).
 */
export const agentSpan = <R>(
  run: AgentSpan,
  body: Effect.Effect<AgentOutcome, never, R>
): Effect.Effect<void, never, R> =>
  Effect.flatMap(
    instrumentation,
    (inst) =>
      Effect.flatMap(inst.metrics ? Clock.currentTimeMillis : Effect.succeed(0), (startedAt) =>
        Effect.useSpan(`invoke_agent ${run.name}`, INTERNAL, (span) => {
          span.attribute(I.GenAi.operationName, "invoke_agent")
          span.attribute(I.GenAi.agentName, run.name)
          span.attribute(I.GenAi.conversationId, run.conversationId)
          span.attribute(I.GenAi.requestModel, run.model)
          span.attribute(I.Engine.mode, run.mode)
          if (run.protocol !== undefined) {
            span.attribute(I.Engine.protocol, run.protocol)
          }
          if (inst.captureContent) {
            span.attribute(I.GenAi.inputMessages, GenAiContent.queryMessages(run.query))
          }
          return Effect.withParentSpan(body, span).pipe(
            Effect.onInterrupt(() => (inst.metrics ? recordRun(run.name, "cancelled", startedAt) : Effect.void)),
            Effect.flatMap((outcome) => {
              span.attribute(I.GenAi.inputTokens, outcome.usage.prompt_tokens)
              span.attribute(I.GenAi.outputTokens, outcome.usage.completion_tokens)
              const read = outcome.usage.cached_input_tokens ?? outcome.usage.cached_tokens
              if (read !== undefined) {
                span.attribute(I.GenAi.cachedInputTokens, read)
              }
              if (outcome.usage.cache_write_input_tokens !== undefined) {
                span.attribute(I.GenAi.cacheWriteInputTokens, outcome.usage.cache_write_input_tokens)
              }
              span.attribute(I.Engine.llmCalls, outcome.usage.llm_calls)
              span.attribute(I.Engine.iterations, outcome.iterations)
              if (inst.captureContent && outcome.answer !== "") {
                span.attribute(I.GenAi.outputMessages, GenAiContent.outputMessages(outcome.answer, [], "stop"))
              }
              const ended = outcomeOf(outcome)
              span.attribute(I.Engine.outcome, ended)
              const counted = inst.metrics ? recordRun(run.name, ended, startedAt) : Effect.void
              if (ended === "completed") {
                return counted
              }
              span.attribute(I.GenAi.errorType, outcome.failure?.type ?? "cancelled")
              return Effect.zipRight(
                counted,
                Effect.fail(new RunEnded({ message: outcome.failure?.message ?? "cancelled" }))
              )
            })
          )
        })).pipe(Effect.catchAll(() =>
          Effect.void
        ))
  )

// ---------------------------------------------------------------------------
// events

/** Adds an event to the current span (nothing when there is none). */
export const spanEvent = (name: string, attributes: Record<string, unknown>): Effect.Effect<void> =>
  Effect.currentSpan.pipe(
    Effect.flatMap((span) => Effect.map(Clock.currentTimeNanos, (now) => span.event(name, now, attributes))),
    Effect.catchAll(() => Effect.void)
  )
