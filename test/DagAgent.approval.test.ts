/**
 * Tool approval inside DAG steps: a step's call waits for the
 * run's user (the run's conversation id, not the step's), its events carry the
 * step id, and the step goes on with the decision.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as DagAgent from "../src/DagAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import { doneOf, makeDag, planReply, requestsOf, stepText } from "./utils/dagLayers.js"

const CID = "conv"

describe("DagAgent: tool approval", () => {
  it.effect("a step's call waits for the run's user; approved in one step, denied in the other", () => {
    const ran: Array<string> = []
    const write = Tool.make({
      name: "write",
      description: "Writes a file",
      parameters: Schema.Struct({ path: Schema.String }),
      needsApproval: true,
      handler: ({ path }) => Effect.sync(() => (ran.push(path), `wrote ${path}`))
    })
    const h = makeDag({
      plan: () => planReply([{ id: 1, task: "write one" }, { id: 2, task: "write two" }]),
      step: (id, turn, text) =>
        turn === 0
          ? ScriptedLlm.toolCall("write", { path: `file${id}` }, { id: `call_${id}` })
          : stepText(text.includes("denied") ? `step ${id} was refused` : `step ${id} wrote`)
    }, { tools: [write] })
    return Effect.gen(function*() {
      const agent = yield* DagAgent.DagAgent
      const events: Array<RunEvent> = []
      yield* agent.run({ query: "write both", conversationId: CID }).pipe(
        Stream.runForEach((event) => {
          events.push(event)
          if (event._tag !== "ApprovalRequested") return Effect.void
          // answered with the run's conversation id
          return Effect.orDie(agent.approve({
            conversationId: CID,
            approvalId: event.approval_id,
            decision: event.step_id === "1" ? "approve" : "deny",
            reason: "not two"
          }))
        })
      )
      assert.deepStrictEqual(ran, ["file1"])
      const approvals = events.flatMap((e) =>
        e._tag === "ApprovalRequested"
          ? [`requested:${e.step_id}`]
          : e._tag === "ApprovalDecided"
          ? [`${e.status}:${e.step_id}`]
          : []
      )
      assert.sameMembers(approvals, ["requested:1", "requested:2", "approved:1", "denied:2"])
      const results = events.flatMap((
        e
      ) => (e._tag === "DagStep" && e.status === "done" ? [[e.step_id, e.result]] : []))
      assert.sameDeepMembers(results, [["1", "step 1 wrote"], ["2", "step 2 was refused"]])
      // the denied step's model read the denial
      const stepTwo = requestsOf(h).filter((r) => r.kind._tag === "Step" && r.kind.id === "2" && r.kind.turn === 1)
      assert.include(stepTwo[0].kind.text, "Error: the user denied this call: not two")
      assert.deepStrictEqual(yield* agent.approvals.pending(CID), [])
      assert.strictEqual(doneOf(events).answer, "final answer")
    }).pipe(Effect.provide(h.layer))
  })
})
