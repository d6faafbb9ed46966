/**
 * Native mode when the advertised tool set changes mid-run (SPEC §5): a
 * `request_tools` call loads more tools, which native mode advertises in the
 * request's `tools` — its system prompt stays the native one. Only JSON mode
 * rebuilds its system prompt (the tool list is written in it); rebuilding it
 * in native mode would put the JSON protocol's instructions before a model
 * that is calling functions. In process over `ScriptedLlm`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { addTool, echoTool, fillerTools, makeAgent } from "./utils/agentLayers.js"

const filler = fillerTools(12)

const systemOf = (request: ScriptedLlm.RecordedRequest) => {
  const first = request.request.messages[0]
  assert.strictEqual(first.role, "system")
  return first.content
}
const toolsOf = (request: ScriptedLlm.RecordedRequest) => (request.request.tools ?? []).map((t) => t.function.name)

describe("ReactAgent native mode, tools loaded mid-run", () => {
  it.effect("request_tools adds the tool to the next request's tools and leaves the system prompt as it was", () =>
    Effect.gen(function*() {
      const agent = makeAgent([
        ScriptedLlm.toolCall("select_tools", { tools: ["add"] }),
        ScriptedLlm.toolCall("request_tools", { names: ["echo"] }),
        ScriptedLlm.toolCall("echo", { text: "hi" }),
        ScriptedLlm.text("done")
      ], { tools: [addTool, echoTool, ...filler] })
      const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "say hi" })).pipe(
        Effect.provide(agent.layer)
      )
      assert.strictEqual(result.answer, "done")
      const [, first, second, third] = agent.requests()
      assert.notInclude(toolsOf(first), "echo")
      assert.include(toolsOf(second), "echo")
      assert.include(toolsOf(third), "echo")
      // the native prompt throughout: not rebuilt as the JSON protocol's (which lists the tools in it)
      assert.strictEqual(systemOf(second), systemOf(first))
      assert.strictEqual(systemOf(third), systemOf(first))
      assert.notInclude(String(systemOf(first)), "tool_name")
    }))
})
