/**
 * The OTLP/HTTP exporters (`@effect/opentelemetry`'s `OtlpTracer` and
 * `OtlpMetrics` over the platform's fetch `HttpClient`). Loaded by
 * `Telemetry.layer` with a dynamic `import()` only when an endpoint is set, so
 * the library entry needs neither `@effect/opentelemetry` nor `@effect/platform`
 * otherwise.
 *
 * @internal
 */
import * as OtlpMetrics from "@effect/opentelemetry/OtlpMetrics"
import * as OtlpSerialization from "@effect/opentelemetry/OtlpSerialization"
import * as OtlpTracer from "@effect/opentelemetry/OtlpTracer"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Layer from "effect/Layer"
import type { ExporterOptions } from "../../Telemetry.js"

/** The exporters of `options` (traces always, metrics unless turned off). */
export const layer = (options: ExporterOptions): Layer.Layer<never> => {
  const base = options.endpoint.replace(/\/+$/, "")
  const resource = {
    serviceName: options.serviceName,
    ...(options.serviceVersion !== undefined ? { serviceVersion: options.serviceVersion } : {})
  }
  const tracer = OtlpTracer.layer({
    url: `${base}/v1/traces`,
    resource,
    headers: options.headers,
    exportInterval: options.traceExportInterval,
    shutdownTimeout: options.shutdownTimeout
  })
  const metrics = options.metrics
    ? OtlpMetrics.layer({
      url: `${base}/v1/metrics`,
      resource,
      headers: options.headers,
      exportInterval: options.metricExportInterval,
      shutdownTimeout: options.shutdownTimeout
    })
    : Layer.empty
  return Layer.merge(tracer, metrics).pipe(
    Layer.provide(options.protocol === "http/json" ? OtlpSerialization.layerJson : OtlpSerialization.layerProtobuf),
    Layer.provide(FetchHttpClient.layer)
  )
}
