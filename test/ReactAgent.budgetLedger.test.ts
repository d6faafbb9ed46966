/**
 * The run's budget ledger in the ReAct loop (src/internal/reactAgent/budget.ts):
 * a durable run that replays stored model replies after a restart makes no
 * model call, yet its ledger must count what they cost (reconcile); the loop
 * stopped for the budget hands synthesis the budget summary; the room held for
 * the answer is given back before the answer call; policy `ask` without a
 * money limit never asks. In process over `ScriptedLlm` with explicit usage and
 * journals that record (and replay) activity results by name.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type * as Approvals from "../src/Approvals.js"
import * as Budget from "../src/Budget.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import type * as RunJournal from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { echoTool, makeAgent } from "./utils/agentLayers.js"

/** $1 per million input tokens, $2 per million output tokens. */
const prices = { scripted: { input: 1, output: 2 } }
/** The first loop call bills $0.00192 of the $0.002 limit: the second does not fit. */
const LIMIT = 0.002
const SPENT = (1900 * 1 + 10 * 2) / 1e6

/**
 * A journal that runs every activity and records its result by name, or, given
 * the results of an earlier run, returns those stored results without running
 * them (a durable host replaying after a restart).
 */
const journalOf = (stored?: ReadonlyMap<string, unknown>) => {
  const results = new Map<string, unknown>()
  const ran: Array<string> = []
  const events: Array<RunEvent> = []
  const journal: RunJournal.RunJournal = {
    activity: (o) =>
      Effect.suspend(() => {
        if (stored?.has(o.name)) return Effect.succeed(stored.get(o.name) as never)
        ran.push(o.name)
        return Effect.tap(o.execute({ restarted: false }), (a) => Effect.sync(() => void results.set(o.name, a)))
      }),
    emit: (event) => Effect.sync(() => void events.push(event))
  }
  return { journal, results, ran, events }
}

const script = [
  ScriptedLlm.toolCall("echo", { text: "one" }, { id: "c1", usage: { prompt: 1900, completion: 10 } }),
  ScriptedLlm.toolCall("echo", { text: "two" }, { id: "c2", usage: { prompt: 40, completion: 5 } }),
  ScriptedLlm.text("the answer", { usage: { prompt: 40, completion: 5 } })
]

const exhausted = (events: ReadonlyArray<RunEvent>) => events.flatMap((e) => (e._tag === "BudgetExhausted" ? [e] : []))

/** An approvals service that must never be asked (a request is a defect). */
const neverAsked: Approvals.ApprovalsService = {
  request: (req) => Effect.die(`unexpected approval request ${req.toolName}`),
  decide: () => Effect.die("unused"),
  pending: () => Effect.succeed([])
}

describe("ReactAgent budget ledger", () => {
  it.effect("a replayed model reply counts against the budget: the run stops where the first one did, spent as billed", () =>
    Effect.gen(function*() {
      const agentOf = () =>
        makeAgent(script, {
          tools: [echoTool],
          llm: { onExhausted: "repeatLast" },
          agent: { completionCheck: false, budget: { usd: LIMIT, tokens: 100_000, prices, reserveOutputTokens: 64 } }
        })
      const first = journalOf()
      yield* Effect.flatMap(
        ReactAgent.ReactAgent,
        (a) => a.execute({ query: "work", conversationId: "c-first" }, first.journal)
      ).pipe(
        Effect.provide(agentOf().layer)
      )
      // what the next loop call needed at the least: its input and 16 output tokens
      const billed = {
        spent_tokens: 1910,
        limit_tokens: 100_000,
        spent_usd: SPENT,
        limit_usd: LIMIT,
        needed_tokens: 387,
        needed_usd: 0.000419
      }
      assert.deepStrictEqual(exhausted(first.events).map(({ step_id: _, ...e }) => e), [{
        _tag: "BudgetExhausted",
        ...billed
      }])
      assert.isFalse(first.ran.includes("llm/2"))

      // after a restart: the first loop call and its tool round come from the store, nothing is billed by the provider
      const stored = new Map([...first.results].filter(([name]) => name === "llm/1" || name.startsWith("tool/1/")))
      assert.strictEqual(stored.size, 2)
      const replay = journalOf(stored)
      const h = agentOf()
      yield* Effect.flatMap(
        ReactAgent.ReactAgent,
        (a) => a.execute({ query: "work", conversationId: "c-first" }, replay.journal)
      ).pipe(
        Effect.provide(h.layer)
      )
      assert.isFalse(replay.ran.includes("llm/1"))
      assert.isFalse(replay.ran.includes("llm/2"))
      assert.deepStrictEqual(exhausted(replay.events).map(({ step_id: _, ...e }) => e), [{
        _tag: "BudgetExhausted",
        ...billed
      }])
      // no loop call reached the model (synthesis, if the budget let it, is the only one)
      assert.isTrue(h.requests().every((r) => r.method === "stream"))
    }))

  it.effect("stopped for the budget: the loop's answer is the budget summary", () => {
    const h = makeAgent(script, {
      tools: [echoTool],
      llm: { onExhausted: "repeatLast" },
      agent: { completionCheck: false, budget: { usd: LIMIT, prices, reserveOutputTokens: 64 } }
    })
    return Effect.gen(function*() {
      const rec = journalOf()
      yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.execute({ query: "work" }, rec.journal))
      assert.strictEqual(exhausted(rec.events).length, 1)
      // the synthesis call does not fit either: the run answers with the loop's answer, the budget summary
      const done = rec.events[rec.events.length - 1]
      assert.isTrue(
        done._tag === "Done" &&
          done.answer === "I reached this run's budget before finishing. Steps taken:\n1. echo: OK"
      )
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("policy ask with only a token limit stops without asking anyone", () => {
    const h = makeAgent(script, {
      tools: [echoTool],
      approvals: neverAsked,
      llm: { onExhausted: "repeatLast" },
      agent: { completionCheck: false, budget: { tokens: 2_000, policy: "ask", reserveOutputTokens: 64 } }
    })
    return Effect.gen(function*() {
      const rec = journalOf()
      yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.execute({ query: "work" }, rec.journal))
      assert.deepStrictEqual(exhausted(rec.events).map(({ step_id: _, ...e }) => e), [{
        _tag: "BudgetExhausted",
        spent_tokens: 1910,
        limit_tokens: 2_000,
        needed_tokens: 387
      }])
      assert.isFalse(rec.events.some((e) => e._tag === "BudgetStatus"))
      assert.isFalse(rec.ran.some((n) => n.startsWith("budget/")))
      const done = rec.events[rec.events.length - 1]
      assert.isTrue(done._tag === "Done")
      assert.isFalse(rec.events.some((e) => e._tag === "RunFailed"))
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("the room held for the answer is given back before the answer call: synthesis gets its full output", () =>
    Effect.gen(function*() {
      const textScript = (prompt: number) => [
        ScriptedLlm.text("loop answer", { usage: { prompt, completion: 5 } }),
        ScriptedLlm.text("final", { usage: { prompt: 10, completion: 5 } })
      ]
      // measure the two requests without a budget
      const probe = makeAgent(textScript(10))
      yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.execute({ query: "q" }, journalOf().journal)).pipe(
        Effect.provide(probe.layer)
      )
      const [loop, synthesis] = probe.requests().map((r) => Budget.estimateInput(r.request))
      // the loop call is billed what it was estimated: what remains pays for the synthesis with its 64
      // output tokens and a little more, not for the synthesis and a held answer besides
      const tokens = loop + 64 + synthesis + 64 + 20
      const h = makeAgent(textScript(loop + 59), { agent: { budget: { tokens, reserveOutputTokens: 64 } } })
      const rec = journalOf()
      yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.execute({ query: "q" }, rec.journal)).pipe(
        Effect.provide(h.layer)
      )
      assert.strictEqual(h.requests().length, 2)
      assert.strictEqual(h.requests()[1].request.maxTokens, 64)
      const done = rec.events[rec.events.length - 1]
      assert.isTrue(done._tag === "Done" && done.answer === "final")
      assert.isFalse(rec.events.some((e) => e._tag === "RunFailed"))
    }))

  for (const [label, budget] of [["no budget", undefined], ["prices but no limit", { prices }]] as const) {
    it.effect(`${label}: a model that refuses with reason Budget stops the loop like the check, without a ledger to report`, () => {
      const h = makeAgent([
        ScriptedLlm.fail("Budget", "provider quota"),
        ScriptedLlm.text("final", { usage: { prompt: 10, completion: 5 } })
      ], {
        agent: { completionCheck: false, ...(budget !== undefined ? { budget } : {}) }
      })
      return Effect.gen(function*() {
        const rec = journalOf()
        yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.execute({ query: "q" }, rec.journal))
        assert.deepStrictEqual(exhausted(rec.events), [])
        const synthesis = JSON.stringify(h.requests()[1].request.messages)
        assert.include(synthesis, "I reached this run's budget before finishing. No tools were called.")
        const done = rec.events[rec.events.length - 1]
        assert.isTrue(done._tag === "Done" && done.answer === "final")
        assert.isFalse(rec.events.some((e) => e._tag === "RunFailed"))
      }).pipe(Effect.provide(h.layer))
    })
  }
})
