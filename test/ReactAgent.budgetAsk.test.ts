/**
 * Budget policy `ask` in the ReAct loop (docs/budgets.md): when the money
 * budget cannot pay for one more loop call and the answer, the run waits, like
 * an approval (journaled, stored by the approvals service), for a person to
 * extend the budget (approve, with the USD to add as the reason) or stop it
 * (anything else). In process over `ScriptedLlm` with explicit usage, a journal
 * that records activity names and event keys, and an approvals service whose
 * answers are scripted (it records every request it is asked).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import * as Approvals from "../src/Approvals.js"
import * as Budget from "../src/Budget.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import type * as RunJournal from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { echoTool, makeAgent } from "./utils/agentLayers.js"

const CID = "conv-budget"
/** $1 per million input tokens, $2 per million output tokens. */
const prices = { scripted: { input: 1, output: 2 } }
/** The first loop call bills $0.00192 of the $0.002 limit: the second does not fit. */
const LIMIT = 0.002
const SPENT = (1900 * 1 + 10 * 2) / 1e6

type Answer = { readonly decision: Approvals.DecisionKind; readonly reason?: string }

/** Every activity name and every emitted event with its key, as a durable host would see them. */
const recordingJournal = () => {
  const names: Array<string> = []
  const emitted: Array<{ readonly event: RunEvent; readonly key: string | undefined }> = []
  let runKey: unknown
  const journal: RunJournal.RunJournal = {
    activity: (o) =>
      Effect.suspend(() => {
        names.push(o.name)
        return Effect.tap(o.execute({ restarted: false }), (a) =>
          Effect.sync(() => o.name === "approval/run" ? (runKey = a) : undefined))
      }),
    emit: (event, options) => Effect.sync(() => void emitted.push({ event, key: options?.key }))
  }
  return { journal, names, emitted, runKey: () => runKey }
}

/**
 * An approvals service that answers each request with the next scripted answer
 * once the request is stored (`onStored` first, as the contract says); a
 * request past the script is a defect (a run that asks again and again fails
 * the test at once instead of hanging it).
 */
const scriptedApprovals = (answers: ReadonlyArray<Answer>) => {
  const requests: Array<Approvals.ApprovalRequest> = []
  const service: Approvals.ApprovalsService = {
    request: (req) =>
      Effect.gen(function*() {
        const answer = answers[requests.length]
        requests.push(req)
        if (answer === undefined) return yield* Effect.die(`budget wait ${requests.length} was not expected`)
        if (req.onStored !== undefined) yield* req.onStored
        return { approvalId: req.approvalId, argsHash: req.argsHash, ...answer }
      }),
    decide: () => Effect.die("unused"),
    pending: () => Effect.succeed([])
  }
  return { service, requests }
}

/** A tool round billed 1,900 + 10 tokens, then text replies. */
const script = [
  ScriptedLlm.toolCall("echo", { text: "one" }, { id: "c1", usage: { prompt: 1900, completion: 10 } }),
  ScriptedLlm.toolCall("echo", { text: "two" }, { id: "c2", usage: { prompt: 40, completion: 5 } }),
  ScriptedLlm.text("the answer", { usage: { prompt: 40, completion: 5 } })
]

const runAsk = (answers: ReadonlyArray<Answer>) => {
  const approvals = scriptedApprovals(answers)
  const h = makeAgent(script, {
    tools: [echoTool],
    approvals: approvals.service,
    llm: { onExhausted: "repeatLast" },
    agent: {
      completionCheck: false,
      synthesis: "auto",
      budget: { usd: LIMIT, prices, policy: "ask", reserveOutputTokens: 64 }
    }
  })
  const rec = recordingJournal()
  return Effect.gen(function*() {
    const agent = yield* ReactAgent.ReactAgent
    yield* agent.execute({ query: "work", conversationId: CID }, rec.journal)
    const events = rec.emitted.map((e) => e.event)
    const statuses = events.flatMap((e) => (e._tag === "BudgetStatus" ? [e] : []))
    return { ...rec, events, statuses, requests: approvals.requests, llm: h.requests() }
  }).pipe(Effect.provide(h.layer))
}

/** What the approvals service is asked at budget wait `n` of the run whose approval key is `runKey`. */
const waitRequest = (runKey: unknown, n: number) => {
  const args = { budget_wait: n }
  const argsHash = Approvals.hashArgs(args)
  const toolCallId = `budget_${n}`
  return {
    approvalId: Approvals.makeId({ conversationId: CID, runKey: String(runKey), iteration: n, toolCallId, argsHash }),
    conversationId: CID,
    toolCallId,
    toolName: Budget.WAIT_TOOL,
    args,
    argsHash,
    iteration: n
  }
}

const withoutOnStored = ({ onStored: _, ...rest }: Approvals.ApprovalRequest) => rest

const status = (status: "exhausted" | "extended" | "stopped", limit: number) => ({
  _tag: "BudgetStatus",
  status,
  spent_usd: SPENT,
  limit_usd: limit
})

const budgetKeys = (emitted: ReadonlyArray<{ readonly event: RunEvent; readonly key: string | undefined }>) =>
  emitted.flatMap(({ event, key }) => (event._tag === "BudgetStatus" ? [key] : []))

describe("Budget policy ask", () => {
  it.effect("approve with an amount: exhausted, then extended with the limit raised by it; the loop goes on", () =>
    Effect.gen(function*() {
      const r = yield* runAsk([{ decision: "approve", reason: "0.5" }])
      assert.isString(r.runKey())
      assert.deepStrictEqual(r.requests.map(withoutOnStored), [waitRequest(r.runKey(), 1)])
      assert.deepStrictEqual(r.statuses, [status("exhausted", LIMIT), status("extended", LIMIT + 0.5)])
      assert.deepStrictEqual(budgetKeys(r.emitted), ["budget/1/exhausted", "budget/1/decided"])
      // the wait is an activity of its own, between the first round and the next loop call (which
      // carries the round's interrupt drain)
      assert.deepStrictEqual(r.names.slice(r.names.indexOf("tool/1/c1"), r.names.indexOf("llm/2") + 1), [
        "tool/1/c1",
        "approval/run",
        "budget/1",
        "guard/2",
        "llm/2"
      ])
      // the second tool round ran after the extension, and the run answered
      const extended = r.events.findIndex((e) => e._tag === "BudgetStatus" && e.status === "extended")
      assert.isTrue(r.events.slice(extended).some((e) => e._tag === "ToolStart" && e.tool_call_id === "c2"))
      assert.strictEqual(r.llm.length, 3)
      const done = r.events[r.events.length - 1]
      assert.isTrue(done._tag === "Done" && done.answer === "the answer")
    }))

  it.effect("an extension that still does not fit asks again (wait 2, its own id); a denial stops with the limit as it was", () =>
    Effect.gen(function*() {
      const r = yield* runAsk([{ decision: "approve", reason: "0.0001" }, { decision: "deny", reason: "5" }])
      const extendedLimit = LIMIT + 0.0001
      assert.deepStrictEqual(r.statuses, [
        status("exhausted", LIMIT),
        status("extended", extendedLimit),
        status("exhausted", extendedLimit),
        status("stopped", extendedLimit)
      ])
      assert.deepStrictEqual(r.requests.map(withoutOnStored), [waitRequest(r.runKey(), 1), waitRequest(r.runKey(), 2)])
      assert.notStrictEqual(r.requests[0].approvalId, r.requests[1].approvalId)
      assert.deepStrictEqual(budgetKeys(r.emitted), [
        "budget/1/exhausted",
        "budget/1/decided",
        "budget/2/exhausted",
        "budget/2/decided"
      ])
      assert.deepStrictEqual(r.names.filter((n) => n.startsWith("budget/")), ["budget/1", "budget/2"])
      // stopped: no other loop call, no other tool round; the run ends with Done
      assert.isFalse(r.names.includes("llm/2"))
      assert.isFalse(r.events.some((e) => e._tag === "ToolStart" && e.tool_call_id === "c2"))
      assert.strictEqual(r.events[r.events.length - 1]._tag, "Done")
    }))

  for (
    const answer of [
      { decision: "approve" },
      { decision: "approve", reason: "" },
      { decision: "approve", reason: "ten dollars" },
      { decision: "approve", reason: "0" },
      { decision: "approve", reason: "-0.5" },
      { decision: "approve", reason: "Infinity" },
      { decision: "deny", reason: "1" }
    ] as const
  ) {
    it.effect(`${answer.decision} with reason ${JSON.stringify(answer)} stops the run: no amount to add`, () =>
      Effect.gen(function*() {
        const r = yield* runAsk([answer])
        assert.deepStrictEqual(r.statuses, [status("exhausted", LIMIT), status("stopped", LIMIT)])
        assert.strictEqual(r.requests.length, 1)
        assert.isFalse(r.names.includes("llm/2"))
        assert.strictEqual(r.events[r.events.length - 1]._tag, "Done")
      }))
  }

  it.effect("through the agent's own approvals: the wait is pending under the budget tool until a person answers", () => {
    const h = makeAgent(script, {
      tools: [echoTool],
      llm: { onExhausted: "repeatLast" },
      agent: {
        completionCheck: false,
        synthesis: "auto",
        budget: { usd: LIMIT, prices, policy: "ask", reserveOutputTokens: 64 }
      }
    })
    return Effect.gen(function*() {
      const agent = yield* ReactAgent.ReactAgent
      const exhausted = yield* Queue.unbounded<void>()
      const run = yield* Effect.fork(
        agent.run({ query: "work", conversationId: CID }).pipe(
          Stream.tap((
            e
          ) => (e._tag === "BudgetStatus" && e.status === "exhausted"
            ? Queue.offer(exhausted, undefined)
            : Effect.void)
          ),
          Stream.runCollect
        )
      )
      yield* Queue.take(exhausted)
      const pending = yield* agent.approvals.pending(CID)
      assert.deepStrictEqual(pending.map((p) => [p.toolName, p.toolCallId, p.args, p.iteration]), [[
        Budget.WAIT_TOOL,
        "budget_1",
        { budget_wait: 1 },
        1
      ]])
      yield* agent.approve({ conversationId: CID, approvalId: pending[0].approvalId, decision: "approve", reason: "1" })
      const events = Chunk.toReadonlyArray(yield* Fiber.join(run))
      assert.deepStrictEqual(events.flatMap((e) => (e._tag === "BudgetStatus" ? [[e.status, e.limit_usd]] : [])), [
        ["exhausted", LIMIT],
        ["extended", LIMIT + 1]
      ])
      assert.deepStrictEqual(yield* agent.approvals.pending(CID), [])
      const done = events[events.length - 1]
      assert.isTrue(done._tag === "Done" && done.answer === "the answer")
    }).pipe(Effect.provide(h.layer))
  })
})
