/**
 * Spans as an OpenTelemetry SDK sees them: `@effect/opentelemetry`'s tracer over
 * a `BasicTracerProvider` whose processors note the start order and hand finished
 * spans to the SDK's `InMemorySpanExporter`; plus a deterministic rendering of the
 * span tree (names, kinds, statuses, attributes, events — no ids, no timings).
 */
import * as Resource from "@effect/opentelemetry/Resource"
import * as OtelTracer from "@effect/opentelemetry/Tracer"
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  type SpanProcessor
} from "@opentelemetry/sdk-trace-base"
import * as Layer from "effect/Layer"

const KINDS = ["internal", "server", "client", "producer", "consumer"]
const STATUS = ["unset", "ok", "error"]

export interface SpanRecorder {
  /** Provide to the program under test: its spans go to the exporter. */
  readonly layer: Layer.Layer<OtelTracer.OtelTracer>
  /** Finished spans, in start order. */
  readonly spans: () => ReadonlyArray<ReadableSpan>
  readonly reset: () => void
}

export const makeSpanRecorder = (): SpanRecorder => {
  const exporter = new InMemorySpanExporter()
  const started = new Map<string, number>()
  const order: SpanProcessor = {
    onStart: (span) => void started.set(span.spanContext().spanId, started.size),
    onEnd: () => undefined,
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve()
  }
  const provider = new BasicTracerProvider({ spanProcessors: [order, new SimpleSpanProcessor(exporter)] })
  const layer = OtelTracer.layer.pipe(
    Layer.provide(Layer.succeed(OtelTracer.OtelTracerProvider, provider)),
    Layer.provide(Resource.layer({ serviceName: "test" }))
  )
  const rank = (s: ReadableSpan) => started.get(s.spanContext().spanId) ?? Infinity
  return {
    layer,
    spans: () => [...exporter.getFinishedSpans()].sort((a, b) => rank(a) - rank(b)),
    reset: () => {
      exporter.reset()
      started.clear()
    }
  }
}

/** Strings as they are (JSON-quoted when they span lines), other values as JSON. */
const show = (value: unknown): string =>
  typeof value === "string" ? (value.includes("\n") ? JSON.stringify(value) : value) : JSON.stringify(value)

/**
 * The span tree, one line per span and per attribute / event, children in start
 * order. `attributes`: which attributes to show (default all).
 */
export const renderTree = (
  spans: ReadonlyArray<ReadableSpan>,
  options: { readonly attributes?: (key: string) => boolean } = {}
): string => {
  const ids = new Set(spans.map((s) => s.spanContext().spanId))
  const children = new Map<string | undefined, Array<ReadableSpan>>()
  for (const s of spans) {
    const parent = s.parentSpanContext?.spanId
    const key = parent !== undefined && ids.has(parent) ? parent : undefined
    children.set(key, [...(children.get(key) ?? []), s])
  }
  const keep = options.attributes ?? (() => true)
  const lines: Array<string> = []
  const walk = (s: ReadableSpan, depth: number) => {
    const pad = "  ".repeat(depth)
    const status = STATUS[s.status.code] + (s.status.message ? `: ${s.status.message}` : "")
    lines.push(`${pad}${s.name} (${KINDS[s.kind]}, ${status})`)
    for (const key of Object.keys(s.attributes).sort()) {
      if (keep(key)) lines.push(`${pad}  · ${key} = ${show(s.attributes[key])}`)
    }
    for (const e of s.events) {
      const attrs = Object.entries(e.attributes ?? {}).filter(([k]) => k !== "exception.stacktrace")
      lines.push(
        `${pad}  ! ${e.name}${attrs.length > 0 ? ` ${attrs.map(([k, v]) => `${k}=${show(v)}`).join(" ")}` : ""}`
      )
    }
    for (const c of children.get(s.spanContext().spanId) ?? []) walk(c, depth + 1)
  }
  for (const root of children.get(undefined) ?? []) walk(root, 0)
  return lines.join("\n")
}

/** The value of an attribute of a span (as the SDK holds it). */
export const attr = (span: ReadableSpan, key: string): unknown => span.attributes[key]
