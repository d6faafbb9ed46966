/**
 * How a run ends (src/internal/reactAgent/run.ts): a requested iteration limit
 * that is no whole number is ignored, a loop stopped at its limit under
 * synthesis `auto` is answered by synthesis (not by the stop summary), an empty
 * reply is no answer and a streamed one of blanks is retracted, a synthesis restarted by a
 * durable host retracts what it showed, LLM retries are run events, and a run
 * with a money budget reports its cost; guardrails without a model call add
 * no usage phase. In process over `ScriptedLlm` and real tools.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as Interrupts from "../src/Interrupts.js"
import * as Llm from "../src/Llm.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import type * as RunJournal from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Toolkit from "../src/Toolkit.js"
import { echoTool, makeAgent, noHooks, recordingGuard } from "./utils/agentLayers.js"

const run = (input: ReactAgent.RunInput = { query: "go" }) =>
  Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runCollect(a.run(input))).pipe(Effect.map(Chunk.toArray))

const doneOf = (events: ReadonlyArray<RunEvent>) => {
  const last = events[events.length - 1]
  if (last._tag !== "Done") throw new Error(`last event is ${last._tag}`)
  return last
}

const tags = (events: ReadonlyArray<RunEvent>) => events.map((e) => e._tag)

describe("ReactAgent run end", () => {
  it.effect("a requested maxIterations that is not a whole number falls back to the agent's", () => {
    const h = makeAgent([ScriptedLlm.toolCall("echo", { text: "again" })], {
      tools: [echoTool],
      llm: { onExhausted: "repeatLast" },
      agent: { maxIterations: 1, completionCheck: false, cycleDetectionThreshold: 100 }
    })
    return Effect.gen(function*() {
      const done = doneOf(yield* run({ query: "go", maxIterations: 2.5 }))
      assert.strictEqual(done.iterations, 1)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("synthesis auto: a loop stopped at its iteration limit is answered by synthesis, not by the stop summary", () => {
    const h = makeAgent([
      ScriptedLlm.toolCall("echo", { text: "one" }, { id: "c1" }),
      ScriptedLlm.text("written by synthesis")
    ], { tools: [echoTool], agent: { synthesis: "auto", maxIterations: 1, completionCheck: false } })
    return Effect.gen(function*() {
      const done = doneOf(yield* run())
      assert.strictEqual(done.answer, "written by synthesis")
      assert.strictEqual(h.requests().length, 2)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("synthesis auto: an empty final reply is no answer; synthesis writes one", () => {
    const h = makeAgent([ScriptedLlm.text(""), ScriptedLlm.text("the real answer")], {
      tools: [echoTool],
      agent: { synthesis: "auto", completionCheck: false }
    })
    return Effect.gen(function*() {
      const es = yield* run()
      assert.strictEqual(doneOf(es).answer, "the real answer")
      assert.strictEqual(h.requests().length, 2)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("synthesis auto: a streamed reply of blanks is retracted (AnswerReset) and synthesis answers", () => {
    const h = makeAgent([ScriptedLlm.text("  \n  ", { chunks: ["  ", "\n  "] }), ScriptedLlm.text("the real answer")], {
      tools: [echoTool],
      agent: { synthesis: "auto", completionCheck: false }
    })
    return Effect.gen(function*() {
      const es = yield* run()
      const t = tags(es)
      assert.strictEqual(t.filter((x) => x === "AnswerReset").length, 1)
      assert.isBelow(t.indexOf("AnswerReset"), t.lastIndexOf("AnswerDelta"))
      assert.strictEqual(doneOf(es).answer, "the real answer")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a synthesis a durable host restarted retracts what the client showed before it streams again", () => {
    const h = makeAgent([ScriptedLlm.text("draft"), ScriptedLlm.text("final")], { tools: [echoTool] })
    const emitted: Array<RunEvent> = []
    const journal: RunJournal.RunJournal = {
      activity: (o) => o.execute({ restarted: o.name === "synthesis", shown: o.name === "synthesis" }),
      emit: (event) => Effect.sync(() => void emitted.push(event))
    }
    return Effect.gen(function*() {
      const agent = yield* ReactAgent.ReactAgent
      yield* agent.execute({ query: "go" }, journal)
      const t = tags(emitted)
      assert.strictEqual(t.filter((x) => x === "AnswerReset").length, 1)
      assert.isBelow(t.indexOf("AnswerReset"), t.indexOf("AnswerDelta"))
      assert.strictEqual(doneOf(emitted).answer, "final")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("an LLM retry the model layer announces is a LlmRetry event of the run", () => {
    const scripted = ScriptedLlm.makeUnsafe([ScriptedLlm.text("draft"), ScriptedLlm.text("final")])
    let announced = false
    const retrying: Llm.LlmService = {
      ...scripted.service,
      chat: (request) =>
        Effect.zipRight(
          announced
            ? Effect.void
            : Effect.zipRight(
              Effect.sync(() => (announced = true)),
              Llm.notifyRetry({ attempt: 1, reason: "RateLimited", delayMs: 12.4 })
            ),
          scripted.service.chat(request)
        )
    }
    const deps = Layer.mergeAll(
      Layer.succeed(Llm.Llm, retrying),
      Toolkit.layer([echoTool]),
      noHooks,
      recordingGuard().layer,
      Interrupts.layerMemory
    )
    const layer = ReactAgent.layer({ synthesis: "always" }).pipe(Layer.provideMerge(deps), Layer.orDie)
    return Effect.gen(function*() {
      const es = yield* run()
      assert.deepStrictEqual(es.filter((e) => e._tag === "LlmRetry"), [{
        _tag: "LlmRetry",
        attempt: 1,
        reason: "RateLimited",
        delay_ms: 12
      }])
      assert.strictEqual(doneOf(es).answer, "final")
    }).pipe(Effect.provide(layer))
  })

  it.effect("a money budget: Done's usage carries the cost beside the token counts", () => {
    const h = makeAgent([ScriptedLlm.text("answer", { usage: { prompt: 1000, completion: 100 } })], {
      tools: [echoTool],
      agent: {
        synthesis: "auto",
        completionCheck: false,
        budget: { usd: 10, prices: { scripted: { input: 1, output: 2 } } }
      }
    })
    return Effect.gen(function*() {
      const done = doneOf(yield* run())
      assert.strictEqual(done.usage.total_tokens, 1100)
      assert.strictEqual(done.usage.llm_calls, 1)
      assert.closeTo(done.usage.cost_usd ?? 0, (1000 * 1 + 100 * 2) / 1e6, 1e-12)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("pattern guardrails make no model call: Done's usage has no guardrails phase", () => {
    const h = makeAgent([ScriptedLlm.text("fine answer")], {
      tools: [echoTool],
      agent: {
        synthesis: "auto",
        completionCheck: false,
        guardrails: { input: [{ type: "pattern", name: "secrets", patterns: ["password"] }], refusal: "no" }
      }
    })
    return Effect.gen(function*() {
      const done = doneOf(yield* run({ query: "a harmless question" }))
      assert.strictEqual(done.answer, "fine answer")
      assert.deepStrictEqual(Object.keys(done.usage.by_phase), ["loop"])
    }).pipe(Effect.provide(h.layer))
  })
})
