/**
 * The engine's spans through the OpenTelemetry SDK (an in-memory exporter) over
 * scripted runs: the span tree, usage on the chat spans against `done.usage`,
 * message content only with the flag, cancelled and failed runs (metrics, parent
 * spans and the layers: Telemetry.layers.test.ts).
 */
import { assert, describe, expect, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as ContextGuard from "../src/ContextGuard.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Telemetry from "../src/Telemetry.js"
import * as Tool from "../src/Tool.js"
import type * as Usage from "../src/Usage.js"
import { allTools, makeAgent } from "./utils/agentLayers.js"
import { dagEvents, doneOf, makeDag, planReply, stepText } from "./utils/dagLayers.js"
import { attr, makeSpanRecorder, renderTree } from "./utils/spans.js"
import { agentOptions, CID, parallelScript, rewriteEcho, runCollect } from "./utils/telemetryRuns.js"

const A = Telemetry.attributes

describe("Telemetry: spans", () => {
  it.effect("a native run with two parallel tool calls: the span tree", () => {
    const recorder = makeSpanRecorder()
    const h = makeAgent(parallelScript, { hooks: rewriteEcho, agent: agentOptions })
    return Effect.gen(function*() {
      const result = yield* runCollect("add 1 and 2, and echo hi")
      assert.strictEqual(result.answer, "**3** and echo: hello")
      expect(renderTree(recorder.spans())).toMatchInlineSnapshot(`
        "invoke_agent ReactAgent (internal, ok)
          · gen_ai.agent.name = ReactAgent
          · gen_ai.conversation.id = conv-telemetry
          · gen_ai.operation.name = invoke_agent
          · gen_ai.request.model = scripted
          · gen_ai.usage.input_tokens = 640
          · gen_ai.usage.output_tokens = 30
          · react_engine.iterations = 3
          · react_engine.llm_calls = 4
          · react_engine.mode = react
          · react_engine.outcome = completed
          · react_engine.protocol = native
          chat scripted (client, ok)
            · gen_ai.operation.name = chat
            · gen_ai.request.model = scripted
            · gen_ai.response.finish_reasons = "[\\n  \\"tool_calls\\"\\n]"
            · gen_ai.usage.input_tokens = 100
            · gen_ai.usage.output_tokens = 12
            · react_engine.iteration = 1
            · react_engine.phase = loop
          execute_tool add (internal, ok)
            · gen_ai.operation.name = execute_tool
            · gen_ai.tool.call.id = call_add
            · gen_ai.tool.name = add
            · gen_ai.tool.type = function
            · react_engine.iteration = 1
          execute_tool echo (internal, ok)
            · gen_ai.operation.name = execute_tool
            · gen_ai.tool.call.id = call_echo
            · gen_ai.tool.name = echo
            · gen_ai.tool.type = function
            · react_engine.iteration = 1
            ! hook PreToolUse react_engine.hook.name=polite react_engine.hook.decision=modify
          chat scripted (client, ok)
            · gen_ai.operation.name = chat
            · gen_ai.request.model = scripted
            · gen_ai.response.finish_reasons = "[\\n  \\"tool_calls\\"\\n]"
            · gen_ai.usage.input_tokens = 140
            · gen_ai.usage.output_tokens = 5
            · react_engine.iteration = 2
            · react_engine.phase = loop
          execute_tool fail (internal, error: it broke)
            · error.type = tool_error
            · gen_ai.operation.name = execute_tool
            · gen_ai.tool.call.id = call_fail
            · gen_ai.tool.name = fail
            · gen_ai.tool.type = function
            · react_engine.iteration = 2
            ! exception exception.type=ToolCallFailed exception.message=it broke
          chat scripted (client, ok)
            · gen_ai.operation.name = chat
            · gen_ai.request.model = scripted
            · gen_ai.response.finish_reasons = "[\\n  \\"stop\\"\\n]"
            · gen_ai.usage.input_tokens = 180
            · gen_ai.usage.output_tokens = 6
            · react_engine.iteration = 3
            · react_engine.phase = loop
          chat scripted (client, ok)
            · gen_ai.operation.name = chat
            · gen_ai.request.model = scripted
            · gen_ai.request.stream = true
            · gen_ai.response.finish_reasons = "[\\n  \\"stop\\"\\n]"
            · gen_ai.usage.input_tokens = 220
            · gen_ai.usage.output_tokens = 7
            · react_engine.phase = synthesis"
      `)
    }).pipe(Effect.provide(h.layer), Effect.provide(recorder.layer))
  })

  it.effect("usage on the chat spans adds up to done.usage, phase by phase (selection, compaction, loop, synthesis)", () => {
    const recorder = makeSpanRecorder()
    const filler = Array.from(
      { length: 12 },
      (_, i) =>
        Tool.make({
          name: `filler_${i}`,
          description: `Filler ${i}`,
          parameters: Schema.Struct({}),
          handler: () => Effect.succeed("f")
        })
    )
    const compactor = ScriptedLlm.makeUnsafe([
      ScriptedLlm.text("summary so far", { usage: { prompt: 70, completion: 9 } })
    ], {
      model: "compactor",
      onExhausted: "repeatLast"
    })
    const h = makeAgent([
      ScriptedLlm.toolCall("select_tools", { tools: ["big"] }, { usage: { prompt: 40, completion: 3 } }),
      ScriptedLlm.toolCall("big", { size: 1200 }),
      ScriptedLlm.toolCall("big", { size: 1200 }),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("done, really")
    ], {
      tools: [...allTools, ...filler],
      guard: ContextGuard.layer({ budget: 600, keepRecent: 2, llm: compactor.service }),
      agent: agentOptions
    })
    return Effect.gen(function*() {
      const result = yield* runCollect("fetch big things")
      const byPhase = result.usage.by_phase
      assert.hasAllKeys(byPhase, ["selection", "compaction", "loop", "synthesis"])
      assert.deepStrictEqual(tokensByPhase(recorder.spans()), phaseTokens(byPhase))
      assert.strictEqual(recorder.spans().filter((s) => s.name === "chat compactor").length, compactor.calls)
      const names = new Set(recorder.spans().map((s) => s.name))
      assert.includeMembers([...names], [
        "tool_selection",
        "structured_call select_tools",
        "compaction",
        "invoke_agent ReactAgent"
      ])
    }).pipe(Effect.provide(h.layer), Effect.provide(recorder.layer))
  })

  it.effect("DAG mode: plan, steps (each an invoke_agent of its own), analysis, synthesis; chat usage adds up to done.usage", () => {
    const recorder = makeSpanRecorder()
    const h = makeDag({
      plan: () =>
        planReply([{ id: 1, task: "find A" }, { id: 2, task: "find B" }, {
          id: 3,
          task: "combine",
          dependencies: [1, 2]
        }]),
      step: (
        id,
        turn
      ) => (turn === 0 && id !== "3"
        ? ScriptedLlm.toolCall("add", { a: 1, b: Number(id) })
        : stepText(`result of ${id}`))
    })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "goal", conversationId: CID })
      const done = doneOf(events)
      assert.deepStrictEqual(tokensByPhase(recorder.spans()), phaseTokens(done.usage.by_phase))
      const tree = renderTree(recorder.spans(), {
        attributes: (k) => k === A.stepId || k === A.stepStatus || k === A.round || k === A.phase
      })
      expect(tree).toMatchInlineSnapshot(`
        "invoke_agent DagAgent (internal, ok)
          dag.plan (internal, ok)
            · react_engine.dag.round = 1
            structured_call create_plan (internal, ok)
              · react_engine.phase = planning
              chat main (client, ok)
                · react_engine.phase = planning
          dag.step (internal, ok)
            · react_engine.dag.round = 1
            · react_engine.dag.step.id = 1
            · react_engine.dag.step.status = done
            invoke_agent ReactAgent (internal, ok)
              chat main (client, ok)
                · react_engine.phase = loop
              execute_tool add (internal, ok)
              chat main (client, ok)
                · react_engine.phase = loop
              chat main (client, ok)
                · react_engine.phase = synthesis
          dag.step (internal, ok)
            · react_engine.dag.round = 1
            · react_engine.dag.step.id = 2
            · react_engine.dag.step.status = done
            invoke_agent ReactAgent (internal, ok)
              chat main (client, ok)
                · react_engine.phase = loop
              execute_tool add (internal, ok)
              chat main (client, ok)
                · react_engine.phase = loop
              chat main (client, ok)
                · react_engine.phase = synthesis
          dag.step (internal, ok)
            · react_engine.dag.round = 1
            · react_engine.dag.step.id = 3
            · react_engine.dag.step.status = done
            invoke_agent ReactAgent (internal, ok)
              chat main (client, ok)
                · react_engine.phase = loop
              chat main (client, ok)
                · react_engine.phase = synthesis
          dag.analysis (internal, ok)
            · react_engine.dag.round = 1
            structured_call report_analysis (internal, ok)
              · react_engine.phase = analysis
              chat main (client, ok)
                · react_engine.phase = analysis
          chat main (client, ok)
            · react_engine.phase = synthesis"
      `)
    }).pipe(Effect.provide(h.layer), Effect.provide(recorder.layer))
  })
})

describe("Telemetry: message content", () => {
  const CONTENT_KEYS = [A.inputMessages, A.outputMessages, A.systemInstructions, A.toolCallArguments, A.toolCallResult]

  it.effect("absent by default", () => {
    const recorder = makeSpanRecorder()
    const h = makeAgent(parallelScript, { hooks: rewriteEcho, agent: agentOptions })
    return Effect.gen(function*() {
      yield* runCollect("add 1 and 2, and echo hi")
      const spans = recorder.spans()
      assert.isAbove(spans.length, 5)
      for (const span of spans) for (const key of CONTENT_KEYS) assert.notProperty(span.attributes, key, span.name)
    }).pipe(Effect.provide(h.layer), Effect.provide(recorder.layer))
  })

  it.effect("present with OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true (read by Telemetry.layerConfig)", () => {
    const recorder = makeSpanRecorder()
    const h = makeAgent(parallelScript, { hooks: rewriteEcho, agent: agentOptions })
    const env = Layer.setConfigProvider(
      ConfigProvider.fromMap(new Map([["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true"]]))
    )
    return Effect.gen(function*() {
      yield* runCollect("add 1 and 2, and echo hi")
      const spans = recorder.spans()
      const agent = spans.find((s) => s.name === "invoke_agent ReactAgent")!
      assert.deepStrictEqual(JSON.parse(attr(agent, A.inputMessages) as string), [
        { role: "user", parts: [{ type: "text", content: "add 1 and 2, and echo hi" }] }
      ])
      assert.deepStrictEqual(JSON.parse(attr(agent, A.outputMessages) as string)[0].parts, [{
        type: "text",
        content: "**3** and echo: hello"
      }])
      const [first, second] = spans.filter((s) => s.name === "chat scripted")
      assert.include(JSON.parse(attr(first, A.systemInstructions) as string)[0].content, "")
      assert.deepStrictEqual(JSON.parse(attr(first, A.inputMessages) as string), [
        { role: "user", parts: [{ type: "text", content: "add 1 and 2, and echo hi" }] }
      ])
      assert.deepStrictEqual(JSON.parse(attr(first, A.outputMessages) as string), [{
        role: "assistant",
        parts: [
          { type: "tool_call", id: "call_add", name: "add", arguments: { a: 1, b: 2 } },
          { type: "tool_call", id: "call_echo", name: "echo", arguments: { text: "hi" } }
        ],
        finish_reason: "tool_calls"
      }])
      const replayed = JSON.parse(attr(second, A.inputMessages) as string)
      assert.deepStrictEqual(replayed.slice(2, 4), [
        { role: "tool", parts: [{ type: "tool_call_response", id: "call_add", response: "3" }] },
        { role: "tool", parts: [{ type: "tool_call_response", id: "call_echo", response: "echo: hello" }] }
      ])
      const echo = spans.find((s) => s.name === "execute_tool echo")!
      assert.strictEqual(attr(echo, A.toolCallArguments), "{\"text\":\"hello\"}")
      assert.strictEqual(attr(echo, A.toolCallResult), "echo: hello")
    }).pipe(
      Effect.provide(h.layer),
      Effect.provide(Telemetry.layerConfig.pipe(Layer.provide(env))),
      Effect.provide(recorder.layer)
    )
  })
})

describe("Telemetry: how runs end", () => {
  it.effect("a cancelled run: invoke_agent ends with an error status (cancelled), the running tool's span as interrupted", () => {
    const recorder = makeSpanRecorder()
    const h = makeAgent([
      ScriptedLlm.toolCall("sleep", { ms: 60_000 }, { id: "call_sleep" }),
      ScriptedLlm.text("never")
    ], {
      agent: agentOptions
    })
    return Effect.gen(function*() {
      const cancel = yield* Deferred.make<void>()
      const fiber = yield* Effect.fork(
        Effect.flatMap(
          ReactAgent.ReactAgent,
          (agent) => agent.runCollect({ query: "sleep", conversationId: CID, cancel: Deferred.await(cancel) })
        )
      )
      yield* TestClock.adjust("1 second")
      yield* Deferred.succeed(cancel, undefined)
      yield* Fiber.join(fiber)
      const spans = recorder.spans()
      const agent = spans.find((s) => s.name === "invoke_agent ReactAgent")!
      assert.deepStrictEqual(agent.status, { code: 2, message: "cancelled" })
      assert.strictEqual(attr(agent, A.errorType), "cancelled")
      assert.strictEqual(attr(agent, A.outcome), "cancelled")
      const tool = spans.find((s) => s.name === "execute_tool sleep")!
      assert.strictEqual(attr(tool, "status.interrupted"), true)
      assert.strictEqual(tool.parentSpanContext?.spanId, agent.spanContext().spanId)
    }).pipe(Effect.provide(h.layer), Effect.provide(recorder.layer))
  })

  it.effect("a failed run: the chat span and invoke_agent end with an error status and error.type", () => {
    const recorder = makeSpanRecorder()
    const h = makeAgent([ScriptedLlm.fail("Auth", "bad key")], { agent: agentOptions })
    return Effect.gen(function*() {
      const result = yield* runCollect("anything")
      assert.isDefined(result.error)
      const spans = recorder.spans()
      const chat = spans.find((s) => s.name === "chat scripted")!
      assert.strictEqual(chat.status.code, 2)
      assert.strictEqual(attr(chat, A.errorType), "Auth")
      const agent = spans.find((s) => s.name === "invoke_agent ReactAgent")!
      assert.deepStrictEqual(agent.status, { code: 2, message: "LLM error (Auth): bad key" })
      assert.strictEqual(attr(agent, A.errorType), "Auth")
      assert.strictEqual(attr(agent, A.outcome), "failed")
    }).pipe(Effect.provide(h.layer), Effect.provide(recorder.layer))
  })
})

/** `{ phase: [input, output] }` summed over the chat spans. */
const tokensByPhase = (spans: ReadonlyArray<ReturnType<ReturnType<typeof makeSpanRecorder>["spans"]>[number]>) => {
  const out: Record<string, [number, number]> = {}
  for (const s of spans) {
    if (attr(s, A.operationName) !== "chat") continue
    const phase = String(attr(s, A.phase))
    const [i, o] = out[phase] ?? [0, 0]
    out[phase] = [i + Number(attr(s, A.inputTokens) ?? 0), o + Number(attr(s, A.outputTokens) ?? 0)]
  }
  return out
}

const phaseTokens = (byPhase: Usage.UsageByPhase) =>
  Object.fromEntries(Object.entries(byPhase).map(([phase, u]) => [phase, [u!.prompt_tokens, u!.completion_tokens]]))
