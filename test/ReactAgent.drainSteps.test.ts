/**
 * The drains of the loop as steps (src/internal/reactAgent/harness.ts), where the
 * full mutation run of 5 December found no test looking: a loop call that took
 * messages in asks the model again as `llm/<n>/drained`, which does not drain
 * before asking; the overflow retry does not drain before asking either; a loop
 * stopped with the drain of its last tool round still due makes it as
 * `drain/<n>/tools`, with its idempotency key, and a loop that ended or
 * stopped with no drain due makes none. Each drain is counted with the key it was asked with
 * (the in-memory interrupts, wrapped), over a journal that names every step.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { InterruptsService } from "../src/Interrupts.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { echoTool, injectNow, jsonLlm, makeAgent, makeInterrupts } from "./utils/agentLayers.js"
import { recordingJournal } from "./utils/journals.js"

const CONVERSATION = "c-drains"

/** The real in-memory interrupts, recording the idempotency key of every drain. */
const countedDrains = () => {
  const real = makeInterrupts()
  const keys: Array<string> = []
  const service: InterruptsService = {
    ...real,
    drain: (conversationId, options) =>
      Effect.suspend(() => {
        keys.push(options?.key ?? "(no key)")
        return real.drain(conversationId, options)
      })
  }
  return { real, service, keys }
}

const doneOf = (events: ReadonlyArray<RunEvent>) => {
  const last = events[events.length - 1]
  if (last._tag !== "Done") throw new Error(`last event is ${last._tag}`)
  return last
}

/** Runs over a recording journal whose idempotency key is `k:<name>`. */
const execute = (h: ReturnType<typeof makeAgent>) =>
  Effect.gen(function*() {
    const rec = recordingJournal()
    const agent = yield* ReactAgent.ReactAgent
    yield* agent.execute({ query: "go", conversationId: CONVERSATION }, {
      ...rec.journal,
      idempotencyKey: (name) => `k:${name}`
    })
    return { ...rec, steps: rec.names.filter((n) => n.startsWith("llm/") || n.startsWith("drain/")) }
  }).pipe(Effect.provide(h.layer))

describe("ReactAgent: drains as steps", () => {
  it.effect("a call that took a message in asks again as llm/<n>/drained, which drains only after the reply", () =>
    Effect.gen(function*() {
      const drains = countedDrains()
      const h = makeAgent((_request, index) => {
        if (index === 0) {
          // arrives while the tool round is asked for: taken in by the next call's drain
          injectNow(drains.real, CONVERSATION, "also check the tides")
          return ScriptedLlm.toolCall("echo", { text: "a" }, { id: "call_1_0" })
        }
        return ScriptedLlm.text(index === 1 ? "done" : "the answer")
      }, { tools: [echoTool], interrupts: drains.service, agent: { completionCheck: false } })
      const rec = yield* execute(h)
      // no drain step of its own: the loop ended with the model's answer, no drain due
      assert.deepStrictEqual(rec.steps, ["llm/1", "llm/2", "llm/2/drained"])
      assert.deepStrictEqual(drains.keys, ["k:llm/2", "k:llm/2/drained"])
      assert.isTrue(rec.events.some((e) => e._tag === "Inject" && e.content === "also check the tides"))
      assert.strictEqual(h.requests().length, 3)
    }))

  it.effect("the overflow retry drains after its reply, not before asking", () =>
    Effect.gen(function*() {
      const drains = countedDrains()
      const h = makeAgent([
        ScriptedLlm.fail("ContextOverflow"),
        ScriptedLlm.text("done"),
        ScriptedLlm.text("the answer")
      ], {
        tools: [echoTool],
        interrupts: drains.service,
        agent: { completionCheck: false }
      })
      const rec = yield* execute(h)
      assert.deepStrictEqual(rec.steps, ["llm/1", "llm/1/retry"])
      assert.deepStrictEqual(drains.keys, ["k:llm/1/retry"])
      assert.strictEqual(doneOf(rec.events).answer, "the answer")
    }))

  it.effect("a loop stopped with the last round's drain due makes it as drain/<n>/tools, with its key", () =>
    Effect.gen(function*() {
      const drains = countedDrains()
      const h = makeAgent((_request, index) => {
        if (index === 0) {
          injectNow(drains.real, CONVERSATION, "late message")
          return ScriptedLlm.toolCall("echo", { text: "a" }, { id: "call_1_0" })
        }
        return ScriptedLlm.text("the answer")
      }, { tools: [echoTool], interrupts: drains.service, agent: { maxIterations: 1, completionCheck: false } })
      const rec = yield* execute(h)
      assert.deepStrictEqual(rec.steps, ["llm/1", "drain/1/tools"])
      assert.deepStrictEqual(drains.keys, ["k:drain/1/tools"])
      // taken in (an event, the synthesis reads it), not left pending
      assert.isTrue(rec.events.some((e) => e._tag === "Inject" && e.content === "late message"))
      assert.include(JSON.stringify(h.requests()[1].request.messages), "late message")
      assert.deepStrictEqual(doneOf(rec.events).pending_injections, [])
    }))

  it.effect("a loop stopped with no drain due makes none (JSON mode drains after every reply)", () =>
    Effect.gen(function*() {
      const drains = countedDrains()
      const h = makeAgent([ScriptedLlm.jsonToolCall("echo", { text: "a" }), ScriptedLlm.text("the answer")], {
        llm: jsonLlm,
        tools: [echoTool],
        interrupts: drains.service,
        agent: { maxIterations: 1, completionCheck: false }
      })
      const rec = yield* execute(h)
      assert.strictEqual(doneOf(rec.events).iterations, 1)
      assert.deepStrictEqual(rec.steps, ["llm/1"])
      assert.deepStrictEqual(drains.keys, ["k:llm/1"])
    }))
})
