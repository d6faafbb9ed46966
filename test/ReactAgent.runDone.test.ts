/**
 * What `Done` reports and what the run starts from (src/internal/reactAgent/run.ts),
 * where the full mutation run of 5 December found no test looking: a requested
 * iteration limit below 1 is ignored; history's system messages are dropped
 * (the agent's own system prompt is the only one); a run that fails or is
 * cancelled after the loop answered reports `""`; `elapsed` is in seconds; no
 * `run_id` key in process, the journal's run id when it has one; a restarted
 * synthesis (restart-aware, as a durable host sees it) retracts what it showed;
 * nothing pending, no step and no message when the interrupt channel would
 * not register the run (it ends before its state exists); the
 * selection phase's usage whenever a selection call was made; the agent span's
 * `react_engine.protocol`. In process over `ScriptedLlm` and real tools.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import { assistant, system, user } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import type * as RunJournal from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { echoTool, fillerTools, makeAgent, makeInterrupts, sleepTool } from "./utils/agentLayers.js"
import { recordingJournal } from "./utils/journals.js"
import { makeSpanRecorder } from "./utils/spans.js"

const doneOf = (events: ReadonlyArray<RunEvent>) => {
  const last = events[events.length - 1]
  if (last._tag !== "Done") throw new Error(`last event is ${last._tag}`)
  return last
}

/** Runs the agent over a recording journal (optionally extended); returns the events. */
const execute = (
  h: ReturnType<typeof makeAgent>,
  input: ReactAgent.RunInput,
  extend: (j: RunJournal.RunJournal) => RunJournal.RunJournal = (j) => j
) =>
  Effect.gen(function*() {
    const rec = recordingJournal()
    const agent = yield* ReactAgent.ReactAgent
    yield* agent.execute(input, extend(rec.journal))
    return rec
  }).pipe(Effect.provide(h.layer))

describe("ReactAgent: what Done reports", () => {
  it.effect("a requested maxIterations of 0 or below falls back to the agent's", () =>
    Effect.gen(function*() {
      for (const requested of [0, -2]) {
        const h = makeAgent([ScriptedLlm.toolCall("echo", { text: "again" })], {
          tools: [echoTool],
          llm: { onExhausted: "repeatLast" },
          agent: { maxIterations: 2, completionCheck: false, cycleDetectionThreshold: 100 }
        })
        const rec = yield* execute(h, { query: "go", maxIterations: requested })
        assert.strictEqual(doneOf(rec.events).iterations, 2, `maxIterations ${requested}`)
      }
    }))

  it.effect("history's system messages are dropped: the agent's system prompt is the only one", () =>
    Effect.gen(function*() {
      const h = makeAgent([ScriptedLlm.text("hello again")], {
        tools: [echoTool],
        agent: { systemPrompt: "Agent prompt." }
      })
      yield* execute(h, { query: "go", history: [system("Old system prompt."), user("hi"), assistant("hello")] })
      const messages = h.requests()[0].request.messages
      assert.deepStrictEqual(messages.map((m) => m.role), ["system", "user", "assistant", "user"])
      assert.notInclude(JSON.stringify(messages), "Old system prompt.")
    }))

  it.effect("a run that fails after the loop answered reports an empty answer", () =>
    Effect.gen(function*() {
      // synthesis never fails (it falls back to the loop's answer): the journal dies on the
      // event between the loop and synthesis, when the loop's answer is in the state
      const h = makeAgent([ScriptedLlm.text("loop answer"), ScriptedLlm.text("never asked")], { tools: [echoTool] })
      const rec = yield* execute(h, { query: "go" }, (j) => ({
        ...j,
        emit: (event, options) =>
          event._tag === "AnswerSignal" ? Effect.die(new Error("store broke")) : j.emit(event, options)
      }))
      assert.isTrue(rec.events.some((e) => e._tag === "RunFailed"))
      assert.strictEqual(doneOf(rec.events).answer, "")
    }))

  it.effect("a run cancelled during synthesis, after the loop answered, reports an empty answer", () =>
    Effect.gen(function*() {
      const reached = yield* Deferred.make<void>()
      const cancel = yield* Deferred.make<void>()
      const h = makeAgent((request, index) => {
        if (index === 0) return ScriptedLlm.text("loop answer")
        // the synthesis call: the test cancels the run while it is asked
        Effect.runSync(Deferred.succeed(reached, undefined))
        return ScriptedLlm.text("never read", { delay: "60 seconds" })
      }, { tools: [echoTool] })
      const fiber = yield* Effect.fork(execute(h, { query: "go", cancel: Deferred.await(cancel) }))
      yield* Deferred.await(reached)
      yield* Deferred.succeed(cancel, undefined)
      const rec = yield* Fiber.join(fiber)
      assert.isFalse(rec.events.some((e) => e._tag === "RunFailed"))
      assert.strictEqual(doneOf(rec.events).answer, "")
    }).pipe(
      Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the cancelled run did not end") })
    ))

  it.live("elapsed is the run's wall time in seconds", () =>
    Effect.gen(function*() {
      const h = makeAgent([
        ScriptedLlm.toolCall("sleep", { ms: 150 }),
        ScriptedLlm.text("slept"),
        ScriptedLlm.text("answer")
      ], {
        tools: [sleepTool],
        agent: { completionCheck: false }
      })
      const rec = yield* execute(h, { query: "go" })
      const elapsed = doneOf(rec.events).elapsed
      assert.isAtLeast(elapsed, 0.15)
      assert.isBelow(elapsed, 30)
    }))

  it.effect("Done has no run_id key in process, and the journal's run id when it has one", () =>
    Effect.gen(function*() {
      const plain = yield* execute(makeAgent([ScriptedLlm.text("a"), ScriptedLlm.text("b")], { tools: [echoTool] }), {
        query: "go"
      })
      assert.isFalse("run_id" in doneOf(plain.events))
      const named = yield* execute(
        makeAgent([ScriptedLlm.text("a"), ScriptedLlm.text("b")], { tools: [echoTool] }),
        { query: "go" },
        (j) => ({ ...j, runId: "run-7" })
      )
      assert.strictEqual(doneOf(named.events).run_id, "run-7")
    }))

  it.effect("a synthesis a durable host restarts (it is restart-aware) retracts what it showed first", () =>
    Effect.gen(function*() {
      const h = makeAgent([ScriptedLlm.text("loop answer"), ScriptedLlm.text("the answer")], { tools: [echoTool] })
      // as the server's journal: only a restart-aware activity learns that it was cut
      const rec = yield* execute(h, { query: "go" }, (j) => ({
        ...j,
        activity: (o) =>
          o.name === "synthesis" && o.restartAware === true
            ? o.execute({ restarted: true, shown: true })
            : j.activity(o)
      }))
      const tags = rec.events.map((e) => e._tag)
      const reset = tags.indexOf("AnswerReset")
      assert.isAtLeast(reset, 0)
      assert.isBelow(reset, tags.indexOf("AnswerStart"))
      assert.strictEqual(doneOf(rec.events).answer, "the answer")
    }))

  it.effect("a run the interrupt channel would not register reports no pending message, no step and no message", () =>
    Effect.gen(function*() {
      const real = makeInterrupts()
      const h = makeAgent([ScriptedLlm.text("a")], {
        tools: [echoTool],
        interrupts: { ...real, register: () => Effect.die(new Error("register broke")) }
      })
      const rec = yield* execute(h, { query: "go" })
      assert.isTrue(rec.events.some((e) => e._tag === "RunFailed"))
      const done = doneOf(rec.events)
      assert.deepStrictEqual(done.pending_injections, [])
      // the run ended before its state existed: no step, no message
      assert.deepStrictEqual(done.steps, [])
      assert.deepStrictEqual(done.messages, [])
    }))

  it.effect("the selection phase is reported for a selection call that used no tokens", () =>
    Effect.gen(function*() {
      const h = makeAgent((request) => {
        // the selection call reports zero tokens
        if (String(request.messages[0].content).startsWith("You choose the tools")) {
          return ScriptedLlm.text(`{"tools": ["filler_1"]}`, { usage: { prompt: 0, completion: 0 } })
        }
        return ScriptedLlm.text("done")
      }, { tools: fillerTools(12), agent: { toolSelectionThreshold: 5, toolSelectionMax: 2 } })
      const rec = yield* execute(h, { query: "go" })
      const done = doneOf(rec.events)
      assert.isAtLeast(done.usage.by_phase?.selection?.llm_calls ?? 0, 1)
      assert.strictEqual(done.usage.by_phase?.selection?.total_tokens, 0)
    }))

  it.effect("the agent span names the protocol the loop speaks", () =>
    Effect.gen(function*() {
      const protocolOf = (native: boolean, toolCall: boolean) =>
        Effect.gen(function*() {
          const recorder = makeSpanRecorder()
          const h = makeAgent([ScriptedLlm.text("a"), ScriptedLlm.text("b")], {
            tools: [echoTool],
            llm: { abilities: { toolCall } },
            agent: { useNativeTools: native }
          })
          yield* execute(h, { query: "go" }).pipe(Effect.provide(recorder.layer))
          return recorder.spans().map((s) => s.attributes["react_engine.protocol"]).filter((p) => p !== undefined)
        })
      assert.deepStrictEqual(yield* protocolOf(true, true), ["native"])
      assert.deepStrictEqual(yield* protocolOf(true, false), ["json"])
      assert.deepStrictEqual(yield* protocolOf(false, true), ["json"])
    }))
})
