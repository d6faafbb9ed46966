/**
 * SPEC §9: in the synthesis input every tool result AND every tool error is cut to
 * 2,000 characters (`REACT_TOOL_OBS_TRUNCATION`), in both modes. These tests pin the
 * boundary (exactly 2,000 kept whole, 2,001 cut) and the cut of an error text, by
 * reading what the scripted model receives as the synthesis request.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Message from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import { type AgentHarness, bigTool, jsonLlm, makeAgent } from "./utils/agentLayers.js"

/** Fails with a `ToolError` whose message is `size` chars: `E` then `e`s, ending with `Z` (so a cut end shows). */
const longFailTool = Tool.make({
  name: "long_fail",
  description: "Fails with a long error text",
  parameters: Schema.Struct({ size: Schema.Number }),
  handler: ({ size }) => Effect.fail(new Tool.ToolError({ message: "E" + "e".repeat(size - 2) + "Z" }))
})

const tools = [bigTool, longFailTool]

const run = (h: AgentHarness) =>
  Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runDrain(a.run({ query: "sizes?" }))).pipe(
    Effect.provide(h.layer)
  )

/** The user message of the (one) synthesis request: the `stream` call with no tools. */
const synthesisText = (h: AgentHarness): string => {
  const streams = h.requests().filter((r) => r.method === "stream")
  assert.strictEqual(streams.length, 1, "one synthesis request")
  const synth = streams[0].request
  assert.isUndefined(synth.tools)
  return Message.textOf(synth.messages[synth.messages.length - 1].content)
}

/** The lines of one step of the trace, from `Step n:` to the blank line after it. */
const stepBlock = (text: string, n: number): string => {
  const start = text.indexOf(`Step ${n}: `)
  assert.isAtLeast(start, 0, `step ${n} in the trace`)
  const end = text.indexOf("\n\n", start)
  return text.slice(start, end === -1 ? undefined : end)
}

describe("ReactAgent synthesis truncation (SPEC §9, 2,000 chars)", () => {
  it.effect("native mode: a result of exactly 2,000 chars is kept whole, one of 2,001 is cut after 2,000", () => {
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "c_2000", name: "big", arguments: { size: 2000 } },
        { id: "c_2001", name: "big", arguments: { size: 2001 } }
      ]),
      ScriptedLlm.text("loop answer"),
      ScriptedLlm.text("final")
    ], { tools })
    return Effect.gen(function*() {
      yield* run(h)
      const text = synthesisText(h)
      assert.strictEqual(stepBlock(text, 1), `Step 1: big\nArguments: {"size":2000}\nResult: ${"x".repeat(2000)}`)
      assert.strictEqual(
        stepBlock(text, 2),
        `Step 2: big\nArguments: {"size":2001}\nResult: ${"x".repeat(2000)}… [truncated, 1 more chars]`
      )
    })
  })

  it.effect("native mode: an error text over 2,000 chars is cut like a result", () => {
    const h = makeAgent([
      ScriptedLlm.toolCall("long_fail", { size: 2500 }, { id: "c_err" }),
      ScriptedLlm.text("loop answer"),
      ScriptedLlm.text("final")
    ], { tools })
    return Effect.gen(function*() {
      yield* run(h)
      // the loop itself saw the whole error (only the synthesis input is cut)
      const toolMessage = h.requests()[1].request.messages.find((m) => m.role === "tool")
      assert.include(Message.textOf(toolMessage?.content ?? ""), "e".repeat(2400) + "Z")
      const block = stepBlock(synthesisText(h), 1)
      assert.strictEqual(
        block,
        `Step 1: long_fail\nArguments: {"size":2500}\nError: E${"e".repeat(1999)}… [truncated, 500 more chars]`
      )
      assert.notInclude(block, "Z")
    })
  })

  it.effect("native mode: error texts of exactly 2,000 and 2,001 chars (the same boundary as results)", () => {
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "e_2000", name: "long_fail", arguments: { size: 2000 } },
        { id: "e_2001", name: "long_fail", arguments: { size: 2001 } }
      ]),
      ScriptedLlm.text("loop answer"),
      ScriptedLlm.text("final")
    ], { tools })
    return Effect.gen(function*() {
      yield* run(h)
      const text = synthesisText(h)
      assert.strictEqual(
        stepBlock(text, 1),
        `Step 1: long_fail\nArguments: {"size":2000}\nError: E${"e".repeat(1998)}Z`
      )
      assert.strictEqual(
        stepBlock(text, 2),
        `Step 2: long_fail\nArguments: {"size":2001}\nError: E${"e".repeat(1999)}… [truncated, 1 more chars]`
      )
    })
  })

  it.effect("JSON mode: the same boundary for observations, and long errors are cut", () => {
    const h = makeAgent([
      ScriptedLlm.jsonToolCall("big", { size: 2000 }),
      ScriptedLlm.jsonToolCall("big", { size: 2001 }),
      ScriptedLlm.jsonToolCall("long_fail", { size: 3000 }),
      ScriptedLlm.jsonFinal("loop answer"),
      ScriptedLlm.text("final")
    ], { tools, llm: jsonLlm, agent: { completionCheck: false } }) // 3 tools would trigger the checklist turn
    return Effect.gen(function*() {
      yield* run(h)
      const text = synthesisText(h)
      assert.strictEqual(stepBlock(text, 1), `Step 1: big\nArguments: {"size":2000}\nResult: ${"x".repeat(2000)}`)
      assert.strictEqual(
        stepBlock(text, 2),
        `Step 2: big\nArguments: {"size":2001}\nResult: ${"x".repeat(2000)}… [truncated, 1 more chars]`
      )
      assert.strictEqual(
        stepBlock(text, 3),
        `Step 3: long_fail\nArguments: {"size":3000}\nError: E${"e".repeat(1999)}… [truncated, 1000 more chars]`
      )
    })
  })
})
