import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { textOf } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { jsonLlm, makeAgent, messagesOf } from "./utils/agentLayers.js"

const run = (query: string) => Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query }))
const runEvents = (query: string) =>
  Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runCollect(a.run({ query }))).pipe(Effect.map(Chunk.toArray))

describe("ReactAgent JSON mode", () => {
  it.effect("a tool round: events, system prompt with schemas, json_object, Observation message", () => {
    const h = makeAgent([
      ScriptedLlm.jsonToolCall("add", { a: 2, b: 3 }, "need to add"),
      ScriptedLlm.jsonFinal("5"),
      ScriptedLlm.text("The sum is 5.")
    ], { llm: jsonLlm })
    return Effect.gen(function*() {
      const es = yield* runEvents("2+3?")
      assert.deepStrictEqual(es.map((e) => e._tag), [
        "ThinkingStart",
        "ThinkingDone",
        "ToolStart",
        "ToolDone",
        "ThinkingStart",
        "ThinkingDone",
        "AnswerSignal",
        "AnswerStart",
        "AnswerDelta",
        "AnswerDelta",
        "AnswerDelta",
        "AnswerDelta",
        "AnswerDone",
        "Done"
      ])
      assert.deepStrictEqual(es[1], { _tag: "ThinkingDone", iteration: 1, reasoning: "need to add" })
      const first = h.requests()[0].request
      assert.deepStrictEqual(first.responseFormat, { type: "json_object" })
      assert.isUndefined(first.tools)
      const system = textOf(first.messages[0].content)
      assert.include(system, "add: Adds two numbers")
      assert.include(system, "\"a\"")
      assert.include(system, "final_answer")
      const second = messagesOf(h, 1)
      assert.strictEqual(second[2].role, "assistant")
      assert.deepStrictEqual(second[3], { role: "user", content: "Observation: 5" })
      const done = es[es.length - 1]
      assert.isTrue(done._tag === "Done" && done.answer === "The sum is 5.")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("no response_format when the model has no JSON mode", () => {
    const h = makeAgent([ScriptedLlm.jsonFinal("hi"), ScriptedLlm.text("hi")], {
      llm: { abilities: { toolCall: false, jsonMode: false } }
    })
    return Effect.gen(function*() {
      yield* run("q")
      assert.isUndefined(h.requests()[0].request.responseFormat)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("useNativeTools: false forces JSON mode on a tool-calling model", () => {
    const h = makeAgent([ScriptedLlm.jsonFinal("hi"), ScriptedLlm.text("hi")], { agent: { useNativeTools: false } })
    return Effect.gen(function*() {
      yield* run("q")
      assert.isUndefined(h.requests()[0].request.tools)
      assert.include(textOf(h.requests()[0].request.messages[0].content), "Available tools")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("parse failure: raw reply + re-format request, then the next raw reply is the answer", () => {
    const h = makeAgent([
      ScriptedLlm.text("not json at all"),
      ScriptedLlm.text("still not json"),
      ScriptedLlm.fail("Server")
    ], {
      llm: jsonLlm
    })
    return Effect.gen(function*() {
      const r = yield* run("q")
      assert.strictEqual(r.answer, "still not json") // synthesis failed before its first token
      assert.isUndefined(r.error)
      assert.strictEqual(r.iterations, 2)
      const second = messagesOf(h, 1)
      assert.deepStrictEqual(second[2], { role: "assistant", content: "not json at all" })
      assert.strictEqual(second[3].role, "user")
      assert.include(textOf(second[3].content), "could not be parsed as JSON")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("parse failure then a valid action continues normally", () => {
    const h = makeAgent([
      ScriptedLlm.text("oops"),
      ScriptedLlm.jsonToolCall("echo", { text: "x" }),
      ScriptedLlm.text("garbage again"),
      ScriptedLlm.text("garbage twice"),
      ScriptedLlm.text("final")
    ], { llm: jsonLlm })
    return Effect.gen(function*() {
      const r = yield* run("q")
      assert.strictEqual(r.steps.length, 1)
      assert.strictEqual(r.iterations, 4)
      assert.strictEqual(r.answer, "final")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("unknown or missing type → final answer (answer field, else raw text)", () => {
    const cases: Array<[string, string]> = [
      [JSON.stringify({ type: "something", answer: "A1" }), "A1"],
      [JSON.stringify({ answer: "A2" }), "A2"],
      [JSON.stringify({ type: "final_answer" }), JSON.stringify({ type: "final_answer" })],
      ["Sure! ```json\n{\"type\":\"final_answer\",\"answer\":\"A3\"}\n```", "A3"]
    ]
    return Effect.forEach(cases, ([reply, expected]) => {
      const h = makeAgent([ScriptedLlm.text(reply), ScriptedLlm.fail("Server")], { llm: jsonLlm })
      return Effect.map(run("q").pipe(Effect.provide(h.layer)), (r) => assert.strictEqual(r.answer, expected))
    })
  })

  it.effect("missing/null tool_args → {}; non-object tool_args → error observation", () => {
    const h = makeAgent([
      ScriptedLlm.text(JSON.stringify({ type: "tool_call", tool_name: "fail" })),
      ScriptedLlm.text(JSON.stringify({ type: "tool_call", tool_name: "fail", tool_args: null })),
      ScriptedLlm.text(JSON.stringify({ type: "tool_call", tool_name: "add", tool_args: [1, 2] })),
      ScriptedLlm.jsonFinal("ok"),
      ScriptedLlm.text("ok")
    ], { llm: jsonLlm, agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const r = yield* run("q")
      assert.deepStrictEqual(r.steps.map((s) => s.error), [
        "it broke",
        "it broke",
        "tool_args must be a JSON object, got an array"
      ])
      assert.deepStrictEqual(r.steps[0].tool_args, {})
      const last = messagesOf(h, 3)
      assert.deepStrictEqual(last[last.length - 1], {
        role: "user",
        content: "Observation: Error: tool_args must be a JSON object, got an array"
      })
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("reasoning_content is used when the JSON reasoning is empty", () => {
    const h = makeAgent([
      { ...ScriptedLlm.jsonFinal("x"), reasoning: "provider thoughts" },
      ScriptedLlm.text("x")
    ], { llm: jsonLlm })
    return Effect.gen(function*() {
      const es = yield* runEvents("q")
      const thinking = es.find((e) => e._tag === "ThinkingDone")
      assert.isTrue(thinking?._tag === "ThinkingDone" && thinking.reasoning === "provider thoughts")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("unknown tool → error observation listing the available tools", () => {
    const h = makeAgent([ScriptedLlm.jsonToolCall("nope", {}), ScriptedLlm.jsonFinal("x"), ScriptedLlm.text("x")], {
      llm: jsonLlm
    })
    return Effect.gen(function*() {
      const r = yield* run("q")
      assert.include(r.steps[0].error ?? "", "Unknown tool \"nope\"")
      assert.include(
        textOf(messagesOf(h, 1)[3].content),
        "Observation: Error: Unknown tool \"nope\". Available tools: add"
      )
    }).pipe(Effect.provide(h.layer))
  })
})
