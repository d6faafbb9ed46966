import { assert, describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import * as TestClock from "effect/TestClock"
import * as DagAgent from "../src/DagAgent.js"
import * as Hooks from "../src/Hooks.js"
import type { ToolUseContext } from "../src/Hooks.js"
import { textOf } from "../src/Message.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import { addTool, allTools } from "./utils/agentLayers.js"
import { dagEvents, doneOf, kindOf, makeDag, planReply, requestsOf, stepText, stepTrail } from "./utils/dagLayers.js"

const CID = "conv"
const diamond = planReply([
  { id: 1, task: "find A" },
  { id: 2, task: "find B" },
  { id: 3, task: "combine A and B", dependencies: [1, 2] }
])
const indexOf = (events: ReadonlyArray<RunEvent>, tag: string) => stepTrail(events).indexOf(tag)

describe("DagAgent: execution", () => {
  it.effect("independent steps run at the same time; their dependent starts after both", () => {
    const starts: Array<[string, number]> = []
    const timedSleep = Tool.make({
      name: "timed_sleep",
      description: "Sleeps 1 s",
      parameters: Schema.Struct({ label: Schema.String }),
      handler: ({ label }) =>
        Effect.flatMap(Clock.currentTimeMillis, (t) => {
          starts.push([label, t])
          return Effect.as(Effect.sleep("1 second"), `slept ${label}`)
        })
    })
    const h = makeDag({
      plan: () => diamond,
      step: (
        id,
        turn
      ) => (turn === 0 ? ScriptedLlm.toolCall("timed_sleep", { label: id }) : stepText(`result of ${id}`))
    }, { tools: [timedSleep] })
    return Effect.gen(function*() {
      const fiber = yield* Effect.fork(dagEvents({ query: "goal", conversationId: CID }))
      yield* TestClock.adjust("3 seconds")
      const events = yield* Fiber.join(fiber)
      const trail = stepTrail(events)
      assert.deepStrictEqual(trail.slice(0, 2), ["start:1", "start:2"], "launched together, in id order")
      assert.isBelow(indexOf(events, "start:2"), Math.min(indexOf(events, "done:1"), indexOf(events, "done:2")))
      assert.isAbove(indexOf(events, "start:3"), Math.max(indexOf(events, "done:1"), indexOf(events, "done:2")))
      // both sleeps began at t=0 (overlapping); the dependent's began when they ended
      assert.deepStrictEqual(starts, [["1", 0], ["2", 0], ["3", 1000]])
      assert.strictEqual(doneOf(events).answer, "final answer")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("at most maxConcurrency steps run at once; launches follow id order", () => {
    const h = makeDag({
      plan: () => planReply([{ id: 3, task: "c" }, { id: 1, task: "a" }, { id: 10, task: "j" }, { id: 2, task: "b" }]),
      step: (id, turn) => (turn === 0 ? ScriptedLlm.toolCall("sleep", { ms: 100 }) : stepText(`r${id}`))
    }, { dag: { maxConcurrency: 2 } })
    return Effect.gen(function*() {
      const fiber = yield* Effect.fork(dagEvents({ query: "goal", conversationId: CID }))
      yield* TestClock.adjust("1 second")
      const events = yield* Fiber.join(fiber)
      const trail = stepTrail(events)
      assert.deepStrictEqual(trail.filter((t) => t.startsWith("start")), ["start:1", "start:2", "start:3", "start:10"])
      let running = 0
      let peak = 0
      for (const t of trail) {
        running += t.startsWith("start") ? 1 : -1
        peak = Math.max(peak, running)
      }
      assert.strictEqual(peak, 2)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("steps under synthesis auto (the default): each step's streamed loop reply is its result; no step synthesis call", () => {
    const h = makeDag({
      plan: () =>
        planReply([{ id: 1, task: "find A" }, { id: 2, task: "find B" }, {
          id: 3,
          task: "combine",
          dependencies: [1, 2]
        }]),
      step: (
        id,
        turn
      ) => (turn === 0 && id === "1"
        ? ScriptedLlm.toolCall("add", { a: 1, b: 2 }, { content: "Let me add." })
        : stepText(`result of ${id}`))
    }, { dag: { agent: { completionCheck: false, selfReflectionInterval: 0, synthesis: "auto" } } })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "the goal", conversationId: CID })
      const results = events.flatMap((
        e
      ) => (e._tag === "DagStep" && e.status === "done" ? [[e.step_id, e.result]] : []))
      assert.deepStrictEqual(results.sort(), [["1", "result of 1"], ["2", "result of 2"], ["3", "result of 3"]])
      const kinds = requestsOf(h).map((r) => r.kind._tag)
      assert.notInclude(kinds, "StepAnswer")
      // step 1: a tool call then its answer; steps 2 and 3: one call each — all streamed
      assert.strictEqual(kinds.filter((k) => k === "Step").length, 4)
      assert.isTrue(
        h.main.requests.filter((r) => kindOf(r.request, r.method)._tag === "Step").every((r) => r.method === "stream")
      )
      // a step's retracted text is not the run's answer: step answer events are never forwarded
      assert.notInclude(events.map((e) => e._tag), "AnswerReset")
      assert.strictEqual(doneOf(events).answer, "final answer")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a dependent's agent receives the goal, its task, its tool hint and its dependencies' results; no memory", () => {
    const h = makeDag({
      plan: () =>
        planReply([
          { id: 1, task: "find A" },
          { id: 2, task: "find B" },
          { id: 3, task: "combine A and B", dependencies: [1, 2], tool_hint: "add" }
        ])
    })
    return Effect.gen(function*() {
      yield* dagEvents({ query: "the goal", conversationId: CID, history: [{ role: "user", content: "earlier turn" }] })
      const third = requestsOf(h).find((r) => r.kind._tag === "Step" && r.kind.id === "3")!
      const user = textOf(third.request.messages[1].content)
      assert.include(user, "Overall goal: the goal")
      assert.include(user, "Your task (step 3): combine A and B")
      assert.include(user, "Suggested tool: add")
      assert.include(user, "### Step 1: find A\nresult of 1")
      assert.include(user, "### Step 2: find B\nresult of 2")
      assert.deepStrictEqual(third.request.messages.map((m) => m.role), ["system", "user"], "a fresh agent: no history")
      assert.notInclude(JSON.stringify(third.request.messages), "earlier turn")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("dependency results are cut to fit the step model's budget", () => {
    const h = makeDag({
      plan: () =>
        planReply([{ id: 1, task: "big" }, { id: 2, task: "use it", dependencies: [1], model_hint: "small" }]),
      step: (id) => stepText(id === "1" ? "y".repeat(40_000) : "ok")
    }, { models: ["small"], llm: { contextSize: 5000, maxOutputTokens: 1000 } })
    return Effect.gen(function*() {
      yield* dagEvents({ query: "goal", conversationId: CID })
      const second = requestsOf(h).find((r) => r.kind._tag === "Step" && r.kind.id === "2")!
      const user = textOf(second.request.messages[1].content)
      assert.include(user, "[Dependency result truncated]")
      // budget 4000 tokens, half of it for the one dependency: ≈ 8000 ASCII chars
      assert.isAtMost(user.length, 8000 + 400)
      assert.isAtLeast(user.length, 7000)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("model hints pick the registry's models (unknown and absent hints: main)", () => {
    const h = makeDag({
      plan: () =>
        planReply([
          { id: 1, task: "quick lookup", model_hint: "fast" },
          { id: 2, task: "deep analysis", model_hint: "reasoning" },
          { id: 3, task: "normal" },
          { id: 4, task: "odd", model_hint: "nonexistent" }
        ])
    }, { models: ["fast", "reasoning"] })
    return Effect.gen(function*() {
      yield* dagEvents({ query: "goal", conversationId: CID })
      const byStep = new Map<string, Set<string>>()
      for (const r of requestsOf(h)) {
        if (r.kind._tag === "Step" || r.kind._tag === "StepAnswer") {
          byStep.set(r.kind.id, new Set([...(byStep.get(r.kind.id) ?? []), r.model]))
        }
      }
      assert.deepStrictEqual([...byStep.get("1")!], ["fast"])
      assert.deepStrictEqual([...byStep.get("2")!], ["reasoning"])
      assert.deepStrictEqual([...byStep.get("3")!], ["main"])
      assert.deepStrictEqual([...byStep.get("4")!], ["main"])
      // planning, analysis and the answer stay on the main model
      for (const r of requestsOf(h)) {
        if (["Plan", "Analyze", "Answer"].includes(r.kind._tag)) assert.strictEqual(r.model, "main")
      }
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a step's events carry its step_id; its own answer stream and Done are not forwarded", () => {
    const h = makeDag({
      plan: () => planReply([{ id: "a", task: "add" }]),
      step: (_, turn) => (turn === 0 ? ScriptedLlm.toolCall("add", { a: 2, b: 3 }, { id: "c1" }) : stepText("5"))
    })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "goal", conversationId: CID })
      const stepLevel = events.filter((e) =>
        ["ThinkingStart", "ThinkingDone", "ToolStart", "ToolDone"].includes(e._tag)
      )
      assert.strictEqual(stepLevel.length, 6)
      for (const e of stepLevel) assert.strictEqual((e as { step_id?: string }).step_id, "a")
      assert.strictEqual(events.filter((e) => e._tag === "Done").length, 1)
      assert.strictEqual(events.filter((e) => e._tag === "AnswerStart").length, 1, "only the run's answer")
      assert.deepStrictEqual(
        events.flatMap((e) => (e._tag === "AnswerDelta" ? [e.content] : [])).join(""),
        "final answer"
      )
      const done = events.find((e) => e._tag === "DagStep" && e.status === "done")
      assert.deepStrictEqual(done, { _tag: "DagStep", round: 1, status: "done", step_id: "a", result: "5" })
      assert.deepStrictEqual(doneOf(events).steps?.map((s) => [s.tool_name, s.step_id]), [["add", "a"]])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a failing step fails; its dependents fail naming it; independent steps still run", () => {
    const h = makeDag({
      plan: () =>
        planReply([
          { id: 1, task: "breaks" },
          { id: 2, task: "needs 1", dependencies: [1] },
          { id: 3, task: "needs 2", dependencies: [2] },
          { id: 4, task: "independent" }
        ]),
      step: (id) => (id === "1" ? ScriptedLlm.fail("BadRequest", "nope") : stepText(`result of ${id}`))
    })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "goal", conversationId: CID })
      const settled = Object.fromEntries(
        events.flatMap((e) => (e._tag === "DagStep" && e.status !== "start" ? [[e.step_id, e]] : []))
      )
      assert.strictEqual(settled["1"].status, "failed")
      assert.include(settled["1"].error, "nope")
      assert.deepStrictEqual([settled["2"].status, settled["2"].error], [
        "failed",
        "Not run: its dependency \"1\" failed"
      ])
      assert.deepStrictEqual([settled["3"].status, settled["3"].error], [
        "failed",
        "Not run: its dependency \"2\" failed"
      ])
      assert.strictEqual(settled["4"].status, "done")
      assert.deepStrictEqual(stepTrail(events).filter((t) => t.startsWith("start")), ["start:1", "start:4"])
      // the analyzer sees the failures; the run does not fail
      const analysis = requestsOf(h).find((r) => r.kind._tag === "Analyze")!
      assert.include(textOf(analysis.request.messages[1].content), "### Step 2 [failed]: needs 1")
      assert.isUndefined(events.find((e) => e._tag === "RunFailed"))
      assert.strictEqual(doneOf(events).answer, "final answer")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a step over DAG_STEP_TIMEOUT_MS is cancelled and fails; its usage still counts", () => {
    const h = makeDag({
      plan: () => planReply([{ id: 1, task: "slow" }, { id: 2, task: "fast" }]),
      step: (
        id,
        turn
      ) => (id === "1" && turn === 0 ? ScriptedLlm.toolCall("sleep", { ms: 60_000 }) : stepText(`r${id}`))
    }, { dag: { stepTimeout: "2 seconds" } })
    return Effect.gen(function*() {
      const fiber = yield* Effect.fork(dagEvents({ query: "goal", conversationId: CID }))
      yield* TestClock.adjust("3 seconds")
      const events = yield* Fiber.join(fiber)
      const failed = events.find((e) => e._tag === "DagStep" && e.step_id === "1" && e.status !== "start")
      assert.deepStrictEqual(failed, {
        _tag: "DagStep",
        round: 1,
        status: "failed",
        step_id: "1",
        error: "Timed out after 2 s"
      })
      const done = doneOf(events)
      assert.strictEqual(done.usage.llm_calls, requestsOf(h).length, "every call counted, the timed-out step's too")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("hooks apply inside steps (the step's tool call is blocked by a Pre hook)", () => {
    const seen: Array<ToolUseContext> = []
    const hooks = Hooks.layer([
      Hooks.pre({
        name: "no-add",
        matcher: "add",
        run: (ctx) =>
          Effect.sync(() => {
            seen.push(ctx)
            return { allow: false, reason: "adding is not allowed" } as const
          })
      })
    ])
    const h = makeDag({
      plan: () => planReply([{ id: 1, task: "add numbers" }]),
      step: (_, turn) => (turn === 0 ? ScriptedLlm.toolCall("add", { a: 1, b: 1 }) : stepText("could not add"))
    }, { hooks, tools: [addTool] })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "goal", conversationId: CID })
      const toolDone = events.find((e) => e._tag === "ToolDone")
      assert.include(toolDone?._tag === "ToolDone" ? toolDone.error ?? "" : "", "adding is not allowed")
      assert.strictEqual(seen.length, 1)
      assert.strictEqual(seen[0].conversationId, "conv#dag/1/1", "the step's own conversation id")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("usage sums every call of every step, with planning and analysis phases", () => {
    const h = makeDag({ plan: () => diamond })
    return Effect.gen(function*() {
      const done = doneOf(yield* dagEvents({ query: "goal", conversationId: CID }))
      const requests = requestsOf(h)
      assert.strictEqual(done.usage.llm_calls, requests.length)
      const phases = done.usage.by_phase
      assert.strictEqual(phases.planning?.llm_calls, 1)
      assert.strictEqual(phases.analysis?.llm_calls, 1)
      assert.strictEqual(phases.loop?.llm_calls, 3)
      assert.strictEqual(phases.synthesis?.llm_calls, 4, "three step answers + the run's answer")
      const sum = Object.values(phases).reduce((n, u) => n + (u?.total_tokens ?? 0), 0)
      assert.strictEqual(done.usage.total_tokens, sum)
      assert.strictEqual(done.iterations, 3)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("cancellation ends the run with Done (empty answer, no RunFailed)", () => {
    const h = makeDag({
      plan: () => planReply([{ id: 1, task: "slow" }]),
      step: (_, turn) => (turn === 0 ? ScriptedLlm.toolCall("sleep", { ms: 60_000 }) : stepText("late"))
    })
    return Effect.gen(function*() {
      const fiber = yield* Effect.fork(
        dagEvents({ query: "goal", conversationId: CID, cancel: Effect.sleep("1 second") })
      )
      yield* TestClock.adjust("2 seconds")
      const events = yield* Fiber.join(fiber)
      assert.strictEqual(doneOf(events).answer, "")
      assert.isUndefined(events.find((e) => e._tag === "RunFailed"))
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a defect in the run becomes RunFailed then Done", () => {
    const h = makeDag((request, i, method) => {
      if (kindOf(request, method)._tag === "Plan") throw new Error("planner exploded")
      return ScriptedLlm.text(`x${i}`)
    })
    return Effect.gen(function*() {
      const events = yield* dagEvents({ query: "goal", conversationId: CID })
      const tags = events.map((e) => e._tag)
      assert.deepStrictEqual(tags.slice(-2), ["RunFailed", "Done"])
      const failed = events.find((e) => e._tag === "RunFailed")
      assert.include(failed?._tag === "RunFailed" ? failed.message : "", "planner exploded")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("runCollect gives the Done payload", () => {
    const h = makeDag({ plan: () => diamond }, { tools: allTools })
    return Effect.gen(function*() {
      const agent = yield* DagAgent.DagAgent
      const result = yield* agent.runCollect({ query: "goal" })
      assert.strictEqual(result.answer, "final answer")
      assert.strictEqual(result.iterations, 3)
      assert.isUndefined(result.error)
    }).pipe(Effect.provide(h.layer))
  })
})
