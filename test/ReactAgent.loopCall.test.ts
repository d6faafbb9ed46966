/**
 * The loop call and the completion checklist (src/internal/reactAgent/harness.ts):
 * a streamed loop call a durable host restarted retracts what it showed (only
 * a restart-aware activity is told it restarted), the checklist is not asked
 * without a tool step nor on the last iteration, a provider overflow retries
 * under its own activity names with the list as it was, and JSON mode's final
 * answer under synthesis `auto` is the answer (no synthesis call).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import type * as RunJournal from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { echoTool, jsonLlm, makeAgent } from "./utils/agentLayers.js"

const run = Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runCollect(a.run({ query: "go" }))).pipe(
  Effect.map(Chunk.toArray)
)

const doneOf = (events: ReadonlyArray<RunEvent>) => {
  const last = events[events.length - 1]
  if (last._tag !== "Done") throw new Error(`last event is ${last._tag}`)
  return last
}

/** A journal that records names and events; `restarted` names the activities it reports as restarted after showing events (restart-aware ones only). */
const journalOf = (restarted: ReadonlyArray<string> = []) => {
  const names: Array<string> = []
  const events: Array<RunEvent> = []
  const journal: RunJournal.RunJournal = {
    activity: (o) =>
      Effect.suspend(() => {
        names.push(o.name)
        const cut = o.restartAware === true && restarted.includes(o.name)
        return o.execute({ restarted: cut, shown: cut })
      }),
    emit: (event) => Effect.sync(() => void events.push(event))
  }
  return { journal, names, events }
}

describe("ReactAgent loop call", () => {
  it.effect("a restarted streamed loop call retracts what the client showed before it streams again", () => {
    const h = makeAgent([ScriptedLlm.text("streamed answer")], {
      tools: [echoTool],
      agent: { synthesis: "auto", completionCheck: false }
    })
    const rec = journalOf(["llm/1"])
    return Effect.gen(function*() {
      const agent = yield* ReactAgent.ReactAgent
      yield* agent.execute({ query: "go" }, rec.journal)
      const t = rec.events.map((e) => e._tag)
      assert.strictEqual(t.filter((x) => x === "AnswerReset").length, 1)
      assert.isBelow(t.indexOf("AnswerReset"), t.indexOf("AnswerDelta"))
      assert.strictEqual(doneOf(rec.events).answer, "streamed answer")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("completionCheckMinTools 0: no checklist for a run that called no tool", () => {
    const h = makeAgent([ScriptedLlm.text("direct"), ScriptedLlm.text("synthesised")], {
      tools: [echoTool],
      agent: { completionCheck: true, completionCheckMinTools: 0 }
    })
    return Effect.gen(function*() {
      const done = doneOf(yield* run)
      assert.strictEqual(done.answer, "synthesised")
      assert.strictEqual(h.requests().length, 2)
      assert.notInclude(JSON.stringify(h.requests()[1].request.messages), "fully address")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("no checklist on the last iteration: the final answer there is accepted", () => {
    const h = makeAgent([
      ScriptedLlm.toolCall("echo", { text: "one" }, { id: "c1" }),
      ScriptedLlm.text("final"),
      ScriptedLlm.text("from synthesis")
    ], {
      tools: [echoTool],
      agent: { synthesis: "auto", maxIterations: 2, completionCheck: true, completionCheckMinTools: 1 }
    })
    return Effect.gen(function*() {
      const done = doneOf(yield* run)
      assert.strictEqual(done.answer, "final")
      assert.strictEqual(done.iterations, 2)
      assert.strictEqual(h.requests().length, 2)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a context overflow: forced compaction and one retry, each its own activity, sent the list as it was then", () => {
    const h = makeAgent([
      ScriptedLlm.fail("ContextOverflow"),
      ScriptedLlm.toolCall("echo", { text: "one" }, { id: "c1" }),
      ScriptedLlm.text("final"),
      ScriptedLlm.text("from synthesis")
    ], { tools: [echoTool], agent: { completionCheck: false } })
    const rec = journalOf()
    return Effect.gen(function*() {
      const agent = yield* ReactAgent.ReactAgent
      yield* agent.execute({ query: "go" }, rec.journal)
      assert.deepStrictEqual(rec.names.slice(0, 4), ["guard/1", "llm/1", "guard/1/overflow", "llm/1/retry"])
      // the retry's request was not written to afterwards (the tool round appends to the run's list)
      assert.deepStrictEqual(h.requests()[1].request.messages.map((m) => m.role), ["system", "user"])
      assert.strictEqual(doneOf(rec.events).answer, "from synthesis")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("JSON mode, synthesis auto: the model's final answer is the answer, no synthesis call", () => {
    const h = makeAgent([ScriptedLlm.jsonFinal("json answer"), ScriptedLlm.text("from synthesis")], {
      tools: [echoTool],
      llm: jsonLlm,
      agent: { synthesis: "auto", completionCheck: false }
    })
    return Effect.gen(function*() {
      const done = doneOf(yield* run)
      assert.strictEqual(done.answer, "json answer")
      assert.strictEqual(h.requests().length, 1)
    }).pipe(Effect.provide(h.layer))
  })
})
