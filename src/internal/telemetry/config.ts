/**
 * The telemetry variables (the OpenTelemetry SDK's names where there is one).
 *
 * @internal
 */
import * as Config from "effect/Config"
import * as Option from "effect/Option"

const flag = (name: string) => Config.boolean(name).pipe(Config.withDefault(false))

const millis = (name: string, fallback: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: `${name} must be an integer >= 1 (milliseconds)`, validation: (n) => n >= 1 }),
    Config.withDefault(fallback)
  )

/** `k1=v1,k2=v2`, values URL-encoded (the OpenTelemetry format). */
export const parseHeaders = (raw: string): Record<string, string> => {
  const headers: Record<string, string> = {}
  for (const pair of raw.split(",")) {
    const at = pair.indexOf("=")
    if (at <= 0) continue
    const value = pair.slice(at + 1).trim()
    let decoded = value
    try {
      decoded = decodeURIComponent(value)
    } catch {
      // kept as written
    }
    headers[pair.slice(0, at).trim()] = decoded
  }
  return headers
}

/** The settings `Telemetry.layerConfig` reads. */
export const config = Config.all({
  disabled: flag("OTEL_SDK_DISABLED"),
  endpoint: Config.option(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT")).pipe(
    Config.map(Option.map((s) => s.trim())),
    Config.map(Option.filter((s) => s !== "")),
    Config.validate({
      message: "OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL, e.g. http://localhost:4318",
      validation: (endpoint) => Option.isNone(endpoint) || /^https?:\/\/[^/]/i.test(endpoint.value)
    })
  ),
  protocol: Config.literal("http/protobuf", "http/json")("OTEL_EXPORTER_OTLP_PROTOCOL").pipe(
    Config.withDefault("http/protobuf" as const)
  ),
  headers: Config.option(Config.redacted("OTEL_EXPORTER_OTLP_HEADERS")),
  serviceName: Config.string("OTEL_SERVICE_NAME").pipe(
    Config.map((s) => s.trim()),
    Config.withDefault("effect-react-engine"),
    Config.map((s) => (s === "" ? "effect-react-engine" : s))
  ),
  metrics: Config.literal("otlp", "none")("OTEL_METRICS_EXPORTER").pipe(Config.withDefault("otlp" as const)),
  traceExportIntervalMs: millis("OTEL_BSP_SCHEDULE_DELAY", 5000),
  metricExportIntervalMs: millis("OTEL_METRIC_EXPORT_INTERVAL", 60_000),
  captureContent: flag("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT")
})
