/**
 * The streamed loop call (synthesis `auto`, src/internal/reactAgent/answerStream.ts),
 * seen from what it shows and what it reports: the events of a reply's text
 * (one `AnswerStart`, one `AnswerDelta` per non-empty text delta), the reply
 * assembled from raw provider deltas (a call at an index the provider skipped,
 * the finish reason a stream sent — or, without one, `tool_calls` / `stop`),
 * its `chat` span (phase, iteration, the stream flag, the finish reason) and
 * the plain call's span after a broken stream, and recovery: a context overflow
 * before any text goes to the loop's overflow retry (streamed again), one after
 * text was shown is retracted and asked again without streaming, and a stream
 * that dies when no retry is left fails the run with the defect's message.
 *
 * The n-th streamed call plays `streams[n]` when given (raw deltas), else the
 * `ScriptedLlm` script; every request is recorded.
 */
import { assert, describe, it } from "@effect/vitest"
import type { ReadableSpan } from "@opentelemetry/sdk-trace-base"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as Interrupts from "../src/Interrupts.js"
import * as Llm from "../src/Llm.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Telemetry from "../src/Telemetry.js"
import * as Toolkit from "../src/Toolkit.js"
import * as Usage from "../src/Usage.js"
import { echoTool, noHooks, recordingGuard } from "./utils/agentLayers.js"
import { attr, makeSpanRecorder } from "./utils/spans.js"

const A = Telemetry.attributes

/**
 * An agent (native, synthesis `auto`) whose n-th streamed call is `streams[n]`
 * when given; `noRetry`: the model's `oneCall` has no retry left (`again` fails
 * with the error, as a provider whose retries are spent).
 */
const agentWith = (
  streams: ReadonlyArray<Stream.Stream<Llm.ChatDelta, Llm.LlmError> | undefined>,
  script: ReadonlyArray<ScriptedLlm.ScriptStep>,
  options: { readonly noRetry?: boolean } = {}
) => {
  const scripted = ScriptedLlm.makeUnsafe(script)
  const methods: Array<"chat" | "stream"> = []
  let streamed = 0
  const service: Llm.LlmService = {
    ...scripted.service,
    chat: (request) => Effect.suspend(() => (methods.push("chat"), scripted.service.chat(request))),
    streamChat: (request) =>
      Stream.suspend(() => {
        methods.push("stream")
        return streams[streamed++] ?? scripted.service.streamChat(request)
      }),
    ...(options.noRetry === true ? { oneCall: (body) => body((error) => Effect.fail(error)) } : {})
  }
  const deps = Layer.mergeAll(
    Layer.succeed(Llm.Llm, service),
    Toolkit.layer([echoTool]),
    noHooks,
    recordingGuard().layer,
    Interrupts.layerMemory
  )
  const layer = ReactAgent.layer({ synthesis: "auto", completionCheck: false }).pipe(
    Layer.provideMerge(deps),
    Layer.orDie
  )
  return { layer, methods }
}

const run = Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runCollect(a.run({ query: "go" }))).pipe(
  Effect.map(Chunk.toArray)
)

const tags = (events: ReadonlyArray<RunEvent>) => events.map((e) => e._tag)

const doneOf = (events: ReadonlyArray<RunEvent>) => {
  const last = events[events.length - 1]
  if (last._tag !== "Done") throw new Error(`last event is ${last._tag}`)
  return last
}

const chatSpans = (spans: ReadonlyArray<ReadableSpan>) => spans.filter((s) => s.name.startsWith("chat "))

/** The `gen_ai.response.finish_reasons` of a span (the tracer stores an array as JSON text). */
const finishReasons = (span: ReadableSpan): unknown => {
  const value = attr(span, A.finishReasons)
  return typeof value === "string" ? JSON.parse(value) : value
}

const echoCall = (index: number, id: string): Llm.ChatDelta => ({
  _tag: "ToolCall",
  index,
  id,
  name: "echo",
  arguments: "{\"text\":\"hi\"}"
})

describe("ReactAgent streamed loop call: events, reply and span", () => {
  it.effect("a text reply: one AnswerStart, a delta per text piece; the span says loop, iteration, stream and the provider's finish reason", () => {
    const recorder = makeSpanRecorder()
    const a = agentWith([
      Stream.fromIterable<Llm.ChatDelta>([
        { _tag: "Content", text: "Hel" },
        { _tag: "Content", text: "" },
        { _tag: "Content", text: "lo" },
        { _tag: "Usage", usage: Usage.make(20, 2) },
        { _tag: "Finish", reason: "length" }
      ])
    ], [])
    return Effect.gen(function*() {
      const es = yield* run
      assert.deepStrictEqual(tags(es), [
        "ThinkingStart",
        "AnswerStart",
        "AnswerDelta",
        "AnswerDelta",
        "ThinkingDone",
        "AnswerSignal",
        "AnswerDone",
        "Done"
      ])
      assert.deepStrictEqual(es.flatMap((e) => (e._tag === "AnswerDelta" ? [e.content] : [])), ["Hel", "lo"])
      assert.strictEqual(doneOf(es).answer, "Hello")
      assert.deepStrictEqual(a.methods, ["stream"])
      const [span] = chatSpans(recorder.spans())
      assert.strictEqual(attr(span, A.phase), "loop")
      assert.strictEqual(attr(span, A.iteration), 1)
      assert.strictEqual(attr(span, A.requestStream), true)
      assert.deepStrictEqual(finishReasons(span), ["length"])
    }).pipe(Effect.provide(a.layer), Effect.provide(recorder.layer))
  })

  it.effect("a stream without a Finish delta: the reply's finish reason is tool_calls with calls, stop without", () => {
    const recorder = makeSpanRecorder()
    const a = agentWith([
      Stream.fromIterable<Llm.ChatDelta>([echoCall(0, "call_a")]),
      Stream.fromIterable<Llm.ChatDelta>([{ _tag: "Content", text: "done" }])
    ], [])
    return Effect.gen(function*() {
      const es = yield* run
      assert.strictEqual(doneOf(es).answer, "done")
      const spans = chatSpans(recorder.spans())
      assert.deepStrictEqual(spans.map(finishReasons), [["tool_calls"], ["stop"]])
      assert.deepStrictEqual(spans.map((s) => attr(s, A.iteration)), [1, 2])
    }).pipe(Effect.provide(a.layer), Effect.provide(recorder.layer))
  })

  it.effect("a call at an index the provider skipped is the reply's only call", () => {
    const a = agentWith([
      Stream.fromIterable<Llm.ChatDelta>([echoCall(1, "call_b"), { _tag: "Finish", reason: "tool_calls" }])
    ], [
      ScriptedLlm.text("done")
    ])
    return Effect.gen(function*() {
      const es = yield* run
      assert.deepStrictEqual(
        es.flatMap((e) => (e._tag === "ToolStart" ? [[e.tool_name, e.tool_call_id]] : [])),
        [["echo", "call_b"]]
      )
      assert.deepStrictEqual(es.flatMap((e) => (e._tag === "ToolDone" ? [e.observation] : [])), ["echo: hi"])
      assert.strictEqual(doneOf(es).answer, "done")
    }).pipe(Effect.provide(a.layer))
  })

  it.effect("an empty text delta before a tool call shows nothing: no AnswerStart, nothing to retract", () => {
    const a = agentWith([Stream.fromIterable<Llm.ChatDelta>([{ _tag: "Content", text: "" }, echoCall(0, "call_c")])], [
      ScriptedLlm.text("done")
    ])
    return Effect.gen(function*() {
      const es = yield* run
      const t = tags(es)
      assert.deepStrictEqual(t.slice(0, 5), ["ThinkingStart", "ThinkingDone", "ToolStart", "ToolDone", "ThinkingStart"])
      assert.strictEqual(t.filter((x) => x === "AnswerReset").length, 0)
      assert.strictEqual(t.filter((x) => x === "AnswerStart").length, 1)
      assert.strictEqual(doneOf(es).answer, "done")
    }).pipe(Effect.provide(a.layer))
  })
})

describe("ReactAgent streamed loop call: recovery", () => {
  it.effect("a context overflow before any text: the loop's overflow retry, streamed again (no plain call)", () => {
    const guard = recordingGuard()
    const scripted = ScriptedLlm.makeUnsafe([
      ScriptedLlm.fail("ContextOverflow"),
      ScriptedLlm.text("after the overflow")
    ])
    const deps = Layer.mergeAll(scripted.layer, Toolkit.layer([echoTool]), noHooks, guard.layer, Interrupts.layerMemory)
    const layer = ReactAgent.layer({ synthesis: "auto", completionCheck: false }).pipe(
      Layer.provideMerge(deps),
      Layer.orDie
    )
    return Effect.gen(function*() {
      const es = yield* run
      assert.deepStrictEqual(scripted.requests.map((r) => r.method), ["stream", "stream"])
      // the forced check of the overflow retry ran (half the guard's budget)
      assert.strictEqual(guard.checks.filter((c) => c?.budget !== undefined).length, 1)
      assert.isFalse(tags(es).includes("AnswerReset"))
      assert.strictEqual(doneOf(es).answer, "after the overflow")
    }).pipe(Effect.provide(layer))
  })

  it.effect("a context overflow after text was shown: retracted and asked again without streaming; that call's span is the loop's", () => {
    const recorder = makeSpanRecorder()
    const a = agentWith([], [
      ScriptedLlm.text("partial answer here", { failAfterChunks: { count: 1, reason: "ContextOverflow" } }),
      ScriptedLlm.text("plain answer")
    ])
    return Effect.gen(function*() {
      const es = yield* run
      assert.deepStrictEqual(a.methods, ["stream", "chat"])
      const t = tags(es)
      assert.deepStrictEqual(t.slice(0, 4), ["ThinkingStart", "AnswerStart", "AnswerDelta", "AnswerReset"])
      assert.strictEqual(doneOf(es).answer, "plain answer")
      const spans = chatSpans(recorder.spans())
      assert.strictEqual(spans.length, 2)
      assert.strictEqual(attr(spans[0], A.errorType), "ContextOverflow")
      assert.deepStrictEqual(
        [attr(spans[1], A.phase), attr(spans[1], A.iteration), attr(spans[1], A.requestStream)],
        ["loop", 1, undefined]
      )
    }).pipe(Effect.provide(a.layer), Effect.provide(recorder.layer))
  })

  it.effect("a stream that dies when no retry is left: the run fails with the defect's message", () => {
    const a = agentWith([Stream.die(new Error("socket torn"))], [ScriptedLlm.text("never asked")], { noRetry: true })
    return Effect.gen(function*() {
      const es = yield* run
      const failed = es.find((e) => e._tag === "RunFailed")
      assert.isDefined(failed)
      assert.include(failed?._tag === "RunFailed" ? failed.message : "", "socket torn")
      assert.deepStrictEqual(a.methods, ["stream"])
    }).pipe(Effect.provide(a.layer))
  })
})
