import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as Interrupts from "../src/Interrupts.js"
import { textOf } from "../src/Message.js"
import * as ModelRegistry from "../src/ModelRegistry.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Toolkit from "../src/Toolkit.js"
import { addTool, echoTool, fillerTools, jsonLlm, makeAgent, noHooks, recordingGuard } from "./utils/agentLayers.js"

const filler = fillerTools(12)
const many = [addTool, echoTool, ...filler] // 14 tools > threshold 12

const runEvents = Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runCollect(a.run({ query: "add 1 and 2" }))).pipe(
  Effect.map(Chunk.toArray)
)

describe("ReactAgent tool selection", () => {
  it.effect("over the threshold: PhaseChange, one selection call, only the selected tools advertised", () => {
    const h = makeAgent([
      ScriptedLlm.toolCall("select_tools", { tools: ["add"] }, { usage: { prompt: 40, completion: 2 } }),
      ScriptedLlm.toolCall("add", { a: 1, b: 2 }),
      ScriptedLlm.text("3"),
      ScriptedLlm.text("3")
    ], { tools: many })
    return Effect.gen(function*() {
      const es = yield* runEvents
      assert.deepStrictEqual(es[0], { _tag: "PhaseChange", phase: "selecting_tools", total_tools: 14 })
      assert.strictEqual(es[1]._tag, "ThinkingStart")
      const loopTools = (h.requests()[1].request.tools ?? []).map((t) => t.function.name)
      assert.include(loopTools, "add")
      assert.notInclude(loopTools, "filler_3")
      assert.isBelow(loopTools.length, 14)
      const done = es[es.length - 1]
      assert.isTrue(done._tag === "Done" && done.usage.by_phase.selection?.total_tokens === 42)
      assert.isTrue(done._tag === "Done" && done.answer === "3")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("JSON mode: an unselected registered tool is loaded, executed, and the system prompt rebuilt", () => {
    const h = makeAgent([
      ScriptedLlm.text("{\"tools\":[\"add\"]}"),
      ScriptedLlm.jsonToolCall("echo", { text: "hi" }),
      ScriptedLlm.jsonFinal("done"),
      ScriptedLlm.text("done")
    ], { tools: many, llm: jsonLlm })
    return Effect.gen(function*() {
      const es = yield* runEvents
      const first = textOf(h.requests()[1].request.messages[0].content)
      assert.include(first, "- add:")
      assert.notInclude(first, "- echo:")
      const second = textOf(h.requests()[2].request.messages[0].content)
      assert.include(second, "- echo:")
      const toolDone = es.find((e) => e._tag === "ToolDone")
      assert.isTrue(toolDone?._tag === "ToolDone" && toolDone.observation === "echo: hi" && toolDone.error === null)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("at or under the threshold: no selection call", () => {
    const h = makeAgent([ScriptedLlm.text("hi"), ScriptedLlm.text("hi")], {
      tools: many,
      agent: { toolSelectionThreshold: 14 }
    })
    return Effect.gen(function*() {
      const es = yield* runEvents
      assert.isFalse(es.some((e) => e._tag === "PhaseChange"))
      assert.strictEqual(h.requests()[0].request.tools?.length, 14)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("layerConfig: the registry's fast model does the selection; the loop uses Llm", () => {
    const main = ScriptedLlm.makeUnsafe([ScriptedLlm.text("answer")])
    const fast = ScriptedLlm.makeUnsafe([ScriptedLlm.toolCall("select_tools", { tools: ["echo"] })], { model: "fast" })
    const layer = ReactAgent.layerConfig().pipe(
      Layer.provide(Layer.mergeAll(
        main.layer,
        ModelRegistry.layer({ main: main.service, fast: fast.service }),
        Toolkit.layer(many),
        noHooks,
        recordingGuard().layer,
        Interrupts.layerMemory,
        NodeFileSystem.layer
      )),
      Layer.orDie
    )
    return Effect.gen(function*() {
      yield* runEvents
      assert.strictEqual(fast.requests.length, 1)
      // synthesis policy auto (layerConfig's default): one streamed loop call is the answer
      assert.deepStrictEqual(main.requests.map((r) => r.method), ["stream"])
      assert.deepStrictEqual((main.requests[0].request.tools ?? []).map((t) => t.function.name).includes("echo"), true)
    }).pipe(Effect.provide(layer))
  })
})
