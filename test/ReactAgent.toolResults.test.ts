/**
 * What a tool's result becomes in a run (src/internal/reactAgent/toolCall.ts):
 * the observation the model reads next (an artifact summary only for html or
 * markdown with artifacts, else the content) and the events' fields, which a
 * call without an id (JSON mode), a plain text result and a journal without
 * idempotency keys leave out rather than set to `undefined`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Hooks from "../src/Hooks.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import type * as RunJournal from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import { echoTool, failTool, jsonLlm, makeAgent } from "./utils/agentLayers.js"

const artifact = { name: "report.html", mimeType: "text/html" }

/** A tool whose result has the content type and artifacts it is asked for. */
const richTool = Tool.make({
  name: "render",
  description: "Renders a document",
  parameters: Schema.Struct({
    contentType: Schema.Literal("text", "html", "markdown", "json"),
    artifacts: Schema.Boolean
  }),
  handler: ({ artifacts, contentType }) =>
    Effect.succeed({ content: `the ${contentType} body`, contentType, ...(artifacts ? { artifacts: [artifact] } : {}) })
})

const recording = () => {
  const events: Array<RunEvent> = []
  const journal: RunJournal.RunJournal = {
    activity: (o) => o.execute({ restarted: false }),
    emit: (event) => Effect.sync(() => void events.push(event))
  }
  return { journal, events }
}

const SUMMARY =
  "[Artifact generated: report.html] The content is rendered as a preview in the UI and available for download."

describe("ReactAgent tool results", () => {
  for (
    const [contentType, artifacts, summarised] of [
      ["markdown", false, false],
      ["markdown", true, true],
      ["html", true, true],
      ["html", false, false],
      ["text", true, false],
      ["json", true, false]
    ] as const
  ) {
    it.effect(`${contentType} ${artifacts ? "with" : "without"} artifacts: the model reads ${summarised ? "the artifact summary" : "the content"}`, () => {
      const h = makeAgent([
        ScriptedLlm.toolCall("render", { contentType, artifacts }, { id: "r1" }),
        ScriptedLlm.text("done")
      ], {
        tools: [richTool],
        agent: { synthesis: "auto", completionCheck: false }
      })
      return Effect.gen(function*() {
        const rec = recording()
        yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.execute({ query: "render it" }, rec.journal))
        const toolMessage = h.requests()[1].request.messages.find((m) => m.role === "tool")
        const content = String(toolMessage?.content)
        if (summarised) assert.isTrue(content.startsWith(SUMMARY), content)
        else assert.strictEqual(content, `the ${contentType} body`)
        const done = rec.events.find((e) => e._tag === "ToolDone")
        assert.isTrue(
          done?._tag === "ToolDone" && done.content_type === contentType &&
            done.observation === `the ${contentType} body`
        )
        if (done?._tag !== "ToolDone") return
        if (artifacts) assert.deepStrictEqual(done.artifacts, [artifact])
        else assert.isFalse("artifacts" in done)
      }).pipe(Effect.provide(h.layer))
    })
  }

  it.effect("a JSON-mode call (no id), a text result, no idempotency keys: the events carry no such fields", () => {
    const h = makeAgent([
      ScriptedLlm.jsonToolCall("echo", { text: "a" }),
      ScriptedLlm.jsonFinal("done"),
      ScriptedLlm.text("done")
    ], {
      tools: [echoTool],
      llm: jsonLlm,
      agent: { completionCheck: false }
    })
    return Effect.gen(function*() {
      const rec = recording()
      yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.execute({ query: "echo a" }, rec.journal))
      const start = rec.events.find((e) => e._tag === "ToolStart")
      const done = rec.events.find((e) => e._tag === "ToolDone")
      assert.deepInclude(start, { tool_name: "echo", tool_args: { text: "a" } })
      assert.deepInclude(done, { tool_name: "echo", observation: "echo: a", content_type: "text" })
      for (const key of ["tool_call_id", "idempotency_key"]) assert.isFalse(key in start!, key)
      for (const key of ["tool_call_id", "artifacts", "usage", "tool_args"]) assert.isFalse(key in done!, key)
      const final = rec.events[rec.events.length - 1]
      assert.isTrue(final._tag === "Done")
      if (final._tag !== "Done") return
      const steps = final.steps ?? []
      assert.strictEqual(steps.length, 1)
      for (const key of ["tool_call_id", "artifacts", "usage"]) assert.isFalse(key in steps[0], key)
    }).pipe(Effect.provide(h.layer))
  })

  it.live("a JSON-mode call's hook context has no toolCallId; the step's elapsed time is the call's, in seconds", () => {
    const seen: Array<ReadonlyArray<string>> = []
    const h = makeAgent([
      ScriptedLlm.jsonToolCall("echo", { text: "a" }),
      ScriptedLlm.jsonFinal("done"),
      ScriptedLlm.text("done")
    ], {
      tools: [echoTool],
      llm: jsonLlm,
      agent: { completionCheck: false },
      hooks: Hooks.layer([
        Hooks.pre({ name: "keys", run: (context) => Effect.sync(() => void seen.push(Object.keys(context))) })
      ])
    })
    return Effect.gen(function*() {
      const rec = recording()
      yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.execute({ query: "echo a" }, rec.journal))
      assert.strictEqual(seen.length, 1)
      assert.isFalse(seen[0].includes("toolCallId"), seen[0].join(","))
      const done = rec.events.find((e) => e._tag === "ToolDone")
      // wall-clock milliseconds: a sum instead of a difference would be decades
      assert.isTrue(done?._tag === "ToolDone" && done.iter_elapsed >= 0 && done.iter_elapsed < 60, JSON.stringify(done))
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("an error observation is outside the tool-result budget: the model reads it whole, the budget is left to results", () => {
    const h = makeAgent([
      ScriptedLlm.toolCall("fail", {}, { id: "f1" }),
      ScriptedLlm.toolCall("echo", { text: "ok" }, { id: "e1" }),
      ScriptedLlm.text("done")
    ], { tools: [failTool, echoTool], agent: { synthesis: "auto", completionCheck: false, toolResultBudget: 4 } })
    return Effect.gen(function*() {
      yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.execute({ query: "try" }, recording().journal))
      const toolMessages = h.requests()[2].request.messages.filter((m) => m.role === "tool").map((m) => m.content)
      assert.deepStrictEqual(toolMessages, ["Error: it broke", "echo: ok"])
    }).pipe(Effect.provide(h.layer))
  })
})
