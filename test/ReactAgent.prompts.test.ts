/**
 * The parts of the loop's prompts that carry a contract, read in what the
 * model is sent (the wording itself is ours, SPEC §3.5: these tests pin the
 * structure, not the sentences): the `systemPrompt` option appended to the
 * engine's system prompt after a blank line, in both modes; JSON mode's tool
 * list, one block per tool on its own line, and with no tool a line telling
 * the model to answer directly; one interrupt quoted as it is, several as a
 * numbered list (SPEC §8); the artifact summary naming every artifact (SPEC
 * §3.6). In process over `ScriptedLlm`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { textOf } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import { addTool, echoTool, injectNow, jsonLlm, makeAgent, makeInterrupts } from "./utils/agentLayers.js"

const CID = "conv-prompts"
const run = Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "q", conversationId: CID }))

/** The system message of the first request of a one-call run. */
const systemOf = (
  json: boolean,
  options: { readonly systemPrompt?: string; readonly tools?: ReadonlyArray<Tool.Tool> } = {}
) =>
  Effect.gen(function*() {
    const h = makeAgent([json ? ScriptedLlm.jsonFinal("ok") : ScriptedLlm.text("ok")], {
      ...(json ? { llm: jsonLlm } : {}),
      tools: options.tools ?? [addTool],
      agent: {
        synthesis: "auto",
        ...(options.systemPrompt !== undefined ? { systemPrompt: options.systemPrompt } : {})
      }
    })
    yield* run.pipe(Effect.provide(h.layer))
    const first = h.requests()[0].request.messages[0]
    assert.strictEqual(first.role, "system")
    return textOf(first.content)
  })

describe("ReactAgent prompts", () => {
  it.effect("systemPrompt: the engine's prompt, a blank line, then the extra instructions (native and JSON mode)", () =>
    Effect.gen(function*() {
      for (const json of [false, true]) {
        const plain = yield* systemOf(json)
        const extra = yield* systemOf(json, { systemPrompt: "Always answer in haiku." })
        assert.strictEqual(extra, `${plain}\n\nAlways answer in haiku.`, json ? "json" : "native")
        assert.notInclude(plain, "haiku")
      }
    }))

  it.effect("JSON mode's tool list: one block per tool, each on a line of its own; with no tool, a line saying to answer directly", () =>
    Effect.gen(function*() {
      const two = yield* systemOf(true, { tools: [addTool, echoTool] })
      const lines = two.split("\n")
      const listed = lines.slice(lines.indexOf("Available tools:") + 1)
      assert.deepStrictEqual(listed.filter((l) => l.startsWith("- ")).map((l) => l.split(":")[0]), ["- add", "- echo"])
      assert.include(listed, `  parameters: ${JSON.stringify(echoTool.jsonSchema)}`)
      const none = yield* systemOf(true, { tools: [] })
      const after = none.slice(none.indexOf("Available tools:\n") + "Available tools:\n".length)
      assert.isTrue(after.trim().length > 0, "nothing after 'Available tools:'")
      assert.include(after, "final_answer")
      assert.notInclude(none, "- add")
    }))

  it.effect("one interrupt is quoted as it is; several are a numbered list (SPEC §8)", () =>
    Effect.gen(function*() {
      for (const contents of [["use metric units"], ["use metric units", "and be brief"]]) {
        const irq = makeInterrupts()
        const h = makeAgent((_request, i) => {
          if (i === 0) { for (const c of contents) injectNow(irq, CID, c) }
          return ScriptedLlm.text(i === 0 ? "draft" : "final")
        }, { interrupts: irq, agent: { synthesis: "auto" } })
        yield* run.pipe(Effect.provide(h.layer))
        const messages = h.requests()[1].request.messages
        const interrupt = messages.filter((m) => m.role === "user" && textOf(m.content).startsWith("[USER INTERRUPT]"))
        assert.strictEqual(interrupt.length, 1)
        const lines = textOf(interrupt[0].content).split("\n")
        const quoted = contents.length === 1 ? contents : contents.map((c, i) => `${i + 1}. ${c}`)
        assert.deepStrictEqual(lines.slice(1, 1 + quoted.length), quoted, `${contents.length} message(s)`)
        assert.strictEqual(lines.length, quoted.length + 2)
      }
    }))

  it.effect("the artifact summary names every artifact, separated by commas", () => {
    const site = Tool.make({
      name: "site",
      description: "Builds a page and its style sheet",
      parameters: Schema.Struct({}),
      handler: () =>
        Effect.succeed({
          content: "<html><body>page</body></html>",
          contentType: "html" as const,
          artifacts: [
            { name: "index.html", mimeType: "text/html", size: 30 },
            { name: "style.css", mimeType: "text/css", size: 12 }
          ]
        })
    })
    const h = makeAgent([ScriptedLlm.toolCall("site", {}, { id: "s" }), ScriptedLlm.text("built")], {
      tools: [site],
      agent: { synthesis: "auto" }
    })
    return Effect.gen(function*() {
      yield* run
      const tool = h.requests()[1].request.messages.find((m) => m.role === "tool")
      assert.isTrue(textOf(tool!.content).startsWith("[Artifact generated: index.html, style.css] "))
    }).pipe(Effect.provide(h.layer))
  })
})
