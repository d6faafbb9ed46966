import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as ContextGuard from "../src/ContextGuard.js"
import { LlmError } from "../src/Llm.js"
import type { ChatMessage } from "../src/Message.js"
import { textOf } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type * as RunJournal from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { jsonLlm, makeAgent, messagesOf, recordingGuard } from "./utils/agentLayers.js"

const run = (query: string) => Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query }))
const userTexts = (ms: ReadonlyArray<ChatMessage>) => ms.filter((m) => m.role === "user").map((m) => textOf(m.content))
const count = (ms: ReadonlyArray<ChatMessage>, needle: string) => userTexts(ms).filter((t) => t.includes(needle)).length

describe("ReactAgent harness", () => {
  it.effect("cycle detection: warning at the 3rd identical call (not the 2nd) and again at the 4th", () => {
    const call = ScriptedLlm.toolCall("echo", { text: "same" })
    const h = makeAgent([call, call, call, call, ScriptedLlm.text("done"), ScriptedLlm.text("done")], {
      agent: { completionCheck: false }
    })
    return Effect.gen(function*() {
      yield* run("q")
      assert.strictEqual(count(messagesOf(h, 2), "identical arguments"), 0)
      const third = messagesOf(h, 3)
      assert.strictEqual(count(third, "identical arguments"), 1)
      assert.include(textOf(third[third.length - 1].content), "You have called `echo` with identical arguments 3 times")
      assert.strictEqual(count(messagesOf(h, 4), "identical arguments 4 times"), 1)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("cycle detection hashes canonical JSON (key order does not matter); JSON mode too", () => {
    const h = makeAgent([
      ScriptedLlm.text("{\"type\":\"tool_call\",\"tool_name\":\"add\",\"tool_args\":{\"a\":1,\"b\":2}}"),
      ScriptedLlm.text("{\"type\":\"tool_call\",\"tool_name\":\"add\",\"tool_args\":{\"b\":2,\"a\":1}}"),
      ScriptedLlm.text("{\"type\":\"tool_call\",\"tool_name\":\"add\",\"tool_args\":{\"b\":2,\"a\":1}}"),
      ScriptedLlm.jsonFinal("3"),
      ScriptedLlm.text("3")
    ], { llm: jsonLlm, agent: { completionCheck: false } })
    return Effect.gen(function*() {
      yield* run("q")
      const fourth = messagesOf(h, 3)
      assert.include(textOf(fourth[fourth.length - 1].content), "identical arguments 3 times")
      assert.strictEqual(textOf(fourth[fourth.length - 2].content), "Observation: 3")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("self-reflection after the 6th tool call (not the 5th), quoting the goal", () => {
    const script = [1, 2, 3, 4, 5, 6].map((n) => ScriptedLlm.toolCall("add", { a: n, b: n }))
    const h = makeAgent([...script, ScriptedLlm.text("done"), ScriptedLlm.text("done")], {
      agent: { completionCheck: false }
    })
    return Effect.gen(function*() {
      yield* run("find the meaning")
      assert.strictEqual(count(messagesOf(h, 5), "Pause and reflect"), 0)
      const seventh = messagesOf(h, 6)
      assert.strictEqual(count(seventh, "Pause and reflect"), 1)
      assert.include(textOf(seventh[seventh.length - 1].content), "\"find the meaning\"")
      assert.strictEqual(seventh[seventh.length - 2].role, "tool") // after the tool message, never between call and result
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("no self-reflection on the last iteration", () => {
    const script = [1, 2, 3, 4, 5, 6].map((n) => ScriptedLlm.toolCall("add", { a: n, b: n }))
    const h = makeAgent([...script, ScriptedLlm.text("summary")], { agent: { maxIterations: 6 } })
    return Effect.gen(function*() {
      const r = yield* run("q")
      const trace = r.messages
      assert.strictEqual(count(trace, "Pause and reflect"), 0)
      assert.strictEqual(r.iterations, 6)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("completion checklist: once after >= 3 tools, then the next answer is accepted", () => {
    const h = makeAgent([
      ScriptedLlm.toolCall("add", { a: 1, b: 1 }),
      ScriptedLlm.toolCall("add", { a: 2, b: 2 }),
      ScriptedLlm.toolCall("add", { a: 3, b: 3 }),
      ScriptedLlm.text("first answer"),
      ScriptedLlm.toolCall("add", { a: 4, b: 4 }),
      ScriptedLlm.text("second answer"),
      ScriptedLlm.fail("Server")
    ])
    return Effect.gen(function*() {
      const r = yield* run("q")
      assert.strictEqual(r.answer, "second answer")
      assert.strictEqual(count(r.messages, "verify your answer"), 1)
      assert.strictEqual(r.iterations, 6)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("completion checklist skipped with < 3 tools, for long answers, when disabled", () => {
    const twoTools = makeAgent([
      ScriptedLlm.toolCall("add", { a: 1, b: 1 }),
      ScriptedLlm.toolCall("add", { a: 2, b: 2 }),
      ScriptedLlm.text("short"),
      ScriptedLlm.text("short")
    ])
    const tools3 = [1, 2, 3].map((n) => ScriptedLlm.toolCall("add", { a: n, b: n }))
    const long = makeAgent([...tools3, ScriptedLlm.text("x".repeat(801)), ScriptedLlm.text("ok")])
    const disabled = makeAgent([...tools3, ScriptedLlm.text("short"), ScriptedLlm.text("ok")], {
      agent: { completionCheck: false }
    })
    return Effect.gen(function*() {
      for (const h of [twoTools, long, disabled]) {
        const r = yield* run("q").pipe(Effect.provide(h.layer))
        assert.strictEqual(count(r.messages, "verify your answer"), 0)
        assert.isUndefined(r.error)
      }
    })
  })

  it.effect("max iterations: summary of the steps as the loop answer; synthesis still runs", () => {
    const h = makeAgent([
      ScriptedLlm.toolCall("add", { a: 1, b: 1 }),
      ScriptedLlm.toolCall("fail", {}),
      ScriptedLlm.fail("Server")
    ], { agent: { maxIterations: 2 } })
    return Effect.gen(function*() {
      const r = yield* run("q")
      assert.strictEqual(r.iterations, 2)
      assert.include(r.answer, "maximum number of iterations (2)")
      assert.include(r.answer, "1. add: OK")
      assert.include(r.answer, "2. fail: error (it broke)")
      assert.strictEqual(h.requests()[2].method, "stream")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("RunInput.maxIterations overrides the agent's", () => {
    const h = makeAgent([ScriptedLlm.toolCall("add", { a: 1, b: 1 }), ScriptedLlm.text("sum")])
    return Effect.gen(function*() {
      const r = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "q", maxIterations: 1 }))
      assert.strictEqual(r.iterations, 1)
      assert.strictEqual(r.answer, "sum")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("tool-result budget: past it observations are truncated with a notice (events keep everything)", () => {
    const h = makeAgent([
      ScriptedLlm.toolCall("big", { size: 600 }),
      ScriptedLlm.toolCall("big", { size: 600 }),
      ScriptedLlm.text("ok"),
      ScriptedLlm.text("ok")
    ], { agent: { toolResultBudget: 100, completionCheck: false } })
    return Effect.gen(function*() {
      const r = yield* run("q")
      const tools = r.messages.filter((m) => m.role === "tool").map((m) => textOf(m.content))
      assert.isTrue(tools[0].startsWith("x".repeat(400)))
      assert.isFalse(tools[0].startsWith("x".repeat(401)))
      assert.include(tools[0], "tool-result budget of 100 tokens")
      assert.isFalse(tools[1].includes("xxxx"))
      assert.include(tools[1], "tool-result budget of 100 tokens")
      assert.strictEqual(r.steps[1].observation.length, 600)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("turn token budget stops the loop", () => {
    const usage = { prompt: 60, completion: 0 }
    const h = makeAgent([
      ScriptedLlm.toolCall("add", { a: 1, b: 1 }, { usage }),
      ScriptedLlm.toolCall("add", { a: 2, b: 2 }, { usage }),
      ScriptedLlm.toolCall("add", { a: 3, b: 3 }, { usage }),
      ScriptedLlm.fail("Server")
    ], { agent: { maxTurnTokens: 100 } })
    return Effect.gen(function*() {
      const r = yield* run("q")
      assert.strictEqual(r.iterations, 2)
      assert.include(r.answer, "token budget of this turn (100 tokens)")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("artifacts: the model sees a summary, events and the trace keep the full content", () => {
    const h = makeAgent([
      ScriptedLlm.toolCall("page", {}, { id: "p" }),
      ScriptedLlm.text("made"),
      ScriptedLlm.text("made")
    ])
    return Effect.gen(function*() {
      const r = yield* run("q")
      const toolMsg = messagesOf(h, 1)[3]
      assert.strictEqual(
        textOf(toolMsg.content),
        "[Artifact generated: page.html] The content is rendered as a preview in the UI and available for download. Do not paste the raw source in your answer."
      )
      assert.strictEqual(r.steps[0].observation, "<html><body>big page</body></html>")
      assert.strictEqual(r.steps[0].content_type, "html")
      assert.strictEqual(r.steps[0].artifacts?.[0].name, "page.html")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a journal stores a guard check only when the list does not fit (the check of a fitting list is pure)", () => {
    const names = (budget: number) => {
      const h = makeAgent([
        ScriptedLlm.toolCall("add", { a: 1, b: 1 }),
        ScriptedLlm.text("2"),
        ScriptedLlm.text("It is 2.")
      ], {
        guard: Layer.succeed(ContextGuard.ContextGuard, ContextGuard.makeUnsafe({ budget })),
        agent: { completionCheck: false }
      })
      const seen: Array<string> = []
      const journal: RunJournal.RunJournal = {
        activity: (options) =>
          Effect.suspend(() => {
            seen.push(options.name)
            return options.execute({ restarted: false })
          }),
        emit: () => Effect.void
      }
      return Effect.flatMap(ReactAgent.ReactAgent, (agent) => agent.execute({ query: "1+1?" }, journal)).pipe(
        Effect.provide(h.layer),
        Effect.as(seen)
      )
    }
    return Effect.gen(function*() {
      const roomy = yield* names(100_000)
      assert.isTrue(roomy.some((n) => n.startsWith("llm/")), roomy.join(","))
      assert.isFalse(roomy.some((n) => n.startsWith("guard/")), roomy.join(","))
      const tight = yield* names(60)
      assert.isTrue(tight.some((n) => n.startsWith("guard/")), tight.join(","))
    })
  })

  it.effect("context overflow: force-compact to 50% of the budget and retry once per run", () => {
    const guard = recordingGuard({ budget: 1000 })
    const h = makeAgent([
      ScriptedLlm.fail("ContextOverflow", "too long"),
      ScriptedLlm.toolCall("add", { a: 1, b: 1 }),
      ScriptedLlm.fail("ContextOverflow", "too long again")
    ], { guard: guard.layer })
    return Effect.gen(function*() {
      const r = yield* run("q")
      assert.deepStrictEqual(guard.checks.map((c) => c?.budget), [undefined, 500, undefined])
      assert.deepStrictEqual(guard.checks.map((c) => c?.hint), [
        "react_iteration",
        "react_iteration",
        "react_iteration"
      ])
      assert.strictEqual(h.requests().length, 3)
      assert.include(r.error?.message ?? "", "too long again")
      assert.strictEqual(r.iterations, 2)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("the real guard compacts the model's list (Compact event, compaction usage); the trace stays complete", () => {
    const compactor = ScriptedLlm.makeUnsafe([
      ScriptedLlm.text("summary of earlier work", { usage: { prompt: 7, completion: 3 } })
    ], {
      onExhausted: "repeatLast"
    })
    const guard = recordingGuard({ budget: 600, keepRecent: 2, llm: compactor.service })
    const h = makeAgent([
      ScriptedLlm.toolCall("big", { size: 1200 }),
      ScriptedLlm.toolCall("big", { size: 1200 }),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("done")
    ], { guard: guard.layer, agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const es = Chunk.toArray(
        yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runCollect(a.run({ query: "q" })))
      )
      const compacts = es.filter((e) => e._tag === "Compact")
      assert.isAtLeast(compacts.length, 1)
      const done = es[es.length - 1]
      if (done._tag !== "Done") throw new Error("no Done")
      assert.strictEqual(done.usage.by_phase.compaction?.total_tokens, 10 * compactor.calls)
      assert.isAbove(compactor.calls, 0)
      const trace = done.messages ?? []
      assert.strictEqual(trace.filter((m) => m.role === "tool").length, 2)
      const sent = messagesOf(h, 2)
      assert.isBelow(sent.length, trace.length)
      assert.strictEqual(sent[0].role, "system")
      assert.isTrue(sent.some((m) => m.role === "user" && m.pinned === true && textOf(m.content) === "q"))
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("LlmError surfaces in RunFailed with the reason", () =>
    Effect.sync(() => assert.isTrue(new LlmError({ reason: "Server", message: "x" }).retryable)))
})
