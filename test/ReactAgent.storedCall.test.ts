/**
 * A loop call's activity as a durable host stores it (src/internal/reactAgent/loopCall.ts):
 * results go through the activity's schema (encoded, stored as JSON, decoded back),
 * as the server's journal does. A step stored by an earlier version — a bare
 * `ChatResponse`, or a streamed call's `{ response, shown }` — replays as its
 * reply, with its shown flag, and without a carried drain (the drain after it
 * is then a step of its own, `drain/<n>/final`); a step without `shown` reads
 * as not shown. What this version stores: a native reply calling tools carries
 * an empty drain; a call the last tool round left no message for is one
 * activity (no `…/drained` one); the first loop call does not drain before the
 * model is asked (a message that arrives then is taken in after the reply).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { ChatResponseSchema } from "../src/Llm.js"
import type { ChatResponse } from "../src/Llm.js"
import { textOf } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import type * as RunJournal from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Usage from "../src/Usage.js"
import { echoTool, injectNow, makeAgent, makeInterrupts } from "./utils/agentLayers.js"

/**
 * A journal that stores each activity's result through its schema (encoded to
 * JSON and decoded back, as a durable host does) and returns the stored result;
 * an activity named in `stored` is not run: its stored JSON is decoded.
 * `before(name)` runs when an activity is asked for, before it runs.
 */
const codecJournal = (
  stored: Readonly<Record<string, unknown>> = {},
  before: (name: string) => void = () => undefined
) => {
  const names: Array<string> = []
  const results = new Map<string, unknown>()
  const events: Array<RunEvent> = []
  const journal: RunJournal.RunJournal = {
    activity: (o) =>
      Effect.suspend(() => {
        names.push(o.name)
        before(o.name)
        if (o.name in stored) return Effect.orDie(Schema.decodeUnknown(o.success)(stored[o.name]))
        return Effect.flatMap(o.execute({ restarted: false }), (a) =>
          Effect.orDie(Effect.flatMap(Schema.encode(o.success)(a), (encoded) => {
            const json: unknown = JSON.parse(JSON.stringify(encoded))
            results.set(o.name, json)
            return Schema.decodeUnknown(o.success)(json)
          })))
      }),
    emit: (event) => Effect.sync(() => void events.push(event))
  }
  return { journal, names, results, events }
}

const reply = (content: string): ChatResponse => ({
  content,
  toolCalls: [],
  finishReason: "stop",
  usage: Usage.make(30, 4)
})
const encoded = (response: ChatResponse) => Schema.encodeSync(ChatResponseSchema)(response)

/** The event tags, a run of equal tags (an answer's deltas) as one. */
const tags = (events: ReadonlyArray<RunEvent>) =>
  events.map((e) => e._tag).filter((t, i, all) => i === 0 || all[i - 1] !== t)

const doneOf = (events: ReadonlyArray<RunEvent>) => {
  const last = events[events.length - 1]
  if (last._tag !== "Done") throw new Error(`last event is ${last._tag}`)
  return last
}

/** Runs the agent (synthesis `auto`: loop calls are streamed) over `journal`. */
const execute = (h: ReturnType<typeof makeAgent>, journal: RunJournal.RunJournal, conversationId = "c-stored") =>
  Effect.flatMap(ReactAgent.ReactAgent, (a) => a.execute({ query: "go", conversationId }, journal)).pipe(
    Effect.provide(h.layer)
  )

const streamedAgent = () =>
  makeAgent([ScriptedLlm.text("asked again")], {
    tools: [echoTool],
    agent: { synthesis: "auto", completionCheck: false }
  })

describe("ReactAgent: a loop call stored by an earlier version", () => {
  it.effect("a bare ChatResponse replays as the reply, not shown (the answer is shown now); its drain is a step of its own", () =>
    Effect.gen(function*() {
      const h = streamedAgent()
      const rec = codecJournal({ "llm/1": encoded(reply("stored answer")) })
      yield* execute(h, rec.journal)
      assert.deepStrictEqual(h.requests(), [])
      assert.deepStrictEqual(rec.names.filter((n) => n.startsWith("llm/") || n.startsWith("drain/")), [
        "llm/1",
        "drain/1/final"
      ])
      const t = tags(rec.events)
      assert.deepStrictEqual(t.slice(t.indexOf("ThinkingDone")), [
        "ThinkingDone",
        "AnswerSignal",
        "AnswerStart",
        "AnswerDelta",
        "AnswerDone",
        "Done"
      ])
      assert.strictEqual(doneOf(rec.events).answer, "stored answer")
    }))

  it.effect("a streamed call's { response, shown } replays with its shown flag; its drain is a step of its own", () =>
    Effect.gen(function*() {
      const h = streamedAgent()
      const rec = codecJournal({ "llm/1": { response: encoded(reply("shown before")), shown: true } })
      yield* execute(h, rec.journal)
      assert.deepStrictEqual(h.requests(), [])
      assert.deepStrictEqual(rec.names.filter((n) => n.startsWith("llm/") || n.startsWith("drain/")), [
        "llm/1",
        "drain/1/final"
      ])
      // the client read the answer as the earlier process streamed it: it is not shown again
      const t = tags(rec.events)
      assert.deepStrictEqual(t.slice(t.indexOf("ThinkingDone")), ["ThinkingDone", "AnswerSignal", "AnswerDone", "Done"])
      assert.strictEqual(doneOf(rec.events).answer, "shown before")
    }))

  it.effect("a stored step with its drain and no shown flag reads as not shown", () =>
    Effect.gen(function*() {
      const h = streamedAgent()
      const rec = codecJournal({ "llm/1": { response: encoded(reply("not shown")), drained: [] } })
      yield* execute(h, rec.journal)
      assert.deepStrictEqual(rec.names.filter((n) => n.startsWith("llm/") || n.startsWith("drain/")), ["llm/1"])
      const t = tags(rec.events)
      assert.deepStrictEqual(t.slice(t.indexOf("ThinkingDone")), [
        "ThinkingDone",
        "AnswerSignal",
        "AnswerStart",
        "AnswerDelta",
        "AnswerDone",
        "Done"
      ])
      assert.strictEqual(doneOf(rec.events).answer, "not shown")
    }))
})

describe("ReactAgent: what a loop call's activity stores", () => {
  it.effect("a tool round and the answer: one activity per call, each with its drain (empty), no …/drained activity", () =>
    Effect.gen(function*() {
      const h = makeAgent([ScriptedLlm.toolCall("echo", { text: "a" }, { id: "c1" }), ScriptedLlm.text("final")], {
        tools: [echoTool],
        agent: { synthesis: "auto", completionCheck: false }
      })
      const rec = codecJournal()
      yield* execute(h, rec.journal)
      assert.deepStrictEqual(rec.names.filter((n) => n.startsWith("llm/") || n.startsWith("drain/")), [
        "llm/1",
        "llm/2"
      ])
      const first = rec.results.get("llm/1") as { readonly shown: boolean; readonly drained: unknown }
      assert.deepStrictEqual([first.shown, first.drained], [false, []])
      const second = rec.results.get("llm/2") as { readonly shown: boolean; readonly drained: unknown }
      assert.deepStrictEqual([second.shown, second.drained], [true, []])
      assert.deepStrictEqual(h.requests().map((r) => r.method), ["stream", "stream"])
      assert.strictEqual(doneOf(rec.events).answer, "final")
    }))

  it.effect("the first loop call does not drain before asking: a message arriving then is taken in after the reply", () =>
    Effect.gen(function*() {
      const interrupts = makeInterrupts()
      const h = makeAgent([ScriptedLlm.text("first answer"), ScriptedLlm.text("answer with the note")], {
        tools: [echoTool],
        interrupts,
        agent: { synthesis: "auto", completionCheck: false }
      })
      // the user writes while the run starts: queued when the first loop call's activity begins
      const rec = codecJournal({}, (name) => {
        if (name === "llm/1") injectNow(interrupts, "c-first", "mind the note")
      })
      yield* execute(h, rec.journal, "c-first")
      assert.deepStrictEqual(rec.names.filter((n) => n.startsWith("llm/") || n.startsWith("drain/")), [
        "llm/1",
        "llm/2"
      ])
      const [first, second] = h.requests().map((r) => r.request.messages)
      assert.deepStrictEqual(first.map((m) => m.role), ["system", "user"])
      assert.isTrue(
        second.some((m) =>
          m.role === "user" && textOf(m.content).startsWith("[USER INTERRUPT]") &&
          textOf(m.content).includes("mind the note")
        )
      )
      const stored = rec.results.get("llm/1") as { readonly drained: ReadonlyArray<{ readonly content: string }> }
      assert.deepStrictEqual(stored.drained.map((d) => d.content), ["mind the note"])
      assert.strictEqual(doneOf(rec.events).answer, "answer with the note")
    }))
})
