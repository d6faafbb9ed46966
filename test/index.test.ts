import { assert, describe, it } from "@effect/vitest"
import * as Layer from "effect/Layer"
import * as Engine from "../src/index.js"

describe("package root", () => {
  it("exports the public API embedders build on", () => {
    assert.isFunction(Engine.ScriptedLlm.makeUnsafe)
    assert.isFunction(Engine.OpenAiLlm.make)
    // the provider choice is exported; the @effect/ai bridge is a subpath (effect-react-engine/EffectAiLlm)
    assert.isDefined(Engine.LlmProviders.loadModels)
    assert.notProperty(Engine, "EffectAiLlm")
    assert.isFunction(Engine.Tool.make)
    assert.isFunction(Engine.Toolkit.make)
    assert.isFunction(Engine.ExtractJson.extractJson)
    assert.isFunction(Engine.StructuredCall.structuredCall)
    assert.isFunction(Engine.ReactAgent.layer)
    assert.isFunction(Engine.Hooks.layer)
    assert.isTrue(Layer.isLayer(Engine.ContextGuard.layerConfig()))
    assert.isFunction(Engine.ToolSelection.selectTools)
    assert.isFunction(Engine.RunEvent.settledAnswers)
    assert.isFunction(Engine.DagAgent.make)
    assert.isTrue(Layer.isLayer(Engine.DagAgent.layerConfig()))
    assert.isTrue(Layer.isLayer(Engine.Telemetry.layerConfig))
    assert.isTrue(Layer.isLayer(Engine.Approvals.layerMemory))
    assert.isFunction(Engine.Approvals.hashArgs)
    // attachments: the store the LLM layers read files from, and the file parts of a query
    assert.isTrue(Layer.isLayer(Engine.Attachments.layerMemory()))
    assert.isFunction(Engine.Message.file)
    assert.isTrue(Layer.isLayer(Engine.Memory.layerMemory()))
    assert.isFunction(Engine.Embedder.makeLocal)
  })
})
