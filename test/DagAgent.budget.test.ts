/**
 * A budget in DAG mode (SPEC §21, §16): planning, every step's ReAct run,
 * analysis and the final answer draw from the run's one ledger, so the tokens
 * the provider bills over the whole DAG run never exceed the budget, whatever
 * the budget, and the run always ends with `Done`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Budget from "../src/Budget.js"
import type { ChatRequest } from "../src/Llm.js"
import type { ScriptStep } from "../src/ScriptedLlm.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { dagEvents, dagResponder, makeDag, planReply, stepText } from "./utils/dagLayers.js"

/** Bills honestly: the prompt at the engine's estimate, the output cut at `maxTokens`. */
const billing =
  (bill: { tokens: number }, inner: ScriptedLlm.Responder): ScriptedLlm.Responder =>
  (request: ChatRequest, i, method) => {
    const step: ScriptStep = inner(request, i, method)
    if (step._tag !== "Reply") return step
    const wanted = Math.ceil(((step.content ?? "").length + JSON.stringify(step.toolCalls ?? []).length) / 4) + 1
    const completion = Math.min(wanted, request.maxTokens ?? Infinity)
    const prompt = Budget.estimateInput(request)
    bill.tokens += prompt + completion
    return { ...step, usage: { prompt, completion } }
  }

describe("DagAgent with a budget", () => {
  for (const tokens of [400, 1500, 3000, 6000, 20000]) {
    it.effect(`a ${tokens}-token budget: billed tokens stay within it; the run ends with Done`, () =>
      Effect.gen(function*() {
        const bill = { tokens: 0 }
        const h = makeDag(
          billing(
            bill,
            dagResponder({
              plan: () =>
                planReply([
                  { id: "a", task: "task a", dependencies: [] },
                  { id: "b", task: "task b", dependencies: [] },
                  { id: "c", task: "task c", dependencies: ["a", "b"] }
                ]),
              step: (
                id,
                turn
              ) => (turn < 2 ? ScriptedLlm.toolCall("add", { a: turn, b: 1 }) : stepText(`result of ${id}`))
            })
          ),
          {
            dag: {
              agent: {
                completionCheck: false,
                selfReflectionInterval: 0,
                synthesis: "always",
                budget: { tokens, reserveOutputTokens: 64 }
              }
            }
          }
        )
        const events = yield* dagEvents({ query: "do the three tasks" }).pipe(Effect.provide(h.layer))
        const done = events[events.length - 1]
        assert.strictEqual(done._tag, "Done")
        assert.isTrue(bill.tokens <= tokens, `billed ${bill.tokens} > ${tokens}`)
        if (tokens >= 20000) assert.strictEqual(done._tag === "Done" && done.answer, "final answer")
      }))
  }
})
