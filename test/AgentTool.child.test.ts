/**
 * A sub-agent runs as a child run (SPEC §27): its own run id, its events in the
 * parent's stream with `agent` between `AgentStart` and `AgentDone` (its own
 * `Done` never forwarded), a grandchild's with depth 2, its steps under the
 * call's step in the parent's journal, the caller's thread handed off as asked,
 * and the parent's answer made of its own events only.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { textOf } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as RunEvent from "../src/RunEvent.js"
import * as RunJournal from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { addTool, makeAgent } from "./utils/agentLayers.js"
import { makeSpanRecorder } from "./utils/spans.js"

const quiet = { completionCheck: false, selfReflectionInterval: 0 }

const agentOf = (layer: Layer.Layer<ReactAgent.ReactAgent>) =>
  Effect.map(Layer.build(layer), (context) => Context.get(context, ReactAgent.ReactAgent))

/** A child that adds 2+3 and answers (synthesis policy `always`: its answer streams as deltas). */
const childScript = () => [
  ScriptedLlm.toolCall("add", { a: 2, b: 3 }),
  ScriptedLlm.text("five"),
  ScriptedLlm.text("The sum is 5.")
]

describe("AgentTool: a child run", () => {
  it.scoped("its events reach the parent's stream with agent, between AgentStart and AgentDone; the parent's answer is its own", () =>
    Effect.gen(function*() {
      const child = yield* agentOf(makeAgent(childScript(), { tools: [addTool], agent: quiet }).layer)
      const parent = makeAgent([
        ScriptedLlm.toolCall("research", { query: "what is 2+3?" }, { id: "call_r1" }),
        ScriptedLlm.text("5"),
        ScriptedLlm.text("It is 5.")
      ], { tools: [ReactAgent.asTool(child, { name: "research", description: "Researches" })], agent: quiet })
      const events = yield* Effect.flatMap(
        ReactAgent.ReactAgent,
        (a) => Stream.runCollect(a.run({ query: "2+3?", conversationId: "c1", runId: "run_parent" }))
      ).pipe(Effect.provide(parent.layer))
      const all = [...events]
      const start = all.findIndex((e) => e._tag === "AgentStart")
      const end = all.findIndex((e) => e._tag === "AgentDone")
      assert.isTrue(start >= 0 && end > start, all.map((e) => e._tag).join(","))
      const ref = RunEvent.agentOf(all[start])!
      assert.strictEqual(ref.name, "research")
      assert.strictEqual(ref.parent_run_id, "run_parent")
      assert.strictEqual(ref.depth, 1)
      assert.strictEqual(ref.tool_call_id, "call_r1")
      assert.match(ref.run_id, /^run_[0-9a-f]{32}$/)
      assert.notStrictEqual(ref.run_id, "run_parent")
      // everything between is the child's, tagged with its ref; its Done / RunFailed are not forwarded
      const inner = all.slice(start + 1, end)
      assert.isAbove(inner.length, 3)
      for (const e of inner) assert.deepStrictEqual(RunEvent.agentOf(e), ref, e._tag)
      assert.deepStrictEqual(
        inner.filter((e) => e._tag === "ToolStart").map((e) => (e as { tool_name: string }).tool_name),
        ["add"]
      )
      assert.include(inner.map((e) => e._tag), "AnswerDelta")
      assert.strictEqual(all.filter((e) => e._tag === "Done").length, 1)
      assert.strictEqual(all[all.length - 1]._tag, "Done")
      const done = all[end] as Extract<RunEvent.RunEvent, { _tag: "AgentDone" }>
      assert.strictEqual(done.answer, "The sum is 5.")
      assert.isUndefined(done.error)
      // the parent's answer and collected result are its own: the child's answer deltas are not in it
      const own = all.filter(RunEvent.isOwn)
      const answer = own.flatMap((e) => (e._tag === "AnswerDelta" ? [e.content] : [])).join("")
      assert.strictEqual(answer, "It is 5.")
      const result = yield* ReactAgent.collect(Stream.fromIterable(all))
      assert.strictEqual(result.answer, "It is 5.")
      assert.strictEqual(result.runId, "run_parent")
      // a piped consumer (OpenAI stream, CLI) holds only the parent's answer events: the child's pass
      // at once, in order (the parent writes its answer after its AnswerSignal: nothing is held)
      const settled = all.flatMap(RunEvent.settledAnswers())
      assert.deepStrictEqual(settled.map((e) => e._tag), all.map((e) => e._tag))
    }))

  it("settledAnswers: a child's answer signal does not release the parent's held answer", () => {
    const agent = { name: "research", run_id: "run_c", parent_run_id: "run_p", depth: 1 }
    const settle = RunEvent.settledAnswers()
    const input: ReadonlyArray<RunEvent.RunEvent> = [
      { _tag: "AnswerSignal", agent },
      { _tag: "AnswerDelta", content: "child answer", agent },
      // the parent's loop reply streamed under synthesis `auto`, then void: it called tools
      { _tag: "AnswerStart" },
      { _tag: "AnswerDelta", content: "not the answer" },
      { _tag: "AnswerReset" },
      { _tag: "AnswerSignal" },
      { _tag: "AnswerDelta", content: "the answer" }
    ]
    const out = input.flatMap(settle)
    assert.deepStrictEqual(out.filter(RunEvent.isOwn).flatMap((e) => (e._tag === "AnswerDelta" ? [e.content] : [])), [
      "the answer"
    ])
    assert.deepStrictEqual(out.filter((e) => !RunEvent.isOwn(e)), input.slice(0, 2))
  })

  it.scoped("a grandchild's events keep their innermost agent (depth 2, parent_run_id the child's)", () =>
    Effect.gen(function*() {
      const leaf = yield* agentOf(
        makeAgent([ScriptedLlm.text("leaf"), ScriptedLlm.text("leaf answer")], { agent: quiet }).layer
      )
      const middle = yield* agentOf(
        makeAgent([
          ScriptedLlm.toolCall("leaf", { query: "deeper" }, { id: "call_l" }),
          ScriptedLlm.text("mid"),
          ScriptedLlm.text("middle answer")
        ], { tools: [ReactAgent.asTool(leaf, { name: "leaf", description: "leaf agent" })], agent: quiet }).layer
      )
      const top = makeAgent([
        ScriptedLlm.toolCall("middle", { query: "go" }, { id: "call_m" }),
        ScriptedLlm.text("top"),
        ScriptedLlm.text("top answer")
      ], { tools: [ReactAgent.asTool(middle, { name: "middle", description: "middle agent" })], agent: quiet })
      const events = [
        ...yield* Effect.flatMap(
          ReactAgent.ReactAgent,
          (a) => Stream.runCollect(a.run({ query: "start", runId: "run_top" }))
        ).pipe(
          Effect.provide(top.layer)
        )
      ]
      const starts = events.filter((e) => e._tag === "AgentStart").map((e) => RunEvent.agentOf(e)!)
      assert.deepStrictEqual(starts.map((r) => [r.name, r.depth, r.tool_call_id]), [["middle", 1, "call_m"], [
        "leaf",
        2,
        "call_l"
      ]])
      assert.strictEqual(starts[0].parent_run_id, "run_top")
      assert.strictEqual(starts[1].parent_run_id, starts[0].run_id)
      const leafDeltas = events.filter((e) => e._tag === "AnswerDelta" && RunEvent.agentOf(e)?.name === "leaf")
      assert.isAbove(leafDeltas.length, 0)
      for (const e of leafDeltas) assert.strictEqual(RunEvent.agentOf(e)?.depth, 2)
      assert.strictEqual(events.filter((e) => e._tag === "Done").length, 1)
    }))

  it.scoped("its steps are stored under the call's step of the parent's journal (the names a durable host stores)", () =>
    Effect.gen(function*() {
      const child = yield* agentOf(makeAgent(childScript(), { tools: [addTool], agent: quiet }).layer)
      const parent = makeAgent([
        ScriptedLlm.toolCall("research", { query: "q" }, { id: "call_r1" }),
        ScriptedLlm.text("done"),
        ScriptedLlm.text("Done.")
      ], { tools: [ReactAgent.asTool(child, { name: "research", description: "Researches" })], agent: quiet })
      const names: Array<string> = []
      const keys: Array<string | undefined> = []
      // a journal that is not inline (as a durable host's): every activity is named, every event keyed or not
      const journal: RunJournal.RunJournal = {
        runId: "run_p",
        activity: (a) => Effect.zipRight(Effect.sync(() => names.push(a.name)), a.execute({ restarted: false })),
        emit: (event, options) => Effect.sync(() => RunEvent.isOwn(event) ? undefined : keys.push(options?.key)),
        idempotencyKey: (name) => RunJournal.makeIdempotencyKey("run_p", name)
      }
      yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.execute({ query: "go" }, journal)).pipe(
        Effect.provide(parent.layer)
      )
      const childSteps = names.filter((n) => n.startsWith("tool/1/call_r1/agent/"))
      assert.deepStrictEqual(
        childSteps.map((n) => n.replace("tool/1/call_r1/agent/", "").replace(/call_[^/]+$/, "call")),
        [
          "guard/1",
          "llm/1",
          "tool/1/call",
          "guard/2",
          "llm/2",
          "synthesis"
        ]
      )
      assert.include(names, "tool/1/call_r1")
      // the child's events outside its activities are keyed by the child and their position: a replay skips them
      const positional = keys.filter((k) => k?.startsWith("tool/1/call_r1/agent/e/"))
      assert.isAbove(positional.length, 0)
      assert.strictEqual(new Set(positional).size, positional.length)
      assert.include(keys, "tool/1/call_r1/agent/start")
      assert.include(keys, "tool/1/call_r1/agent/done")
    }))

  it.scoped("history hand-off: none, summary, thread", () =>
    Effect.gen(function*() {
      const runWith = (history: "none" | "summary" | "thread") =>
        Effect.gen(function*() {
          const childHarness = makeAgent([ScriptedLlm.text("ok"), ScriptedLlm.text("child answer")], { agent: quiet })
          const child = yield* agentOf(childHarness.layer)
          const parent = makeAgent([
            ScriptedLlm.toolCall("add", { a: 1, b: 1 }, { id: "call_a" }),
            ScriptedLlm.toolCall("research", { query: "dig" }, { id: "call_r" }),
            ScriptedLlm.text("fine"),
            ScriptedLlm.text("Fine.")
          ], {
            tools: [addTool, ReactAgent.asTool(child, { name: "research", description: "Researches", history })],
            agent: quiet
          })
          yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "the user question" })).pipe(
            Effect.provide(parent.layer)
          )
          return childHarness.requests()[0].request.messages.filter((m) => m.role !== "system").map((
            m
          ) => [m.role, textOf(m.content)])
        })
      assert.deepStrictEqual(yield* runWith("none"), [["user", "dig"]])
      const summary = yield* runWith("summary")
      assert.strictEqual(summary.length, 3)
      assert.include(summary[0][1], "Its user asked: the user question")
      assert.include(summary[0][1], "add({\"a\":1,\"b\":1}) → 2")
      assert.deepStrictEqual(summary[2], ["user", "dig"])
      const thread = yield* runWith("thread")
      assert.deepStrictEqual(thread[0], ["user", "the user question"])
      assert.strictEqual(thread[1][0], "assistant")
      assert.include(thread[1][1], "Called add({\"a\":1,\"b\":1}); result:\n2")
      assert.deepStrictEqual(thread[thread.length - 1], ["user", "dig"])
    }))

  it.scoped("spans nest: the child's invoke_agent (its name) under the parent's execute_tool, under the parent's invoke_agent", () =>
    Effect.gen(function*() {
      const recorder = makeSpanRecorder()
      const child = yield* agentOf(makeAgent(childScript(), { tools: [addTool], agent: quiet }).layer)
      const parent = makeAgent([
        ScriptedLlm.toolCall("research", { query: "q" }, { id: "call_r1" }),
        ScriptedLlm.text("done"),
        ScriptedLlm.text("Done.")
      ], { tools: [ReactAgent.asTool(child, { name: "research", description: "Researches" })], agent: quiet })
      yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "go" })).pipe(
        Effect.provide(parent.layer),
        Effect.provide(recorder.layer)
      )
      const spans = recorder.spans()
      const byName = (name: string) => spans.filter((s) => s.name === name)
      const [top] = byName("invoke_agent ReactAgent")
      const [call] = byName("execute_tool research")
      const [sub] = byName("invoke_agent research")
      assert.isDefined(top)
      assert.isDefined(call)
      assert.isDefined(sub, spans.map((s) => s.name).join(", "))
      assert.strictEqual(call.parentSpanContext?.spanId, top.spanContext().spanId)
      assert.strictEqual(sub.parentSpanContext?.spanId, call.spanContext().spanId)
      const [add] = byName("execute_tool add")
      assert.strictEqual(add.parentSpanContext?.spanId, sub.spanContext().spanId)
    }))
})
