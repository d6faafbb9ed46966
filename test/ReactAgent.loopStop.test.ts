/**
 * How the loop stops without a final answer (docs/agent-loop.md "Harness
 * features"): the turn token budget stops it once the loop's calls used
 * exactly that many tokens (the check is `>=`), and the loop answer is then a
 * summary whose steps are one numbered line each (`1. tool: OK`, `2. tool:
 * error (…)`). Seen through the answer when synthesis fails before its first
 * token (the loop's answer is then the run's), and through the requests
 * counted. In process over `ScriptedLlm`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { makeAgent } from "./utils/agentLayers.js"

const run = Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "q" }))

describe("ReactAgent loop stops", () => {
  it.effect("turn token budget reached exactly: the loop stops there, before another call", () => {
    const usage = { prompt: 40, completion: 10 } // 50 tokens a call: two calls reach 100
    const h = makeAgent([
      ScriptedLlm.toolCall("add", { a: 1, b: 1 }, { usage }),
      ScriptedLlm.toolCall("fail", {}, { usage }),
      ScriptedLlm.toolCall("add", { a: 3, b: 3 }, { usage }),
      ScriptedLlm.fail("Server")
    ], { agent: { maxTurnTokens: 100, completionCheck: false } })
    return Effect.gen(function*() {
      const r = yield* run
      assert.strictEqual(r.iterations, 2)
      assert.deepStrictEqual(h.requests().map((q) => q.method), ["chat", "chat", "stream"])
      // the summary, whole: one line per step
      assert.strictEqual(
        r.answer,
        "I reached the token budget of this turn (100 tokens) before finishing. Steps taken:\n1. add: OK\n2. fail: error (it broke)"
      )
    }).pipe(Effect.provide(h.layer))
  })
})
