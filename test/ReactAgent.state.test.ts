/**
 * The run state's transitions seen from outside (src/internal/reactAgent/state.ts):
 * the trace's system prompt after a JSON-mode rebuild, the tool-result budget's
 * edges (0 = unlimited, an observation that fills it exactly), usage a tool
 * reports summed per phase (cache fields included, an entry with tokens but no
 * call), a compaction's list as the model's next context (and never written to
 * afterwards), and no interrupts in synthesis when none were sent. In process
 * over `ScriptedLlm`, real tools and a guard whose answers are scripted.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Message from "../src/Message.js"
import type { ChatMessage } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import * as Usage from "../src/Usage.js"
import { addTool, bigTool, echoTool, jsonLlm, makeAgent } from "./utils/agentLayers.js"

const run = (query = "go") =>
  Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runCollect(a.run({ query }))).pipe(Effect.map(Chunk.toArray))

const done = (events: ReadonlyArray<RunEvent>) => {
  const last = events[events.length - 1]
  if (last._tag !== "Done") throw new Error(`last event is ${last._tag}`)
  return { ...last, messages: last.messages ?? [] }
}

const toolMessages = (messages: ReadonlyArray<ChatMessage>) =>
  messages.flatMap((m) => (m.role === "tool" ? [Message.textOf(m.content)] : []))

describe("ReactAgent run state", () => {
  it.effect("JSON mode: the rebuilt system prompt replaces the first message of the trace (Done.messages) too", () => {
    // over 12 tools a selection call picks `add`; the model then calls `echo`, which loads it
    const filler = Array.from(
      { length: 12 },
      (_, i) =>
        Tool.make({
          name: `filler_${i}`,
          description: `Filler ${i}`,
          parameters: Schema.Struct({}),
          handler: () => Effect.succeed("f")
        })
    )
    const h = makeAgent([
      ScriptedLlm.text("{\"tools\":[\"add\"]}"),
      ScriptedLlm.jsonToolCall("echo", { text: "hi" }),
      ScriptedLlm.jsonFinal("done"),
      ScriptedLlm.text("done")
    ], { tools: [addTool, echoTool, ...filler], llm: jsonLlm })
    return Effect.gen(function*() {
      const d = done(yield* run())
      const rebuilt = h.requests()[2].request.messages[0]
      assert.include(Message.textOf(rebuilt.content), "- echo:")
      assert.strictEqual(d.messages[0].role, "system")
      assert.deepStrictEqual(d.messages[0], rebuilt)
      // one system prompt in the trace, not a second one appended
      assert.strictEqual(d.messages.filter((m) => m.role === "system").length, 1)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("toolResultBudget 0 is no budget: a big observation reaches the model whole", () => {
    const h = makeAgent([
      ScriptedLlm.toolCall("big", { size: 4000 }, { id: "b1" }),
      ScriptedLlm.text("ok"),
      ScriptedLlm.text("ok")
    ], { tools: [bigTool], agent: { toolResultBudget: 0, toolObsTruncation: 100_000 } })
    return Effect.gen(function*() {
      yield* run()
      assert.deepStrictEqual(toolMessages(h.requests()[1].request.messages), ["x".repeat(4000)])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("an observation that fills the tool-result budget exactly passes whole; the next one is cut to nothing", () => {
    // 100 ASCII chars = 25 estimated tokens = the budget
    const h = makeAgent([
      ScriptedLlm.toolCall("big", { size: 100 }, { id: "b1" }),
      ScriptedLlm.toolCall("big", { size: 8 }, { id: "b2" }),
      ScriptedLlm.text("ok"),
      ScriptedLlm.text("ok")
    ], { tools: [bigTool], agent: { toolResultBudget: 25, completionCheck: false } })
    return Effect.gen(function*() {
      yield* run()
      const seen = toolMessages(h.requests()[2].request.messages)
      assert.strictEqual(seen[0], "x".repeat(100))
      assert.isTrue(seen[1].startsWith("\n[Truncated: the tool-result budget of 25 tokens"), seen[1])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("usage tools report is summed per phase, cache fields included; tokens without a call still count", () => {
    const reports: ReadonlyArray<Usage.Usage> = [
      Usage.make(100, 10, { cached: 40, cacheWrite: 7 }),
      Usage.make(50, 5, { cached: 20, cacheWrite: 3 }),
      // a sub-run that billed tokens without a completed call (llm_calls 0)
      Usage.make(6, 0, { calls: 0 })
    ]
    let n = 0
    const reporter = Tool.make({
      name: "sub",
      description: "A sub-run that reports its usage",
      parameters: Schema.Struct({}),
      handler: () => Effect.sync(() => ({ content: `part ${n}`, contentType: "text" as const, usage: reports[n++] }))
    })
    const h = makeAgent([
      ScriptedLlm.toolCall("sub", {}, { id: "s1" }),
      ScriptedLlm.toolCall("sub", {}, { id: "s2" }),
      ScriptedLlm.toolCall("sub", {}, { id: "s3" }),
      ScriptedLlm.text("ok"),
      ScriptedLlm.text("ok")
    ], { tools: [reporter], agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const d = done(yield* run())
      assert.deepStrictEqual(d.usage.by_phase.subagents, {
        prompt_tokens: 156,
        completion_tokens: 15,
        total_tokens: 171,
        llm_calls: 2,
        cached_tokens: 60,
        cached_input_tokens: 60,
        cache_write_input_tokens: 10
      })
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a compaction's list is the model's next context, and the loop never writes into the guard's list", () => {
    const summary: ReadonlyArray<ChatMessage> = [
      Message.system("sys"),
      Message.user("summary of the work so far", { pinned: true })
    ]
    let checks = 0
    const guard: ContextGuard.ContextGuardService = {
      budget: 1_000_000,
      estimate: () => 0,
      // every check is made (the second one compacts)
      fits: () => false,
      checkAndCompact: (messages) =>
        Effect.sync(() => {
          checks++
          // the second check (before the second loop call) compacts
          return checks === 2
            ? {
              messages: summary,
              compacted: true,
              originalMessages: messages.length,
              keptMessages: summary.length,
              usage: Usage.empty
            }
            : {
              messages,
              compacted: false,
              originalMessages: messages.length,
              keptMessages: messages.length,
              usage: Usage.empty
            }
        })
    }
    const h = makeAgent([
      ScriptedLlm.toolCall("echo", { text: "one" }, { id: "c1" }),
      ScriptedLlm.toolCall("echo", { text: "two" }, { id: "c2" }),
      ScriptedLlm.text("ok"),
      ScriptedLlm.text("ok")
    ], { tools: [echoTool], guard: Layer.succeed(ContextGuard.ContextGuard, guard), agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const events = yield* run()
      assert.isTrue(events.some((e) => e._tag === "Compact"))
      assert.deepStrictEqual(h.requests()[1].request.messages, summary)
      // the third call sees the summary and what came after it
      const third = h.requests()[2].request.messages
      assert.deepStrictEqual(third.slice(0, 2), summary)
      assert.deepStrictEqual(toolMessages(third), ["echo: two"])
      // the guard's own list is untouched
      assert.strictEqual(summary.length, 2)
      // the trace keeps everything
      assert.deepStrictEqual(toolMessages(done(events).messages), ["echo: one", "echo: two"])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("no interrupts sent: synthesis is told of none", () => {
    const h = makeAgent([ScriptedLlm.text("draft"), ScriptedLlm.text("final")], { tools: [echoTool] })
    return Effect.gen(function*() {
      const d = done(yield* run())
      assert.strictEqual(d.answer, "final")
      const synthesis = h.requests()[1].request.messages.map((m) => Message.textOf(m.content)).join("\n")
      assert.include(synthesis, "draft")
      assert.notInclude(synthesis, "Messages the user sent during the work")
    }).pipe(Effect.provide(h.layer))
  })
})
