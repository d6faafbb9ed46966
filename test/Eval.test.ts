import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { existsSync, mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { main } from "../src/app/eval.js"
import * as DemoLlm from "../src/DemoLlm.js"
import * as Eval from "../src/Eval.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { addTool, echoTool, makeAgent } from "./utils/agentLayers.js"

const agentFor = (script: ReadonlyArray<ScriptedLlm.ScriptStep>) =>
  makeAgent(script, { tools: [addTool, echoTool] }).layer

describe("Eval scorers", () => {
  it.effect("scores the answer, the tool calls and the limits, with reasons", () =>
    Effect.gen(function*() {
      const agent = agentFor([
        ScriptedLlm.toolCalls([{ name: "add", arguments: { a: 2, b: 3 } }, { name: "add", arguments: { a: 4, b: 4 } }]),
        ScriptedLlm.text("done"),
        ScriptedLlm.text("{\"sum\": 5, \"other\": 8}")
      ])
      const result = yield* Eval.runCase({
        id: "c1",
        input: "add things",
        scorers: [
          { type: "contains", value: "\"sum\": 5" },
          { type: "exact", value: "nope" },
          { type: "regex", pattern: "other\"?:\\s*8" },
          {
            type: "json_schema",
            schema: { type: "object", required: ["sum"], properties: { sum: { type: "integer", maximum: 4 } } }
          },
          { type: "tool_calls", name: "add", args: "\"a\":2", count: 1 },
          { type: "tool_calls", name: "add", count: { min: 3 } },
          { type: "limits", max_tokens: 1 },
          { type: "tool_calls", name: "add", count: 1 }
        ]
      }, { agent })
      assert.deepStrictEqual(result.scores.map((s) => [s.scorer, s.passed]), [
        ["contains", true],
        ["exact", false],
        ["regex", true],
        ["json_schema", false],
        ["tool_calls", true],
        ["tool_calls", false],
        ["limits", false],
        ["tool_calls", false]
      ])
      assert.strictEqual(result.scores[7].reason, "2 call(s) of add, expected 1")
      assert.strictEqual(result.scores[3].reason, "$.sum: 5 > maximum 4")
      assert.strictEqual(result.scores[5].reason, "2 call(s) of add, expected at least 3")
      assert.match(result.scores[6].reason, /^\d+ tokens > 1$/)
      assert.strictEqual(result.score, Math.round((3 / 8) * 1000) / 1000)
      assert.isFalse(result.passed)
      assert.deepStrictEqual(result.trace.map((t) => t.observation), ["5", "8"])
    }))

  it.effect("the judge asks the model with the rubric and reports its score and reason", () =>
    Effect.gen(function*() {
      const judge = ScriptedLlm.makeUnsafe([ScriptedLlm.toolCall("grade", { score: 0.75, reason: "mostly right" })])
      const result = yield* Eval.runCase(
        { id: "j", input: "q", scorers: [{ type: "judge", rubric: "Says hello politely.", pass_score: 0.8 }] },
        { agent: agentFor([ScriptedLlm.text("hi"), ScriptedLlm.text("hello there")]), judge: judge.service }
      )
      assert.deepStrictEqual(result.scores[0], { scorer: "judge", score: 0.75, passed: false, reason: "mostly right" })
      const sent = judge.requests[0].request.messages.map((m) => String(m.content)).join("\n")
      assert.include(sent, "Says hello politely.")
      assert.include(sent, "hello there")
    }))

  it.effect("the judge on the offline demo model says it judged nothing (not an empty reason)", () =>
    Effect.gen(function*() {
      const result = yield* Eval.runCase(
        {
          id: "j",
          input: "What is 2 + 2?",
          scorers: [{ type: "judge", rubric: "States that 2 + 2 is 4.", pass_score: 0 }]
        },
        { agent: agentFor([ScriptedLlm.text("4")]), judge: DemoLlm.makeUnsafe({ thinkDelay: 0, chunkDelay: 0 }) }
      )
      assert.strictEqual(result.scores[0].score, 0)
      assert.match(result.scores[0].reason, /^the offline demo model does not judge/)
    }))

  it.effect("a judge's blank reason is refused: the judge is asked again, and the reason it then gives is reported", () =>
    Effect.gen(function*() {
      const judge = ScriptedLlm.makeUnsafe([
        ScriptedLlm.toolCall("grade", { score: 1, reason: " " }),
        ScriptedLlm.text("{\"score\": 0.9, \"reason\": \"it says 4\"}")
      ])
      const result = yield* Eval.runCase(
        { id: "j", input: "q", scorers: [{ type: "judge", rubric: "Says 4." }] },
        { agent: agentFor([ScriptedLlm.text("4")]), judge: judge.service }
      )
      assert.deepStrictEqual(result.scores[0], { scorer: "judge", score: 0.9, passed: true, reason: "it says 4" })
      assert.strictEqual(judge.requests.length, 2)
    }))

  it("a malformed case is refused with its line number", () => {
    const parsed = Eval.parseCases(
      "{\"id\":\"a\",\"input\":\"x\",\"scorers\":[]}\n\n{\"id\":\"b\",\"scorers\":[{\"type\":\"contains\"}]}"
    )
    assert.isTrue(Either.isLeft(parsed))
    if (Either.isLeft(parsed)) {
      assert.strictEqual(parsed.left.line, 3)
      assert.include(parsed.left.message, "value")
    }
  })
})

describe("npm run eval", () => {
  it.live(
    "runs the example suite offline, writes both reports, compares with a baseline and exits 1 below --min-score",
    () =>
      Effect.gen(function*() {
        const dir = mkdtempSync(join(tmpdir(), "eval-"))
        const report = join(dir, "report.json")
        const ok = yield* main(["examples/evals/cases.jsonl", "--report", report, "--concurrency", "2"])
        assert.strictEqual(ok, 0)
        const json = JSON.parse(readFileSync(report, "utf8")) as Eval.Report
        assert.strictEqual(json.summary.cases, 5)
        assert.strictEqual(json.summary.passed, 5)
        assert.deepStrictEqual(json.cases.map((c) => c.id), [
          "arithmetic",
          "arithmetic-regex",
          "greeting",
          "judged",
          "replayed-cassette"
        ])
        const judged = json.cases[3].scores.find((s) => s.scorer === "judge")
        assert.match(judged?.reason ?? "", /^the offline demo model does not judge/)
        const page = readFileSync(join(dir, "report.html"), "utf8")
        assert.include(page, "<title>Eval report — 5/5 passed</title>")
        assert.include(page, "calculator(")
        assert.notInclude(page, "<script")
        const low = yield* main([
          "examples/evals/cases.jsonl",
          "--baseline",
          report,
          "--min-score",
          "0.95",
          "--html",
          join(dir, "b.html")
        ])
        assert.strictEqual(low, 1)
        assert.isTrue(existsSync(join(dir, "b.html")))
        assert.strictEqual(yield* main(["missing.jsonl"]), 2)
      }),
    120_000
  )
})
