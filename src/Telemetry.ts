/**
 * OpenTelemetry for the engine, after the GenAI semantic conventions (see
 * docs/observability.md).
 *
 * The engine's spans — `invoke_agent {agent}` per run, `chat {model}` per LLM
 * call, `execute_tool {tool}` per tool call, and spans for tool selection,
 * compaction, structured calls and the DAG phases — go to the Effect tracer in
 * context. The per-run and per-call ones are opened only when a tracer is
 * installed (any but Effect's built-in one): without one, the loop pays a
 * fiber-ref read per call, not a span. No stack traces are captured.
 * `layerConfig` installs an OTLP/HTTP exporter when `OTEL_EXPORTER_OTLP_ENDPOINT`
 * is set, with the metrics, and does nothing when it is not:
 *
 * ```ts
 * Layer.launch(MyApp).pipe(Effect.provide(Telemetry.layerConfig), NodeRuntime.runMain)
 * ```
 *
 * Message content (prompts, replies, tool arguments and results) is recorded only
 * with `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`; metrics only
 * with an exporter. Both are read once, when the layer is built, and reach the
 * engine through the `currentInstrumentation` fiber ref.
 *
 * The exporter is loaded on demand (`@effect/opentelemetry` and
 * `@effect/platform` are optional peer dependencies, needed only then).
 *
 * @since 0.1.0
 */
import type * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { dual } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Tracer from "effect/Tracer"
import * as Budget from "./Budget.js"
import * as TelemetryConfig from "./internal/telemetry/config.js"
import * as I from "./internal/telemetry/instrumentation.js"
import * as Spans from "./internal/telemetry/spans.js"
import type { ChatRequest, ChatResponse, LlmError, LlmService } from "./Llm.js"

// ---------------------------------------------------------------------------
// what the instrumentation records

/**
 * @since 0.1.0
 * @category models
 */
export type Instrumentation = I.Instrumentation

/**
 * What the engine records besides its spans; read by the engine at each run
 * and call. Default: neither content nor metrics.
 *
 * @since 0.1.0
 * @category Tracing
 */
export const currentInstrumentation = I.currentInstrumentation

/**
 * Sets `currentInstrumentation` for everything built over this layer (for an
 * application that installs its own tracer, e.g. `@effect/opentelemetry`'s `NodeSdk`).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerInstrumentation = (options: Partial<Instrumentation>): Layer.Layer<never> =>
  Layer.locallyScoped(I.currentInstrumentation, {
    captureContent: options.captureContent ?? false,
    metrics: options.metrics ?? false
  })

/**
 * The attribute names the engine sets: the GenAI conventions' (`gen_ai.*`,
 * `error.type`) and its own (`react_engine.*`).
 *
 * @since 0.1.0
 * @category constants
 */
export const attributes = { ...I.GenAi, ...I.Engine } as const

// ---------------------------------------------------------------------------
// metrics

/**
 * `react_engine.runs`: runs, by `gen_ai.agent.name` and `react_engine.outcome`
 * (`completed`, `failed`, `cancelled`).
 *
 * @since 0.1.0
 * @category metrics
 */
export const runs = I.runs

/**
 * `react_engine.run.duration`: run duration in seconds, same tags as `runs`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const runDuration = I.runDuration

/**
 * `gen_ai.client.token.usage`: tokens per LLM call, by `gen_ai.token.type`,
 * `gen_ai.request.model` and `react_engine.phase`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const tokenUsage = I.tokenUsage

/**
 * `react_engine.tool.calls`: tool calls, by `gen_ai.tool.name`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const toolCalls = I.toolCalls

/**
 * `react_engine.tool.errors`: tool calls that ended in an error observation, by `gen_ai.tool.name`.
 *
 * @since 0.1.0
 * @category metrics
 */
export const toolErrors = I.toolErrors

// ---------------------------------------------------------------------------
// spans

/**
 * @since 0.1.0
 * @category models
 */
export type ChatSpanOptions = Spans.ChatSpanOptions

/**
 * @since 0.1.0
 * @category models
 */
export type ChatReply = Spans.ChatReply

/**
 * One LLM call of any form (`effect`) in a `chat {model}` span: the request's
 * attributes, then the reply's (`observe` reads it off the result) — finish
 * reason, usage, and the content when captured. A failure sets `error.type`.
 *
 * @since 0.1.0
 * @category Tracing
 */
export const chatSpan: <A, E, R>(
  model: string,
  request: ChatRequest,
  options: ChatSpanOptions,
  effect: Effect.Effect<A, E, R>,
  observe: (a: A) => ChatReply
) => Effect.Effect<A, E, R> = Spans.chatSpan

/**
 * `llm.chat(request)` in a `chat {model}` span.
 *
 * @since 0.1.0
 * @category Tracing
 */
export const chat = (
  llm: LlmService,
  request: ChatRequest,
  options: ChatSpanOptions
): Effect.Effect<ChatResponse, LlmError> =>
  Spans.chatSpan(llm.model, request, options, Budget.chat(llm, request), (response) => response)

/**
 * @since 0.1.0
 * @category models
 */
export type ToolSpan = Spans.ToolSpan

/**
 * @since 0.1.0
 * @category models
 */
export type ToolReport = Spans.ToolReport

/**
 * One tool call in an `execute_tool {name}` span; `report` reads the outcome
 * off its result (`content`: whether arguments and result are captured). A call
 * whose report has an `error` ends the span with an error status.
 *
 * @since 0.1.0
 * @category Tracing
 */
export const toolSpan: {
  <A>(
    call: ToolSpan,
    report: (a: A, content: boolean) => ToolReport
  ): <R>(self: Effect.Effect<A, never, R>) => Effect.Effect<A, never, R>
  <A, R>(
    self: Effect.Effect<A, never, R>,
    call: ToolSpan,
    report: (a: A, content: boolean) => ToolReport
  ): Effect.Effect<A, never, R>
} = dual(
  3,
  <A, R>(self: Effect.Effect<A, never, R>, call: ToolSpan, report: (a: A, content: boolean) => ToolReport) =>
    Spans.toolSpan(call, self, report)
)

/**
 * @since 0.1.0
 * @category models
 */
export type AgentSpan = Spans.AgentSpan

/**
 * @since 0.1.0
 * @category models
 */
export type AgentOutcome = Spans.AgentOutcome

/**
 * A run in an `invoke_agent {name}` span, ended with the run's usage and, when
 * it failed or was cancelled, an error status.
 *
 * @since 0.1.0
 * @category Tracing
 */
export const agentSpan: <R>(
  run: AgentSpan,
  body: Effect.Effect<AgentOutcome, never, R>
) => Effect.Effect<void, never, R> = Spans.agentSpan

/**
 * Adds an event to the current span (hook decisions use it); nothing without one.
 *
 * @since 0.1.0
 * @category Tracing
 */
export const spanEvent: (name: string, attributes: Record<string, unknown>) => Effect.Effect<void> = Spans.spanEvent

// ---------------------------------------------------------------------------
// carrying a parent span to work that runs elsewhere

/**
 * A span as plain data, for work that does not run in the fiber that started
 * it (a background run, a durable workflow): capture it with `currentParent`,
 * store it with the work, resume under it with `withParent`.
 *
 * @since 0.1.0
 * @category models
 */
export const SpanParent = Schema.Struct({ traceId: Schema.String, spanId: Schema.String, sampled: Schema.Boolean })

/**
 * @since 0.1.0
 * @category models
 */
export type SpanParent = typeof SpanParent.Type

/**
 * The current span (the one new spans would be children of), if any.
 *
 * @since 0.1.0
 * @category Tracing
 */
export const currentParent: Effect.Effect<Option.Option<SpanParent>> = Effect.map(
  Effect.option(Effect.currentParentSpan),
  Option.map((span): SpanParent => ({ traceId: span.traceId, spanId: span.spanId, sampled: span.sampled }))
)

/**
 * Runs `self` with `parent` as its parent span (unchanged when `parent` is absent).
 *
 * @since 0.1.0
 * @category Tracing
 */
export const withParent: {
  (
    parent: SpanParent | Option.Option<SpanParent> | undefined
  ): <A, E, R>(self: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  <A, E, R>(
    self: Effect.Effect<A, E, R>,
    parent: SpanParent | Option.Option<SpanParent> | undefined
  ): Effect.Effect<A, E, R>
} = dual(2, <A, E, R>(self: Effect.Effect<A, E, R>, parent: SpanParent | Option.Option<SpanParent> | undefined) => {
  const value = parent === undefined ? undefined : Option.isOption(parent) ? Option.getOrUndefined(parent) : parent
  return value === undefined ? self : Effect.withParentSpan(self, Tracer.externalSpan(value))
})

// ---------------------------------------------------------------------------
// export

/**
 * Where and how to export (see `config` for the variables).
 *
 * @since 0.1.0
 * @category models
 */
export interface ExporterOptions {
  /** The collector's base URL; `/v1/traces` and `/v1/metrics` are appended. */
  readonly endpoint: string
  readonly protocol?: "http/protobuf" | "http/json"
  readonly headers?: Record<string, string>
  readonly serviceName: string
  readonly serviceVersion?: string
  /** Export metrics too (default true). */
  readonly metrics?: boolean
  /** Record message content (default false). */
  readonly captureContent?: boolean
  /** Default 5 s. */
  readonly traceExportInterval?: Duration.DurationInput
  /** Default 60 s. */
  readonly metricExportInterval?: Duration.DurationInput
  /** How long the last export may take at shutdown (default 3 s). */
  readonly shutdownTimeout?: Duration.DurationInput
}

/**
 * Exports the spans (and metrics) of everything built over this layer to an
 * OTLP/HTTP collector; flushes at shutdown.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: ExporterOptions): Layer.Layer<never> =>
  Layer.unwrapEffect(
    Effect.tryPromise({
      try: () => import("./internal/telemetry/otlp.js"),
      catch: (error) =>
        new Error(
          `Telemetry: the OTLP exporter could not be loaded (it needs @effect/opentelemetry and @effect/platform): ${
            String(error)
          }`
        )
    }).pipe(
      Effect.orDie,
      Effect.map((otlp) =>
        Layer.merge(
          otlp.layer({ ...options, metrics: options.metrics ?? true }),
          layerInstrumentation({ captureContent: options.captureContent ?? false, metrics: options.metrics ?? true })
        )
      )
    )
  )

/**
 * The telemetry settings from the environment (docs/configuration.md#telemetry):
 * `OTEL_SDK_DISABLED`, `OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_PROTOCOL`,
 * `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`, `OTEL_METRICS_EXPORTER`,
 * `OTEL_BSP_SCHEDULE_DELAY`, `OTEL_METRIC_EXPORT_INTERVAL`,
 * `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`.
 *
 * @since 0.1.0
 * @category config
 */
export const config = TelemetryConfig.config

/**
 * Telemetry configured from the environment: OTLP/HTTP export when
 * `OTEL_EXPORTER_OTLP_ENDPOINT` is set (and `OTEL_SDK_DISABLED` is not); nothing
 * otherwise (only the content flag, for an application with its own tracer).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<never, ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.gen(function*() {
    const settings = yield* config
    if (settings.disabled) return Layer.empty
    if (Option.isNone(settings.endpoint)) {
      return settings.captureContent ? layerInstrumentation({ captureContent: true }) : Layer.empty
    }
    const endpoint = settings.endpoint.value
    yield* Effect.logInfo(
      `Telemetry: exporting to ${
        endpoint.replace(/\/\/[^/@]*@/, "//")
      } (OTLP ${settings.protocol}) as "${settings.serviceName}"`
    )
    return layer({
      endpoint,
      protocol: settings.protocol,
      ...(Option.isSome(settings.headers)
        ? { headers: TelemetryConfig.parseHeaders(Redacted.value(settings.headers.value)) }
        : {}),
      serviceName: settings.serviceName,
      metrics: settings.metrics === "otlp",
      captureContent: settings.captureContent,
      traceExportInterval: Duration.millis(settings.traceExportIntervalMs),
      metricExportInterval: Duration.millis(settings.metricExportIntervalMs)
    })
  })
)
