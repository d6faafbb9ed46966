/**
 * Telemetry's metrics, parent spans carried as data, and its layers (the
 * variables, export to a stand-in collector).
 */
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Metric from "effect/Metric"
import * as MetricLabel from "effect/MetricLabel"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Telemetry from "../src/Telemetry.js"
import * as Tool from "../src/Tool.js"
import { makeAgent } from "./utils/agentLayers.js"
import * as OtlpCollector from "./utils/otlpCollector.js"
import { makeSpanRecorder } from "./utils/spans.js"
import { agentOptions, parallelScript, rewriteEcho, runCollect } from "./utils/telemetryRuns.js"

const A = Telemetry.attributes

const labels = (pairs: Record<string, string>) => Object.entries(pairs).map(([k, v]) => MetricLabel.make(k, v))
const counter = (metric: typeof Telemetry.runs, pairs: Record<string, string>) =>
  Effect.map(Metric.value(Metric.taggedWithLabels(metric, labels(pairs))), (s) => s.count)
const histogram = (metric: typeof Telemetry.tokenUsage, pairs: Record<string, string>) =>
  Effect.map(Metric.value(Metric.taggedWithLabels(metric, labels(pairs))), (s) => ({ count: s.count, sum: s.sum }))

describe("Telemetry: metrics", () => {
  const snapshot = Effect.all({
    runs: counter(Telemetry.runs, { [A.agentName]: "ReactAgent", [A.outcome]: "completed" }),
    durations: histogram(Telemetry.runDuration, { [A.agentName]: "ReactAgent", [A.outcome]: "completed" }),
    loopInput: histogram(Telemetry.tokenUsage, {
      [A.requestModel]: "metered",
      [A.phase]: "loop",
      [A.tokenType]: "input"
    }),
    synthesisOutput: histogram(Telemetry.tokenUsage, {
      [A.requestModel]: "metered",
      [A.phase]: "synthesis",
      [A.tokenType]: "output"
    }),
    addCalls: counter(Telemetry.toolCalls, { [A.toolName]: "add" }),
    failErrors: counter(Telemetry.toolErrors, { [A.toolName]: "fail" }),
    addErrors: counter(Telemetry.toolErrors, { [A.toolName]: "add" })
  })

  it.effect("recorded with the telemetry layer (with or without a tracer): runs, run duration, tokens by phase, tool calls and errors", () => {
    const metered = () =>
      makeAgent(parallelScript, { hooks: rewriteEcho, agent: agentOptions, llm: { model: "metered" } }).layer
    const run = runCollect("add 1 and 2, and echo hi")
    const delta = (before: Effect.Effect.Success<typeof snapshot>, after: Effect.Effect.Success<typeof snapshot>) => ({
      runs: after.runs - before.runs,
      durations: after.durations.count - before.durations.count,
      loopInput: {
        count: after.loopInput.count - before.loopInput.count,
        sum: after.loopInput.sum - before.loopInput.sum
      },
      synthesisOutput: after.synthesisOutput.sum - before.synthesisOutput.sum,
      addCalls: after.addCalls - before.addCalls,
      failErrors: after.failErrors - before.failErrors,
      addErrors: after.addErrors - before.addErrors
    })
    const expected = {
      runs: 1,
      durations: 1,
      loopInput: { count: 3, sum: 100 + 140 + 180 },
      synthesisOutput: 7,
      addCalls: 1,
      failErrors: 1,
      addErrors: 0
    }
    const metrics = Telemetry.layerInstrumentation({ metrics: true })
    return Effect.gen(function*() {
      const start = yield* snapshot
      yield* run.pipe(Effect.provide(metered()), Effect.provide(metrics), Effect.provide(makeSpanRecorder().layer))
      const traced = yield* snapshot
      assert.deepStrictEqual(delta(start, traced), expected)
      yield* run.pipe(Effect.provide(metered()), Effect.provide(metrics))
      const untraced = yield* snapshot
      assert.deepStrictEqual(delta(traced, untraced), expected)
      // without the layer: nothing is recorded
      yield* run.pipe(Effect.provide(metered()))
      assert.deepStrictEqual(yield* snapshot, untraced)
    })
  })
})

describe("Telemetry: parents and layers", () => {
  it.effect("a tool runs in its execute_tool span whichever tracer is installed (the engine does not look at it)", () => {
    const recorder = makeSpanRecorder()
    const seen: Array<string> = []
    const probe = Tool.make({
      name: "probe",
      description: "Notes the current span",
      parameters: Schema.Struct({}),
      handler: () =>
        Effect.map(Effect.option(Effect.currentSpan), (span) => {
          seen.push(Option.match(span, { onNone: () => "none", onSome: (s) => s.name }))
          return "ok"
        })
    })
    const script = [ScriptedLlm.toolCall("probe", {}), ScriptedLlm.text("ok"), ScriptedLlm.text("ok")]
    return Effect.gen(function*() {
      yield* runCollect("probe").pipe(
        Effect.withSpan("caller"),
        Effect.provide(makeAgent(script, { tools: [probe], agent: agentOptions }).layer)
      )
      yield* runCollect("probe").pipe(
        Effect.withSpan("caller"),
        Effect.provide(makeAgent(script, { tools: [probe], agent: agentOptions }).layer),
        Effect.provide(recorder.layer)
      )
      assert.deepStrictEqual(seen, ["execute_tool probe", "execute_tool probe"])
      // the span's parent is the caller's, with the recording tracer too
      const tool = recorder.spans().find((s) => s.name === "execute_tool probe")!
      const run = recorder.spans().find((s) => s.name === "invoke_agent ReactAgent")!
      assert.strictEqual(tool.parentSpanContext?.spanId, run.spanContext().spanId)
    })
  })

  it.effect("currentParent / withParent: a run started elsewhere is a child of the span that asked for it", () => {
    const recorder = makeSpanRecorder()
    const h = makeAgent([ScriptedLlm.text("hi"), ScriptedLlm.text("hi")], { agent: agentOptions })
    return Effect.gen(function*() {
      const parent = yield* Telemetry.currentParent.pipe(Effect.withSpan("POST /api/react"))
      assert.isTrue(Option.isSome(parent))
      // e.g. a durable workflow: the parent travels as data (it has a schema), the run resumes under it
      const carried = Schema.decodeUnknownSync(Telemetry.SpanParent)(
        JSON.parse(JSON.stringify(Option.getOrThrow(parent)))
      )
      yield* runCollect("hello").pipe(Telemetry.withParent(carried))
      const spans = recorder.spans()
      const request = spans.find((s) => s.name === "POST /api/react")!
      const agent = spans.find((s) => s.name === "invoke_agent ReactAgent")!
      assert.strictEqual(agent.parentSpanContext?.spanId, request.spanContext().spanId)
      assert.strictEqual(agent.spanContext().traceId, request.spanContext().traceId)
      assert.isTrue(Option.isNone(yield* Telemetry.currentParent))
    }).pipe(Effect.provide(h.layer), Effect.provide(recorder.layer))
  })

  it.scopedLive("layerConfig: nothing without OTEL_EXPORTER_OTLP_ENDPOINT; with it, spans reach the collector (protobuf, or JSON)", () =>
    Effect.gen(function*() {
      const collector = yield* OtlpCollector.scoped
      const withEnv = (entries: ReadonlyArray<[string, string]>) =>
        Telemetry.layerConfig.pipe(Layer.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(entries)))))
      const observe = Effect.all({
        tracer: Effect.tracer,
        instrumentation: FiberRef.get(Telemetry.currentInstrumentation)
      }).pipe(
        Effect.tap(() => Effect.withSpan(Effect.void, "probe", { attributes: { "probe.n": 1 } }))
      )
      const plain = yield* observe
      assert.deepStrictEqual(plain.instrumentation, { captureContent: false, metrics: false })
      assert.strictEqual((yield* observe.pipe(Effect.provide(withEnv([])))).tracer, plain.tracer)
      const endpoint: [string, string] = ["OTEL_EXPORTER_OTLP_ENDPOINT", collector.url]
      const disabled = yield* observe.pipe(Effect.provide(withEnv([endpoint, ["OTEL_SDK_DISABLED", "true"]])))
      assert.strictEqual(disabled.tracer, plain.tracer)
      assert.lengthOf(collector.exports, 0)

      const exporting = yield* observe.pipe(Effect.provide(withEnv([endpoint])))
      assert.notStrictEqual(exporting.tracer, plain.tracer)
      assert.deepStrictEqual(exporting.instrumentation, { captureContent: false, metrics: true })
      // flushed when the layer closed
      const [probe] = collector.spans()
      assert.deepStrictEqual([probe.name, probe.service, probe.attributes["probe.n"]], [
        "probe",
        "effect-react-engine",
        1
      ])
      assert.isTrue(
        collector.exports.some((e) => e.path === "/v1/traces" && e.contentType === "application/x-protobuf")
      )
      assert.isTrue(collector.exports.some((e) => e.path === "/v1/metrics"))

      const json = yield* observe.pipe(Effect.provide(withEnv([
        [endpoint[0], `${collector.url}/`],
        ["OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"],
        ["OTEL_METRICS_EXPORTER", "none"],
        ["OTEL_SERVICE_NAME", "my-agent"],
        ["OTEL_EXPORTER_OTLP_HEADERS", "x-team=agents,authorization=Bearer%20abc"]
      ])))
      assert.isFalse(json.instrumentation.metrics)
      const last = collector.exports[collector.exports.length - 1]
      assert.strictEqual(last.path, "/v1/traces")
      assert.strictEqual(last.contentType, "application/json")
      assert.strictEqual(last.headers["x-team"], "agents")
      assert.strictEqual(last.headers["authorization"], "Bearer abc")
      assert.strictEqual(collector.spans().filter((s) => s.service === "my-agent").length, 1)

      const bad = yield* Effect.flip(
        observe.pipe(Effect.provide(withEnv([["OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"]])))
      )
      assert.include(String(bad), "OTEL_EXPORTER_OTLP_ENDPOINT")
    }).pipe(Logger.withMinimumLogLevel(LogLevel.Warning)))
})
