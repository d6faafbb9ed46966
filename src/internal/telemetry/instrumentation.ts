/**
 * What the engine's instrumentation reads at run time: the settings the
 * telemetry layer installs (a `FiberRef`, off by default), the attribute names
 * (the OpenTelemetry GenAI conventions plus our own `react_engine.*`), and the
 * metrics.
 *
 * @internal
 */
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"

/** What the instrumentation records besides spans. */
export interface Instrumentation {
  /** Message content (prompts, replies, tool arguments and results) as span attributes. */
  readonly captureContent: boolean
  /** Metrics (runs, durations, tokens, tool calls and errors). */
  readonly metrics: boolean
}

/** Off by default: no content, no metric updates. */
export const currentInstrumentation: FiberRef.FiberRef<Instrumentation> = globalValue(
  Symbol.for("effect-react-engine/Telemetry/currentInstrumentation"),
  // a module-level FiberRef, made once as Effect's own are (globalValue keeps one per process)
  () => FiberRef.unsafeMake<Instrumentation>({ captureContent: false, metrics: false })
)

// ---------------------------------------------------------------------------
// attribute names

/** The GenAI semantic conventions' attribute names the engine sets. */
export const GenAi = {
  operationName: "gen_ai.operation.name",
  requestModel: "gen_ai.request.model",
  requestMaxTokens: "gen_ai.request.max_tokens",
  requestTemperature: "gen_ai.request.temperature",
  requestStream: "gen_ai.request.stream",
  outputType: "gen_ai.output.type",
  finishReasons: "gen_ai.response.finish_reasons",
  inputTokens: "gen_ai.usage.input_tokens",
  outputTokens: "gen_ai.usage.output_tokens",
  cachedInputTokens: "gen_ai.usage.cache_read.input_tokens",
  cacheWriteInputTokens: "gen_ai.usage.cache_creation.input_tokens",
  agentName: "gen_ai.agent.name",
  conversationId: "gen_ai.conversation.id",
  toolName: "gen_ai.tool.name",
  toolCallId: "gen_ai.tool.call.id",
  toolType: "gen_ai.tool.type",
  toolCallArguments: "gen_ai.tool.call.arguments",
  toolCallResult: "gen_ai.tool.call.result",
  systemInstructions: "gen_ai.system_instructions",
  inputMessages: "gen_ai.input.messages",
  outputMessages: "gen_ai.output.messages",
  tokenType: "gen_ai.token.type",
  errorType: "error.type"
} as const

/** The engine's own attribute names. */
export const Engine = {
  /** The usage phase an LLM call counts for (`Usage.Phase`). */
  phase: "react_engine.phase",
  /** The loop iteration of an LLM or tool call. */
  iteration: "react_engine.iteration",
  /** `react` or `dag`. */
  mode: "react_engine.mode",
  /** The ReAct loop's tool protocol: `native` or `json`. */
  protocol: "react_engine.protocol",
  /** The level of a structured call's LLM call (`native`, `json`, `text`), and of its result (`default` too). */
  structuredLevel: "react_engine.structured.level",
  structuredFunction: "react_engine.structured.function",
  llmCalls: "react_engine.llm_calls",
  iterations: "react_engine.iterations",
  outcome: "react_engine.outcome",
  round: "react_engine.dag.round",
  stepId: "react_engine.dag.step.id",
  stepStatus: "react_engine.dag.step.status",
  hookName: "react_engine.hook.name",
  hookDecision: "react_engine.hook.decision",
  hookReason: "react_engine.hook.reason"
} as const

// ---------------------------------------------------------------------------
// metrics

/** Runs by agent and outcome (`completed`, `failed`, `cancelled`). */
export const runs = Metric.counter("react_engine.runs", {
  description: "Agent runs, by gen_ai.agent.name and react_engine.outcome",
  incremental: true
})

/** Run duration in seconds. */
export const runDuration = Metric.histogram(
  "react_engine.run.duration",
  MetricBoundaries.fromIterable([0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800]),
  "Agent run duration in seconds, by gen_ai.agent.name and react_engine.outcome"
)

/** Tokens per LLM call (the GenAI conventions' client metric), by type, model and phase. */
export const tokenUsage = Metric.histogram(
  "gen_ai.client.token.usage",
  MetricBoundaries.fromIterable([1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304]),
  "Tokens per LLM call, by gen_ai.token.type (input, output), gen_ai.request.model and react_engine.phase"
)

/** Tool calls by tool name. */
export const toolCalls = Metric.counter("react_engine.tool.calls", {
  description: "Tool calls, by gen_ai.tool.name",
  incremental: true
})

/** Tool calls that ended in an error observation, by tool name. */
export const toolErrors = Metric.counter("react_engine.tool.errors", {
  description: "Tool calls that failed (error, timeout, blocked, bad arguments, unknown tool), by gen_ai.tool.name",
  incremental: true
})
