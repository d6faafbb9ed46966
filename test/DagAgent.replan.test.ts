import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import { textOf } from "../src/Message.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { injectNow, makeInterrupts } from "./utils/agentLayers.js"
import {
  analysisReply,
  dagEvents,
  doneOf,
  makeDag,
  planReply,
  requestsOf,
  stepText,
  stepTrail
} from "./utils/dagLayers.js"

const CID = "conv"
const one = (task: string) => planReply([{ id: 1, task }])
const plans = (events: ReadonlyArray<RunEvent>) => events.filter((e) => e._tag === "DagPlan")
const phases = (events: ReadonlyArray<RunEvent>) =>
  events.flatMap((e) => (e._tag === "DagPhase" ? [`${e.phase}:${e.round}`] : []))
const plannerTexts = (h: ReturnType<typeof makeDag>) =>
  requestsOf(h).flatMap((r) => (r.kind._tag === "Plan" ? [textOf(r.request.messages[1].content)] : []))

describe("DagAgent: re-planning", () => {
  it.effect("not achieved with low confidence: re-plans with a summary of the round (results cut to 500 chars)", () => {
    const h = makeDag({
      plan: (n) => (n === 0 ? one("first try") : one("second try")),
      step: (_, __, text) => stepText(text.includes("first try") ? "z".repeat(800) : "good"),
      analysis: (
        n
      ) => (n === 0 ? analysisReply(false, 0.3, "the numbers are missing") : analysisReply(true, 0.95, "done"))
    })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "goal", conversationId: CID })
      assert.deepStrictEqual(phases(events), ["planning:1", "analyzing:1", "replanning:2", "analyzing:2"])
      const replanning = events.find((e) => e._tag === "DagPhase" && e.phase === "replanning")
      assert.strictEqual(replanning?._tag === "DagPhase" ? replanning.reasoning : "", "the numbers are missing")
      assert.deepStrictEqual(plans(events).map((p) => p._tag === "DagPlan" && p.round), [1, 2])
      const second = plannerTexts(h)[1]
      assert.include(second, "What happened in round 1:\n- Step 1 [done]: first try")
      assert.include(second, `Result: ${"z".repeat(500)}…`)
      assert.notInclude(second, "z".repeat(501))
      assert.include(second, "Assessment: not achieved (confidence 0.3). the numbers are missing")
      // the answer reads the last round
      const answer = requestsOf(h).find((r) => r.kind._tag === "Answer")!
      assert.include(textOf(answer.request.messages[1].content), "### Step 1 [done]: second try\ngood")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("not achieved but confident (≥ DAG_REPLAN_STOP_CONFIDENCE): no re-plan", () => {
    const h = makeDag({ plan: () => one("t"), analysis: () => analysisReply(false, 0.85, "cannot be done") })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "goal", conversationId: CID })
      assert.strictEqual(plans(events).length, 1)
      assert.strictEqual(doneOf(events).answer, "final answer")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("never achieved: stops after DAG_MAX_REPLAN_ROUNDS rounds in all", () => {
    const h = makeDag({ plan: (n) => one(`try ${n}`), analysis: () => analysisReply(false, 0.1, "still wrong") }, {
      dag: { maxRounds: 3, replanStopConfidence: 0.5 }
    })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "goal", conversationId: CID })
      assert.deepStrictEqual(plans(events).map((p) => p._tag === "DagPlan" && p.round), [1, 2, 3])
      assert.strictEqual(doneOf(events).usage.by_phase.analysis?.llm_calls, 3)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("an unparseable analysis counts as not achieved, confidence 0: it re-plans", () => {
    const h = makeDag({
      plan: (n) => one(`try ${n}`),
      analysis: (n) => (n < 5 ? ScriptedLlm.text("no opinion") : analysisReply(true, 1))
    }, { dag: { maxRounds: 2 } })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "goal", conversationId: CID })
      assert.strictEqual(plans(events).length, 2)
      const replanning = events.find((e) => e._tag === "DagPhase" && e.phase === "replanning")
      assert.strictEqual(
        replanning?._tag === "DagPhase" ? replanning.reasoning : "",
        "Could not parse the analysis response"
      )
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("an interrupt skips the steps not started, lets running ones finish, and re-plans without using the budget", () => {
    const irq = makeInterrupts()
    const h = makeDag({
      plan: (n) =>
        n === 0
          ? planReply([
            { id: 1, task: "fetch" },
            { id: 2, task: "after fetch", dependencies: [1] },
            { id: 3, task: "also after fetch", dependencies: [1] },
            { id: 4, task: "slow independent" }
          ])
          : one("revised"),
      step: (id, turn, text) => {
        if (id === "1" && text.includes("fetch") && !text.includes("revised")) {
          injectNow(irq, CID, "only Porto please")
          return stepText("fetched")
        }
        if (id === "4" && turn === 0) return ScriptedLlm.toolCall("sleep", { ms: 1000 })
        return stepText(`result of ${id}`)
      }
    }, { interrupts: irq, dag: { maxRounds: 1 } })
    return Effect.gen(function*() {
      const fiber = yield* Effect.fork(dagEvents({ query: "goal", conversationId: CID }))
      yield* TestClock.adjust("2 seconds")
      const events = yield* Fiber.join(fiber)
      const round1 = events.filter((e) => e._tag === "DagStep" && e.round === 1 && e.status !== "start")
      assert.deepStrictEqual(
        Object.fromEntries(
          round1.map((e) => [e._tag === "DagStep" ? e.step_id : "", e._tag === "DagStep" ? e.status : ""])
        ),
        { 1: "done", 2: "skipped", 3: "skipped", 4: "done" }
      )
      const inject = events.find((e) => e._tag === "Inject")
      assert.deepStrictEqual(inject, { _tag: "Inject", content: "only Porto please", id: "inj_1" })
      // no analysis of the cut round; re-planned although maxRounds is 1
      assert.deepStrictEqual(phases(events), ["planning:1", "replanning:2", "analyzing:2"])
      const replanning = events.find((e) => e._tag === "DagPhase" && e.phase === "replanning")
      assert.include(replanning?._tag === "DagPhase" ? replanning.reasoning ?? "" : "", "only Porto please")
      const second = plannerTexts(h)[1]
      assert.include(second, "[User follow-up]: only Porto please")
      assert.include(second, "- Step 2 [skipped]: after fetch")
      const answer = requestsOf(h).find((r) => r.kind._tag === "Answer")!
      assert.include(textOf(answer.request.messages[1].content), "[User follow-up]: only Porto please")
      assert.deepStrictEqual(doneOf(events).pending_injections, [])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("an interrupt during the analysis re-plans too (free)", () => {
    const irq = makeInterrupts()
    const h = makeDag({
      plan: (n) => one(n === 0 ? "first" : "second"),
      analysis: (n) => {
        if (n === 0) injectNow(irq, CID, "and in French")
        return analysisReply(true, 1)
      }
    }, { interrupts: irq, dag: { maxRounds: 1 } })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "goal", conversationId: CID })
      assert.deepStrictEqual(phases(events), ["planning:1", "analyzing:1", "replanning:2", "analyzing:2"])
      assert.strictEqual(events.filter((e) => e._tag === "Inject").length, 1)
    }).pipe(Effect.provide(h.layer))
  })
})

describe("DagAgent: planning failures", () => {
  const cycle = planReply([{ id: 1, task: "a", dependencies: [2] }, { id: 2, task: "b", dependencies: [1] }])

  it.effect("a cycle is re-planned once; a valid second plan runs", () => {
    const h = makeDag({ plan: (n) => (n === 0 ? cycle : one("fixed")) })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "goal", conversationId: CID })
      assert.strictEqual(plans(events).length, 1)
      assert.deepStrictEqual(stepTrail(events), ["start:1", "done:1"])
      assert.strictEqual(doneOf(events).usage.by_phase.planning?.llm_calls, 2)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("two unusable plans: the run falls back to ReAct mode on the original query and still answers", () => {
    const h = makeDag({
      plan: () => cycle,
      react: (turn, method) =>
        method === "stream"
          ? ScriptedLlm.text("react says 4")
          : turn === 0
          ? ScriptedLlm.toolCall("add", { a: 2, b: 2 })
          : stepText("4")
    })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "what is 2+2?", conversationId: CID })
      const fallback = events.find((e) => e._tag === "DagPhase" && e.phase === "react_fallback")
      assert.deepStrictEqual(phases(events), ["planning:1", "react_fallback:1"])
      assert.include(
        fallback?._tag === "DagPhase" && fallback.phase === "react_fallback" ? fallback.reasoning ?? "" : "",
        "cycle"
      )
      assert.strictEqual(plans(events).length, 0)
      const tool = events.find((e) => e._tag === "ToolDone")
      assert.deepStrictEqual(tool?._tag === "ToolDone" ? [tool.observation, tool.step_id] : [], ["4", undefined])
      const done = doneOf(events)
      assert.strictEqual(done.answer, "react says 4")
      assert.strictEqual(done.conversation_id, CID)
      assert.strictEqual(done.usage.by_phase.planning?.llm_calls, 2)
      assert.strictEqual(done.usage.llm_calls, requestsOf(h).length)
      assert.strictEqual(events.filter((e) => e._tag === "Done").length, 1)
      const reactLoop = requestsOf(h).find((r) => r.kind._tag === "React")!
      assert.strictEqual(textOf(reactLoop.request.messages[1].content), "what is 2+2?")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a dangling dependency id is dropped and the plan runs", () => {
    const h = makeDag({ plan: () => planReply([{ id: 1, task: "a", dependencies: ["ghost"] }]) })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "goal", conversationId: CID })
      const plan = plans(events)[0]
      assert.deepStrictEqual(plan._tag === "DagPlan" ? plan.steps[0].dependencies : undefined, [])
      assert.deepStrictEqual(stepTrail(events), ["start:1", "done:1"])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a re-plan that fails keeps the previous round's results for the answer", () => {
    const h = makeDag({
      plan: (n) => (n === 0 ? one("first") : cycle),
      analysis: () => analysisReply(false, 0.2, "not enough")
    })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "goal", conversationId: CID })
      assert.deepStrictEqual(phases(events), ["planning:1", "analyzing:1", "replanning:2"])
      const answer = requestsOf(h).find((r) => r.kind._tag === "Answer")!
      assert.include(textOf(answer.request.messages[1].content), "### Step 1 [done]: first\nresult of 1")
      assert.strictEqual(doneOf(events).answer, "final answer")
    }).pipe(Effect.provide(h.layer))
  })
})

describe("DagAgent: answer fallbacks", () => {
  const deltas = (events: ReadonlyArray<RunEvent>) =>
    events.flatMap((e) => (e._tag === "AnswerDelta" ? [e.content] : [])).join("")

  it.effect("the synthesis stream fails before its first token: the analysis' final_answer is the answer", () => {
    const h = makeDag({
      plan: () => one("t"),
      analysis: () => analysisReply(true, 1, "ok", "The answer is **42**."),
      answer: () => ScriptedLlm.fail("Server")
    })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "goal", conversationId: CID })
      assert.strictEqual(deltas(events), "The answer is **42**.")
      assert.strictEqual(doneOf(events).answer, "The answer is **42**.")
      assert.isUndefined(events.find((e) => e._tag === "RunFailed"))
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("no final_answer: the step results joined", () => {
    const h = makeDag({
      plan: () => planReply([{ id: 1, task: "a" }, { id: 2, task: "b" }]),
      analysis: () => analysisReply(true, 0.9),
      answer: () => ScriptedLlm.fail("Timeout")
    })
    return Effect.gen(function*() {
      const done = doneOf(yield* dagEvents({ query: "goal", conversationId: CID }))
      assert.strictEqual(done.answer, "**Step 1** — result of 1\n\n---\n\n**Step 2** — result of 2")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a stream cut midway is completed from the fallback without repeating what was sent", () => {
    const h = makeDag({
      plan: () => one("t"),
      analysis: () => analysisReply(true, 1, "ok", "Porto is larger."),
      answer: () =>
        ScriptedLlm.text("Porto is larger.", {
          chunks: ["Porto ", "is ", "larger."],
          failAfterChunks: { count: 1, reason: "Connection" }
        })
    })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "goal", conversationId: CID })
      assert.strictEqual(deltas(events), "Porto is larger.")
    }).pipe(Effect.provide(h.layer))
  })
})
