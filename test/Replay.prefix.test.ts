/**
 * `Replay.withPrefix` on `Replay.layerPrefix`'s services (what a server fork
 * runs on): the steps of a stored prefix are answered from it — the model is
 * not asked again for them, the tool does not run — and the rest runs live.
 * The fake model gives every request fresh tool-call ids and is counted; the
 * tool counts its executions.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Hooks from "../src/Hooks.js"
import * as Interrupts from "../src/Interrupts.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as Recorder from "../src/Recorder.js"
import * as Replay from "../src/Replay.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Toolkit from "../src/Toolkit.js"
import { countingTool, recordingAgent } from "./utils/replayLayers.js"

/** Looks `a` up, then `b`, then answers; fresh call ids per request. */
const responder: ScriptedLlm.Responder = (request, index, method) => {
  if (method === "stream") return ScriptedLlm.text("Final.")
  const done = request.messages.filter((m) => m.role === "tool").length
  if (done >= 2) return ScriptedLlm.text("done")
  return ScriptedLlm.toolCall("lookup", { key: done === 0 ? "a" : "b" }, { id: `call_${index}` })
}

/** An agent on `Replay.layerPrefix` over a fresh scripted model and a fresh counting tool. */
const prefixAgent = () => {
  const scripted = ScriptedLlm.make(responder)
  const counting = countingTool()
  const layer = ReactAgent.layer({ synthesis: "always" }).pipe(
    Layer.provideMerge(Layer.provideMerge(ContextGuard.layer(), Replay.layerPrefix)),
    Layer.provide(Layer.mergeAll(scripted.layer, Toolkit.layer([counting.tool]), Interrupts.layer, Hooks.layerEmpty)),
    Layer.orDie
  )
  return { scripted, ran: counting.ran, layer }
}

describe("Replay.withPrefix", () => {
  it.effect("the prefix's steps come from storage, the rest runs live", () =>
    Effect.gen(function*() {
      // the original run, recorded
      const original = countingTool()
      const recording = recordingAgent(responder, { tools: [original.tool] })
      const { cassette } = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) => Recorder.record(agent, { query: "Look a and b up." })).pipe(
        Effect.provide(recording.layer)
      )
      assert.deepStrictEqual(original.ran, ["a", "b"])
      assert.strictEqual(cassette.model_calls.length, 4)

      // the prefix: the first model call and the `a` call (a fork after `a` ended)
      const prefix = { ...cassette, model_calls: cassette.model_calls.slice(0, 1), tool_calls: cassette.tool_calls.slice(0, 1) }
      const fork = prefixAgent()
      const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) =>
        Replay.withPrefix(prefix)(agent.runCollect({ query: "Look a and b up.", conversationId: "fork" }))).pipe(
          Effect.provide(fork.layer)
        )
      assert.strictEqual(result.answer, "Final.")
      // `a` did not run again, `b` ran live
      assert.deepStrictEqual(fork.ran, ["b"])
      // the model was not asked for the first step again: each live request already has `a`'s result
      assert.deepStrictEqual(fork.scripted.requests.map((r) => r.request.messages.filter((m) => m.role === "tool").length), [1, 2, 0])
      // `a` keeps its stored call id; `b` has the live request's fresh one
      assert.deepStrictEqual(result.steps.map((s) => s.tool_call_id), [cassette.tool_calls[0].tool_call_id, "call_0"])

      // outside `withPrefix` the same services run everything live
      const live = prefixAgent()
      yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) => agent.runCollect({ query: "Look a and b up." })).pipe(
        Effect.provide(live.layer)
      )
      assert.deepStrictEqual(live.ran, ["a", "b"])
      assert.strictEqual(live.scripted.requests.length, 4)
    }))

  it.effect("a request the prefix does not hold (another query) runs live", () =>
    Effect.gen(function*() {
      const original = countingTool()
      const recording = recordingAgent(responder, { tools: [original.tool] })
      const { cassette } = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) => Recorder.record(agent, { query: "Look a and b up." })).pipe(
        Effect.provide(recording.layer)
      )
      const fork = prefixAgent()
      yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) =>
        Replay.withPrefix(cassette)(agent.runCollect({ query: "Something else." }))).pipe(Effect.provide(fork.layer))
      assert.deepStrictEqual(fork.ran, ["a", "b"])
      assert.strictEqual(fork.scripted.requests.length, 4)
    }))
})
