/**
 * What a native reply becomes (docs/agent-loop.md "Native function-calling
 * mode"), read in the next request and the events: the assistant message of a
 * reply that calls tools keeps the text written beside the calls, and has no
 * content (`null`, as the OpenAI wire format has a reply of calls only, not an
 * empty text) when there was none; `ThinkingDone` of a final reply carries the provider's
 * reasoning, or `""`; empty and repeated call ids are renamed to
 * `call_<iteration>_<index>_<id>`, with `_<k>` when that name is taken too —
 * deterministic, because a durable run names its tool steps after the ids
 * (`tool/<iteration>/<id>`), so a replay must rename alike. In process over
 * `ScriptedLlm`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { addTool, makeAgent } from "./utils/agentLayers.js"

const events = Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runCollect(a.run({ query: "q" }))).pipe(
  Effect.map(Chunk.toArray)
)
const thinkingDone = (es: ReadonlyArray<RunEvent>) =>
  es.flatMap((e) => (e._tag === "ThinkingDone" ? [e.reasoning] : []))

describe("ReactAgent native replies", () => {
  it.effect("the assistant message of a tool-calling reply: its text kept, or content null when it wrote none", () => {
    const h = makeAgent([
      ScriptedLlm.toolCall("add", { a: 1, b: 2 }, { id: "c1", content: "Let me add." }),
      ScriptedLlm.toolCall("add", { a: 3, b: 4 }, { id: "c2" }),
      ScriptedLlm.text("3 and 7")
    ], { tools: [addTool], agent: { synthesis: "auto", completionCheck: false } })
    return Effect.gen(function*() {
      yield* events
      const last = h.requests()[2].request.messages
      const assistants = last.filter((m) => m.role === "assistant")
      assert.deepStrictEqual(
        assistants.map((m) => [m.content, m.role === "assistant" ? m.tool_calls?.map((c) => c.id) : []]),
        [
          ["Let me add.", ["c1"]],
          [null, ["c2"]]
        ]
      )
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("ThinkingDone of a final reply: the provider's reasoning, else \"\"", () =>
    Effect.gen(function*() {
      for (const [reasoning, expected] of [["weighed it", "weighed it"], [undefined, ""]] as const) {
        const h = makeAgent([
          ScriptedLlm.text("the answer", reasoning === undefined ? {} : { reasoning }),
          ScriptedLlm.text("the answer")
        ])
        const es = yield* events.pipe(Effect.provide(h.layer))
        assert.deepStrictEqual(thinkingDone(es), [expected], String(reasoning))
      }
    }))

  it.effect("empty and repeated call ids: renamed call_<iteration>_<index>_<id>, then _<k> while taken", () => {
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "call_1_3_x", name: "add", arguments: { a: 0, b: 1 } },
        { id: "", name: "add", arguments: { a: 0, b: 2 } },
        { id: "x", name: "add", arguments: { a: 0, b: 3 } },
        { id: "x", name: "add", arguments: { a: 0, b: 4 } }
      ]),
      ScriptedLlm.text("done")
    ], { tools: [addTool], agent: { synthesis: "auto", completionCheck: false } })
    return Effect.gen(function*() {
      const es = yield* events
      const ids = ["call_1_3_x", "call_1_1_", "x", "call_1_3_1_x"]
      assert.deepStrictEqual(es.flatMap((e) => (e._tag === "ToolStart" ? [e.tool_call_id] : [])), ids)
      const second = h.requests()[1].request.messages
      const assistant = second[2]
      assert.deepStrictEqual(assistant.role === "assistant" ? assistant.tool_calls?.map((c) => c.id) : [], ids)
      assert.deepStrictEqual(second.slice(3).map((m) => (m.role === "tool" ? [m.tool_call_id, m.content] : [])), [
        ["call_1_3_x", "1"],
        ["call_1_1_", "2"],
        ["x", "3"],
        ["call_1_3_1_x", "4"]
      ])
    }).pipe(Effect.provide(h.layer))
  })
})
