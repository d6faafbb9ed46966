/**
 * `structuredCall`'s edges the mutation run found unpinned: which tool call of
 * a native reply is read, `regexFallback` only when the reply's own JSON does
 * not decode, the failure message (the last problem, cut), and the spans a
 * structured call leaves (its level and phase on every `chat` span).
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import type { Abilities } from "../src/Llm.js"
import * as Message from "../src/Message.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import type { StructuredCallOptions } from "../src/StructuredCall.js"
import { structuredCallWith } from "../src/StructuredCall.js"
import { makeSpanRecorder } from "./utils/spans.js"

const Selection = Schema.Struct({ tools: Schema.Array(Schema.String) })
type Selection = typeof Selection.Type

const all: Partial<Abilities> = { toolCall: true, toolChoice: true, jsonMode: true }
const plainOnly: Partial<Abilities> = { toolCall: false, toolChoice: false, jsonMode: false }

const base: StructuredCallOptions<Selection, Selection> = {
  messages: [Message.user("weather in Paris?")],
  schema: Selection,
  functionName: "select_tools"
}

describe("structuredCall: edges", () => {
  it.effect("native: the call named after the function is read, wherever it is in the reply; another name only when it is the only call", () =>
    Effect.gen(function*() {
      const second = ScriptedLlm.makeUnsafe([
        ScriptedLlm.toolCalls([{ name: "other", arguments: { tools: ["wrong"] } }, {
          name: "select_tools",
          arguments: { tools: ["right"] }
        }])
      ], { abilities: all })
      const a = yield* structuredCallWith(second.service, base)
      assert.deepStrictEqual([a.level, a.value], ["native", { tools: ["right"] }])
      const first = ScriptedLlm.makeUnsafe([
        ScriptedLlm.toolCalls([{ name: "select_tools", arguments: { tools: ["right"] } }, {
          name: "other",
          arguments: { tools: ["wrong"] }
        }])
      ], { abilities: all })
      const b = yield* structuredCallWith(first.service, base)
      assert.deepStrictEqual([b.level, b.value], ["native", { tools: ["right"] }])
      // a model that named the function differently: its only call is still taken
      const misnamed = ScriptedLlm.makeUnsafe([ScriptedLlm.toolCall("selectTools", { tools: ["m"] })], {
        abilities: all
      })
      const c = yield* structuredCallWith(misnamed.service, base)
      assert.deepStrictEqual([c.level, c.value, c.llmCalls], ["native", { tools: ["m"] }, 1])
    }))

  it.effect("regexFallback is not asked when the reply's JSON decodes", () =>
    Effect.gen(function*() {
      let asked = 0
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("{\"tools\": [\"json\"]}")], { abilities: plainOnly })
      const result = yield* structuredCallWith(llm.service, {
        ...base,
        regexFallback: () => {
          asked++
          return { tools: ["regex"] }
        }
      })
      assert.deepStrictEqual(result.value, { tools: ["json"] })
      assert.strictEqual(asked, 0)
    }))

  it.effect("the failure message names the function, the calls and the last problem: no JSON found (regexFallback found nothing either)", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("no idea"), ScriptedLlm.text("still no idea")], {
        abilities: plainOnly
      })
      const error = yield* Effect.flip(structuredCallWith(llm.service, { ...base, regexFallback: () => undefined }))
      assert.strictEqual(
        error.message,
        "structuredCall(select_tools) failed after 2 LLM call(s): no JSON object found in the reply"
      )
      assert.strictEqual(error.lastContent, "still no idea")
    }))

  it.effect("the failure message quotes the decode problem of the last reply", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("{\"tools\": 1}"), ScriptedLlm.text("{\"tools\": 2}")], {
        abilities: plainOnly
      })
      const error = yield* Effect.flip(structuredCallWith(llm.service, base))
      assert.match(error.message, /^structuredCall\(select_tools\) failed after 2 LLM call\(s\): .*tools/s)
      assert.include(error.message, "Expected ReadonlyArray<string>, actual 2")
    }))

  it.effect("a long last problem is cut to 500 characters in the message", () =>
    Effect.gen(function*() {
      const long = "x".repeat(2000)
      const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.fail("Server", long), ScriptedLlm.fail("Server", long)], {
        abilities: plainOnly
      })
      const error = yield* Effect.flip(structuredCallWith(llm.service, base))
      const prefix = "structuredCall(select_tools) failed after 2 LLM call(s): "
      assert.strictEqual(error.message, prefix + `LLM error (Server): ${long}`.slice(0, 500))
    }))

  it.effect("spans: structured_call {function} with function, model, phase, level and calls; each chat span with its level and phase", () =>
    Effect.gen(function*() {
      const recorder = makeSpanRecorder()
      // native fails (no call), json fails twice, text answers
      const llm = ScriptedLlm.makeUnsafe([
        ScriptedLlm.text("no call"),
        ScriptedLlm.text("not json"),
        ScriptedLlm.text("not json either"),
        ScriptedLlm.text("{\"tools\": [\"t\"]}")
      ], { abilities: all, model: "m-1" })
      yield* structuredCallWith(llm.service, { ...base, phase: "selection" }).pipe(Effect.provide(recorder.layer))
      const spans = recorder.spans()
      const outer = spans.find((s) => s.name === "structured_call select_tools")
      assert.isDefined(outer)
      assert.deepStrictEqual(
        {
          function: outer!.attributes["react_engine.structured.function"],
          model: outer!.attributes["gen_ai.request.model"],
          phase: outer!.attributes["react_engine.phase"],
          level: outer!.attributes["react_engine.structured.level"],
          calls: outer!.attributes["react_engine.llm_calls"]
        },
        { function: "select_tools", model: "m-1", phase: "selection", level: "text", calls: 4 }
      )
      const chats = spans.filter((s) => s.name.startsWith("chat"))
      assert.deepStrictEqual(
        chats.map((s) => [s.attributes["react_engine.structured.level"], s.attributes["react_engine.phase"]]),
        [["native", "selection"], ["json", "selection"], ["json", "selection"], ["text", "selection"]]
      )
      // without a phase, none is reported
      recorder.reset()
      const plain = ScriptedLlm.makeUnsafe([ScriptedLlm.text("{\"tools\": []}")], { abilities: plainOnly })
      yield* structuredCallWith(plain.service, base).pipe(Effect.provide(recorder.layer))
      const bare = recorder.spans().find((s) => s.name === "structured_call select_tools")!
      assert.notProperty(bare.attributes, "react_engine.phase")
      assert.strictEqual(bare.attributes["react_engine.structured.level"], "text")
    }))
})
