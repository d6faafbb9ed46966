/**
 * A DAG run through a journal that stores (test/utils/dagLayers.ts
 * `memoryJournal`, which behaves as the server's for what the run sees): the
 * activity names of a run, a replay from storage (no model call, the same
 * decisions and DAG events in the same order, no step timed out by a clock
 * that moved on), and a run cut during a step and run again (the finished step
 * and the plan come from storage; the step in flight resumes from its stored
 * model reply, its tool call in flight answered with the restart error).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as DagAgent from "../src/DagAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { journalSink, makeDag, memoryJournal, memoryStore, planReply, requestsOf, stepText } from "./utils/dagLayers.js"

const CID = "conv"
const RESTART_ERROR = "interrupted by a server restart; not retried"

/** The run's own events (not a step's), as `tag:detail` strings. */
const dagLevel = (events: ReadonlyArray<RunEvent>) =>
  events.flatMap((e) => {
    if (e._tag === "DagStep") return [`${e.status}:${e.step_id}`]
    if (e._tag === "DagPlan" || e._tag === "DagPhase") return [`${e._tag}:${e.round}`]
    return e._tag === "Done" || e._tag === "AnswerSignal" ? [e._tag] : []
  })
const stepLevel = (events: ReadonlyArray<RunEvent>) => events.filter((e) => "step_id" in e && e._tag !== "DagStep")
const doneIn = (events: ReadonlyArray<RunEvent>) => events.find((e) => e._tag === "Done")

const sink = journalSink

/** An event's identity: which step, which event of its loop (or of the run). */
const identity = (e: RunEvent): string => {
  const step = "step_id" in e && e._tag !== "DagStep" ? `${e.step_id}/` : ""
  const at = "iteration" in e ? `@${e.iteration}` : ""
  const call = "tool_call_id" in e && e.tool_call_id !== undefined ? `/${e.tool_call_id}` : ""
  const dag = e._tag === "DagStep"
    ? `:${e.status}:${e.step_id}`
    : e._tag === "DagPhase"
    ? `:${e.phase}:${e.round}`
    : e._tag === "DagPlan"
    ? `:${e.round}`
    : ""
  return `${step}${e._tag}${dag}${at}${call}`
}
/** Identities delivered more than once. */
const repeated = (events: ReadonlyArray<RunEvent>) => {
  const seen = new Set<string>()
  return events.map(identity).filter((id) => !id.startsWith("Answer") && (seen.has(id) || !seen.add(id)))
}

describe("DagAgent through a journal", () => {
  it.effect("activity names: plan, dispatch points, each step's loop under the step and its stored result, analysis, drain, synthesis", () => {
    const h = makeDag({
      plan: () => planReply([{ id: 1, task: "add" }, { id: 2, task: "then", dependencies: [1] }]),
      step: (
        id,
        turn
      ) => (id === "1" && turn === 0
        ? ScriptedLlm.toolCall("add", { a: 1, b: 2 }, { id: "c1" })
        : stepText(`result of ${id}`))
    })
    return Effect.gen(function*() {
      const agent = yield* DagAgent.DagAgent
      const out = sink()
      yield* agent.execute({ query: "goal", conversationId: CID }, memoryJournal(memoryStore(), out))
      // asked for as the run gets there (the dispatcher waits while the steps run): compared as a set
      assert.sameMembers(out.names.filter((n) => !n.includes("/guard/")), [
        "dag/1/plan",
        "dag/1/dispatch/0",
        "dag/1/step/1/llm/1",
        "dag/1/step/1/tool/1/c1",
        "dag/1/step/1/llm/2",
        "dag/1/step/1/synthesis",
        "dag/1/step/1",
        "dag/1/dispatch/1",
        "dag/1/step/2/llm/1",
        "dag/1/step/2/synthesis",
        "dag/1/step/2",
        "dag/1/dispatch/2",
        "dag/1/analysis",
        "dag/1/drain",
        "dag/synthesis"
      ])
      assert.strictEqual(new Set(out.names).size, out.names.length, "every name once")
      assert.strictEqual(doneIn(out.events)?._tag === "Done" && doneIn(out.events)!.answer, "final answer")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a replay from storage asks no model, decides the same, emits the run's events in the same order and no step's again", () => {
    const h = makeDag({
      plan: () => planReply([{ id: 1, task: "a" }, { id: 2, task: "b" }, { id: 3, task: "c", dependencies: [1, 2] }]),
      step: (
        id,
        turn
      ) => (turn === 0 && id !== "3"
        ? ScriptedLlm.toolCall("sleep", { ms: id === "1" ? 1500 : 500 })
        : stepText(`result of ${id}`))
    }, { dag: { stepTimeout: "2 seconds" } })
    return Effect.gen(function*() {
      const agent = yield* DagAgent.DagAgent
      const store = memoryStore()
      const first = sink()
      const fiber = yield* Effect.fork(
        agent.execute({ query: "goal", conversationId: CID }, memoryJournal(store, first))
      )
      yield* TestClock.adjust("5 seconds")
      yield* Fiber.join(fiber)
      const asked = requestsOf(h).length
      // much later (every step's deadline long past): the replay
      yield* TestClock.adjust("1 hour")
      const second = sink()
      yield* agent.execute({ query: "goal", conversationId: CID }, memoryJournal(store, second))
      assert.strictEqual(requestsOf(h).length, asked, "no model call")
      assert.deepStrictEqual(dagLevel(second.events), dagLevel(first.events))
      assert.deepStrictEqual(second.delivered, [], "nothing is sent again")
      assert.sameMembers(second.names, first.names)
      const [a, b] = [doneIn(first.events), doneIn(second.events)]
      assert.isFalse(JSON.stringify(second.events).includes("Timed out"))
      assert.deepStrictEqual(
        b?._tag === "Done" && [b.answer, b.usage, b.iterations, b.steps],
        a?._tag === "Done" && [a.answer, a.usage, a.iterations, a.steps]
      )
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a run cut during a step and run again: the plan and the finished step come from storage; the step in flight resumes from its stored reply", () => {
    const h = makeDag({
      plan: () => planReply([{ id: "A", task: "fast" }, { id: "B", task: "slow" }]),
      step: (id, turn) =>
        turn === 0
          ? ScriptedLlm.toolCall(id === "A" ? "add" : "sleep", id === "A" ? { a: 1, b: 1 } : { ms: 60_000 }, {
            id: `call_${id}`
          })
          : stepText(`result of ${id}`)
    })
    return Effect.gen(function*() {
      const agent = yield* DagAgent.DagAgent
      const store = memoryStore()
      const first = sink()
      const fiber = yield* Effect.fork(
        agent.execute({ query: "goal", conversationId: CID }, memoryJournal(store, first))
      )
      yield* TestClock.adjust("1 second")
      assert.include(dagLevel(first.events), "done:A")
      assert.notInclude(dagLevel(first.events), "done:B")
      // the "crash": everything in flight stops, nothing of it is stored
      yield* Fiber.interrupt(fiber)
      const before = requestsOf(h).map((r) => r.kind)
      assert.isTrue(store.started.has("dag/1/step/B/tool/1/call_B") && !store.results.has("dag/1/step/B/tool/1/call_B"))

      const second = sink()
      yield* agent.execute({ query: "goal", conversationId: CID }, memoryJournal(store, second))
      const after = requestsOf(h).slice(before.length).map((r) => r.kind)
      assert.deepStrictEqual(after.map((k) => `${k._tag}${"id" in k ? `:${k.id}` : ""}`), [
        "Step:B",
        "StepAnswer:B",
        "Analyze",
        "Answer"
      ])
      const resumed = after[0]
      assert.include(resumed._tag === "Step" ? resumed.text : "", RESTART_ERROR)
      // the run's events again in the same order up to the cut, then on
      assert.deepStrictEqual(dagLevel(second.events).slice(0, dagLevel(first.events).length), dagLevel(first.events))
      assert.isFalse(
        stepLevel(second.delivered).some((e) => "step_id" in e && e.step_id === "A"),
        "step A's events are not sent again"
      )
      // every event reached the client once: none sent again, none lost (the resumed step's new ones included)
      assert.deepStrictEqual(repeated([...first.delivered, ...second.delivered]), [])
      const delivered = new Set([...first.delivered, ...second.delivered].map(identity))
      for (const e of [...first.events, ...second.events]) {
        assert.isTrue(delivered.has(identity(e)), `delivered: ${identity(e)}`)
      }
      assert.isTrue(delivered.has("B/ThinkingStart@2") && delivered.has("DagStep:done:B"))
      const toolDone = second.events.find((e) => e._tag === "ToolDone" && e.step_id === "B")
      assert.include(toolDone?._tag === "ToolDone" ? toolDone.error ?? "" : "", RESTART_ERROR)
      const done = doneIn(second.events)
      assert.strictEqual(done?._tag === "Done" && done.answer, "final answer")
      assert.deepStrictEqual(done?._tag === "Done" && done.steps?.map((s) => [s.step_id, s.tool_name]), [["A", "add"], [
        "B",
        "sleep"
      ]])
    }).pipe(Effect.provide(h.layer))
  })
})
