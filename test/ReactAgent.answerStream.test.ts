/**
 * The streamed loop call (synthesis `auto`, src/internal/reactAgent/answerStream.ts)
 * fed with raw provider deltas: a tool call whose id, name and arguments come
 * in pieces (only the first piece has the id), reasoning deltas, a call that
 * arrives without any id, and a stream that dies with a defect (the call is
 * made again without streaming). The first loop call streams the scripted
 * deltas; every other call is a `ScriptedLlm` reply.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as Interrupts from "../src/Interrupts.js"
import * as Llm from "../src/Llm.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Toolkit from "../src/Toolkit.js"
import * as Usage from "../src/Usage.js"
import { echoTool, noHooks, recordingGuard } from "./utils/agentLayers.js"

/** An agent whose first streamed call is `first`; the rest follow `script`. */
const agentWith = (
  first: Stream.Stream<Llm.ChatDelta, Llm.LlmError>,
  script: ReadonlyArray<ScriptedLlm.ScriptStep>
) => {
  const scripted = ScriptedLlm.makeUnsafe(script)
  let streams = 0
  const service: Llm.LlmService = {
    ...scripted.service,
    streamChat: (request) => (streams++ === 0 ? first : scripted.service.streamChat(request))
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
  return { layer, scripted }
}

const run = Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runCollect(a.run({ query: "go" }))).pipe(
  Effect.map(Chunk.toArray)
)

const doneOf = (events: ReadonlyArray<RunEvent>) => {
  const last = events[events.length - 1]
  if (last._tag !== "Done") throw new Error(`last event is ${last._tag}`)
  return last
}

describe("ReactAgent streamed loop call", () => {
  it.effect("a tool call in pieces keeps the id of its first piece; reasoning deltas are the step's thinking", () => {
    const a = agentWith(
      Stream.fromIterable<Llm.ChatDelta>([
        { _tag: "Reasoning", text: "I should " },
        { _tag: "Reasoning", text: "echo." },
        { _tag: "ToolCall", index: 0, id: "call_a", name: "ec" },
        { _tag: "ToolCall", index: 0, name: "ho", arguments: "{\"text\":" },
        { _tag: "ToolCall", index: 0, id: "", arguments: "\"hi\"}" },
        { _tag: "Usage", usage: Usage.make(10, 5) }
      ]),
      [ScriptedLlm.text("done")]
    )
    return Effect.gen(function*() {
      const es = yield* run
      const start = es.find((e) => e._tag === "ToolStart")
      assert.deepInclude(start, { tool_name: "echo", tool_call_id: "call_a" })
      const thought = es.find((e) => e._tag === "ThinkingDone")
      assert.deepInclude(thought, { iteration: 1, reasoning: "I should echo." })
      const tool = a.scripted.requests[0].request.messages.find((m) => m.role === "tool")
      assert.deepInclude(tool, { tool_call_id: "call_a", content: "echo: hi" })
      assert.strictEqual(doneOf(es).answer, "done")
    }).pipe(Effect.provide(a.layer))
  })

  it.effect("a streamed tool call without an id gets the loop's generated one", () => {
    const a = agentWith(
      Stream.fromIterable<Llm.ChatDelta>([
        { _tag: "ToolCall", index: 0, name: "echo", arguments: "{\"text\":\"x\"}" },
        { _tag: "Finish", reason: "tool_calls" }
      ]),
      [ScriptedLlm.text("done")]
    )
    return Effect.gen(function*() {
      const es = yield* run
      const start = es.find((e) => e._tag === "ToolStart")
      assert.deepInclude(start, { tool_name: "echo", tool_call_id: "call_1_0_" })
    }).pipe(Effect.provide(a.layer))
  })

  it.effect("a stream that dies before showing anything: the call is made again without streaming", () => {
    const a = agentWith(Stream.die(new Error("socket torn")), [ScriptedLlm.text("plain answer")])
    return Effect.gen(function*() {
      const es = yield* run
      assert.isFalse(es.some((e) => e._tag === "RunFailed"))
      assert.strictEqual(doneOf(es).answer, "plain answer")
      assert.deepStrictEqual(a.scripted.requests.map((r) => r.method), ["chat"])
    }).pipe(Effect.provide(a.layer))
  })
})
