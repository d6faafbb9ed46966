import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { makeAgent, messagesOf } from "./utils/agentLayers.js"

const events = (query: string) =>
  Effect.flatMap(ReactAgent.ReactAgent, (agent) => Stream.runCollect(agent.run({ query }))).pipe(
    Effect.map(Chunk.toArray)
  )

const tags = (es: ReadonlyArray<RunEvent>) => es.map((e) => e._tag)

describe("ReactAgent native mode", () => {
  it.effect("a tool round: events in order, tool message right after the assistant call", () => {
    const h = makeAgent([
      ScriptedLlm.toolCall("add", { a: 2, b: 3 }, { id: "c1" }),
      ScriptedLlm.text("It is 5."),
      ScriptedLlm.text("**5**")
    ])
    return Effect.gen(function*() {
      const es = yield* events("2+3?")
      assert.deepStrictEqual(tags(es), [
        "ThinkingStart",
        "ThinkingDone",
        "ToolStart",
        "ToolDone",
        "ThinkingStart",
        "ThinkingDone",
        "AnswerSignal",
        "AnswerStart",
        "AnswerDelta",
        "AnswerDone",
        "Done"
      ])
      const toolDone = es.find((e) => e._tag === "ToolDone")!
      assert.strictEqual(toolDone._tag === "ToolDone" && toolDone.observation, "5")
      assert.strictEqual(toolDone._tag === "ToolDone" && toolDone.tool_call_id, "c1")
      const second = messagesOf(h, 1)
      assert.strictEqual(second[0].role, "system")
      assert.deepStrictEqual(second[1], { role: "user", content: "2+3?", pinned: true })
      assert.strictEqual(second[2].role, "assistant")
      assert.deepStrictEqual(second[3], { role: "tool", tool_call_id: "c1", content: "5", name: "add" })
      assert.strictEqual(second.length, 4)
      const req = h.requests()[0].request
      assert.strictEqual(req.toolChoice, "auto")
      assert.isTrue((req.tools ?? []).some((t) => t.function.name === "add"))
      const done = es[es.length - 1]
      assert.isTrue(done._tag === "Done" && done.answer === "**5**" && done.iterations === 2)
      assert.strictEqual(h.requests()[2].method, "stream")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("repeated and empty tool-call ids are renamed to ids unique within the message, also when the model used the renamed form", () => {
    // the third "x" would be renamed call_1_2_x, which the model already sent as the first id
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "call_1_2_x", name: "add", arguments: { a: 1, b: 1 } },
        { id: "x", name: "add", arguments: { a: 2, b: 2 } },
        { id: "x", name: "add", arguments: { a: 3, b: 3 } },
        { id: "", name: "add", arguments: { a: 4, b: 4 } }
      ]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("done!")
    ])
    return Effect.gen(function*() {
      yield* events("sums")
      const second = messagesOf(h, 1)
      const ids = (second[2] as any).tool_calls.map((c: any) => c.id)
      assert.strictEqual(new Set(ids).size, 4, `unique ids: ${ids.join(",")}`)
      assert.isTrue(ids.every((id: string) => id !== ""))
      assert.deepStrictEqual(
        second.slice(3).map((m: any) => [m.tool_call_id, m.content]),
        ids.map((id: string, i: number) => [id, String(2 * (i + 1))])
      )
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("no tools: tools and tool_choice are omitted", () => {
    const h = makeAgent([ScriptedLlm.text("hi"), ScriptedLlm.text("hello")], { tools: [] })
    return Effect.gen(function*() {
      const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "hey" }))
      assert.strictEqual(result.answer, "hello")
      const req = h.requests()[0].request
      assert.isUndefined(req.tools)
      assert.isUndefined(req.toolChoice)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("parallel calls: all starts before dones, results in request order, round takes the slowest tool's time", () => {
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "a", name: "sleep", arguments: { ms: 150 } },
        { id: "b", name: "sleep", arguments: { ms: 50 } },
        { id: "c", name: "sleep", arguments: { ms: 100 } }
      ]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("done!")
    ])
    return Effect.gen(function*() {
      // TestClock time: deterministic, whatever the machine's load
      const stamps: Array<[string, number]> = []
      const fiber = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) =>
        Stream.runCollect(
          agent.run({ query: "sleep" }).pipe(
            Stream.tap((e) => Effect.map(Clock.currentTimeMillis, (now) => void stamps.push([e._tag, now])))
          )
        )).pipe(Effect.map(Chunk.toArray), Effect.fork)
      // enough virtual time for the three sleeps run one after another (300 ms)
      for (let i = 0; i < 40; i++) yield* TestClock.adjust("10 millis")
      const es = yield* Fiber.join(fiber)
      const first = stamps.find(([t]) => t === "ToolStart")![1]
      const last = stamps.filter(([t]) => t === "ToolDone").pop()![1]
      const toolTags = tags(es).filter((t) => t === "ToolStart" || t === "ToolDone")
      assert.deepStrictEqual(toolTags, ["ToolStart", "ToolStart", "ToolStart", "ToolDone", "ToolDone", "ToolDone"])
      assert.strictEqual(last - first, 150, "the round lasts as long as its slowest tool (sequential would be 300)")
      const doneIds = es.flatMap((e) => (e._tag === "ToolDone" ? [e.tool_call_id] : []))
      assert.deepStrictEqual(doneIds, ["b", "c", "a"]) // completion order
      const second = messagesOf(h, 1)
      assert.deepStrictEqual(
        second.slice(3).map((m) => (m.role === "tool" ? [m.tool_call_id, m.content] : m.role)),
        [["a", "slept 150"], ["b", "slept 50"], ["c", "slept 100"]]
      )
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a reply with text and no tool calls is the final answer", () => {
    const h = makeAgent([ScriptedLlm.text("final text"), ScriptedLlm.fail("Server")])
    return Effect.gen(function*() {
      const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "q" }))
      assert.strictEqual(result.answer, "final text")
      assert.isUndefined(result.error)
      assert.strictEqual(result.iterations, 1)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("LLM error in the loop: RunFailed then Done, the stream does not fail", () => {
    const h = makeAgent([ScriptedLlm.fail("Auth", "bad key")])
    return Effect.gen(function*() {
      const es = yield* events("q")
      assert.deepStrictEqual(tags(es), ["ThinkingStart", "RunFailed", "Done"])
      const failed = es[1]
      assert.isTrue(failed._tag === "RunFailed" && failed.retryable === false && failed.message.includes("bad key"))
      const retryable = makeAgent([ScriptedLlm.fail("RateLimited")])
      const r = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "q" })).pipe(
        Effect.provide(retryable.layer)
      )
      assert.strictEqual(r.error?.retryable, true)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("usage per phase: loop and synthesis counted", () => {
    const h = makeAgent([
      ScriptedLlm.toolCall("add", { a: 1, b: 1 }, { usage: { prompt: 10, completion: 5 } }),
      ScriptedLlm.text("2", { usage: { prompt: 20, completion: 1 } }),
      ScriptedLlm.text("Two", { usage: { prompt: 30, completion: 2 } })
    ])
    return Effect.gen(function*() {
      const r = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "1+1" }))
      assert.strictEqual(r.usage.by_phase.loop?.total_tokens, 36)
      assert.strictEqual(r.usage.by_phase.loop?.llm_calls, 2)
      assert.strictEqual(r.usage.by_phase.synthesis?.total_tokens, 32)
      assert.strictEqual(r.usage.total_tokens, 68)
      assert.strictEqual(r.usage.llm_calls, 3)
    }).pipe(Effect.provide(h.layer))
  })
})
