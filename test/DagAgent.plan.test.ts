import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { analyze, clamp, regexFallback, UNPARSEABLE } from "../src/internal/dagAgent/analyze.js"
import { check, compareIds, plan, planMessages, type PlanRequest, PlanSchema } from "../src/internal/dagAgent/plan.js"
import { textOf } from "../src/Message.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"

const decode = Schema.decodeUnknownSync(PlanSchema)
const raw = (steps: ReadonlyArray<{ id: string; task?: string; dependencies?: ReadonlyArray<string> }>) =>
  steps.map((s) => ({ task: `do ${s.id}`, dependencies: [], ...s }))

const request: PlanRequest = {
  goal: "Compare Lyon et Porto",
  history: [],
  now: new Date("2026-12-02T10:00:00Z"),
  tools: "- lookup: Looks things up",
  models: ["main", "fast", "reasoning"],
  followUps: []
}

describe("DAG planner: the plan schema", () => {
  it("decodes {steps} with numeric ids, null dependencies and null hints", () => {
    const plan = decode({
      steps: [{ id: 1, task: "a", dependencies: null, tool_hint: null }, { id: "2", task: "b", dependencies: [1] }]
    })
    assert.deepStrictEqual(plan.steps.map((s) => [s.id, s.dependencies]), [["1", []], ["2", ["1"]]])
  })

  it("recovers a single step object given instead of {steps}", () => {
    assert.deepStrictEqual(decode({ id: 7, task: "only" }).steps.map((s) => s.id), ["7"])
  })

  it("rejects an empty plan and more than 6 steps", () => {
    assert.throws(() => decode({ steps: [] }))
    assert.throws(() => decode({ steps: Array.from({ length: 7 }, (_, i) => ({ id: i, task: "t" })) }))
  })
})

describe("DAG planner: validation", () => {
  it("drops dependency ids that name no step (and reports them), dedupes the rest", () => {
    const checked = check(raw([{ id: "1" }, { id: "2", dependencies: ["1", "9", "1"] }]))
    assert.strictEqual(checked._tag, "Valid")
    if (checked._tag !== "Valid") return
    assert.deepStrictEqual(checked.plan.steps[1].dependencies, ["1"])
    assert.deepStrictEqual(checked.dropped, [{ step: "2", dependency: "9" }])
  })

  it("a cycle (or a self-dependency) is invalid and named", () => {
    const cycle = check(
      raw([{ id: "1", dependencies: ["3"] }, { id: "2", dependencies: ["1"] }, { id: "3", dependencies: ["2"] }, {
        id: "4"
      }])
    )
    assert.deepStrictEqual(cycle, { _tag: "Invalid", problem: "the dependencies form a cycle (steps 1, 2, 3)" })
    assert.strictEqual(check(raw([{ id: "1", dependencies: ["1"] }]))._tag, "Invalid")
  })

  it("duplicate ids and empty tasks are invalid", () => {
    assert.include(
      (check(raw([{ id: "1" }, { id: "1" }])) as { problem: string }).problem,
      "two steps have the id \"1\""
    )
    assert.strictEqual(check(raw([{ id: "1", task: "  " }]))._tag, "Invalid")
  })

  it("orders ids naturally (2 before 10) for launching", () => {
    const checked = check(raw([{ id: "10" }, { id: "2" }, { id: "b" }, { id: "a" }]))
    assert.deepStrictEqual(checked._tag === "Valid" ? checked.plan.order : [], ["2", "10", "a", "b"])
    assert.isBelow(compareIds("2", "10"), 0)
  })

  it("keeps hints, drops empty ones", () => {
    const checked = check([{ id: "1", task: "t", dependencies: [], tool_hint: " lookup ", model_hint: "" }])
    assert.deepStrictEqual(checked._tag === "Valid" ? checked.plan.steps[0] : undefined, {
      id: "1",
      task: "t",
      dependencies: [],
      tool_hint: "lookup"
    })
  })
})

describe("DAG planner: prompt and calls", () => {
  it("gives the date, asks for the user's language and for merging trivially related steps, lists tools and models", () => {
    const [system, user] = planMessages({
      ...request,
      followUps: ["also Braga"],
      previous: "What happened in round 1: …"
    })
    const text = textOf(system.content)
    assert.include(text, "Today is 2026-12-02 (the year is 2026)")
    assert.include(text, "same language as the user's goal")
    assert.include(text, "Merge trivially related work into ONE step")
    assert.include(text, "\"reasoning\" when the step needs that model")
    const body = textOf(user.content)
    assert.include(body, "Goal:\nCompare Lyon et Porto")
    assert.include(body, "[User follow-up]: also Braga")
    assert.include(body, "- lookup: Looks things up")
    assert.include(body, "What happened in round 1")
  })

  it.effect("an invalid plan is retried once with the problem; a second failure is a planning failure", () => {
    const cyclic = ScriptedLlm.toolCall("create_plan", {
      steps: [{ id: 1, task: "a", dependencies: [2] }, { id: 2, task: "b", dependencies: [1] }]
    })
    const llm = ScriptedLlm.makeUnsafe([cyclic, cyclic])
    return Effect.gen(function*() {
      const planned = yield* plan(llm.service, request)
      assert.strictEqual(planned._tag, "Failed")
      assert.strictEqual(llm.calls, 2)
      assert.include(
        textOf(llm.requests[1].request.messages[1].content),
        "Your previous plan was rejected: the dependencies form a cycle"
      )
      assert.strictEqual(planned.usage.llm_calls, 2)
    })
  })

  it.effect("a plain-text model's bare JSON array of steps is accepted", () => {
    const llm = ScriptedLlm.makeUnsafe(
      [ScriptedLlm.text("Here is the plan:\n[{\"id\": 1, \"task\": \"look it up\"}]")],
      {
        abilities: { toolCall: false, jsonMode: false }
      }
    )
    return Effect.gen(function*() {
      const planned = yield* plan(llm.service, request)
      assert.strictEqual(planned._tag, "Planned")
      assert.deepStrictEqual(planned._tag === "Planned" ? planned.plan.steps.map((s) => s.task) : [], ["look it up"])
    })
  })
})

describe("DAG analyzer", () => {
  const results = [{ id: "1", task: "t", status: "done" as const, result: "x".repeat(12_000) }]

  it.effect("clamps confidence to 0–1 and keeps the final answer; step results are cut to 10,000 chars", () => {
    const llm = ScriptedLlm.makeUnsafe([
      ScriptedLlm.toolCall("report_analysis", { achieved: true, confidence: 7, reasoning: "ok", final_answer: "42" })
    ])
    return Effect.gen(function*() {
      const { analysis } = yield* analyze(llm.service, "g", results, [])
      assert.deepStrictEqual(analysis, { achieved: true, confidence: 1, reasoning: "ok", finalAnswer: "42" })
      const prompt = textOf(llm.requests[0].request.messages[1].content)
      assert.include(prompt, "x".repeat(10_000) + "… [truncated, 2000 more chars]")
    })
  })

  it.effect("unparseable → not achieved, confidence 0", () => {
    const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("no idea")], { onExhausted: "repeatLast" })
    return Effect.gen(function*() {
      const result = yield* analyze(llm.service, "g", results, [])
      assert.deepStrictEqual(result.analysis, UNPARSEABLE)
      assert.strictEqual(llm.calls, 5, "native, json ×2, text ×2")
    })
  })

  it("reads a reply with broken JSON field by field; clamps NaN to 0", () => {
    assert.deepStrictEqual(
      regexFallback("{\"achieved\": true, \"confidence\": 0.7, \"reasoning\": \"fine \\\"q\\\"\", oops"),
      {
        achieved: true,
        confidence: 0.7,
        reasoning: "fine \"q\""
      }
    )
    assert.isUndefined(regexFallback("nothing here"))
    assert.strictEqual(clamp(Number.NaN), 0)
    assert.strictEqual(clamp(-3), 0)
  })
})
