/**
 * The in-memory `Approvals` service's contract around replays (a request for an
 * id already registered), a cancelled approval asked again, the refusals'
 * messages (the HTTP API's error text) and the decision's reason — the parts
 * the mutation run found no test for.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as Approvals from "../src/Approvals.js"
import { request, waiting } from "./utils/approvals.js"

/** The defect's message a request dies with. */
const dies = (effect: Effect.Effect<unknown>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    if (Exit.isSuccess(exit)) return "succeeded"
    const defect = Cause.squash(exit.cause)
    return defect instanceof Error ? defect.message : String(defect)
  })

describe("Approvals: contract edges", () => {
  it("the refusals say what went wrong", () => {
    assert.strictEqual(
      new Approvals.ApprovalNotFound({ conversationId: "c1", approvalId: "a" }).message,
      "No approval a in conversation c1"
    )
    assert.strictEqual(
      new Approvals.AlreadyDecided({ approvalId: "a", status: "cancelled" }).message,
      "Approval a is already cancelled"
    )
    assert.strictEqual(
      new Approvals.ApprovalMismatch({ approvalId: "a", field: "tool_call_id" }).message,
      "Approval a is for another tool call"
    )
    assert.strictEqual(
      new Approvals.ApprovalMismatch({ approvalId: "a", field: "args_hash" }).message,
      "Approval a is for another set of arguments"
    )
  })

  it("makeId separates its parts (moving characters from one part to the next changes the id)", () => {
    const base = { conversationId: "ab", runKey: "c", iteration: 1, toolCallId: "t", argsHash: "h" }
    assert.notStrictEqual(Approvals.makeId(base), Approvals.makeId({ ...base, conversationId: "a", runKey: "bc" }))
    assert.notStrictEqual(Approvals.makeId(base), Approvals.makeId({ ...base, toolCallId: "th", argsHash: "" }))
  })

  it.effect("a replay of the same call joins the pending approval: one decision answers both", () =>
    Effect.gen(function*() {
      const service = yield* Approvals.make
      const first = yield* waiting(service, request("a"))
      const replay = yield* Effect.fork(service.request(request("a")))
      yield* Effect.yieldNow()
      assert.strictEqual((yield* service.pending()).length, 1)
      yield* service.decide({ conversationId: "c1", approvalId: "a", decision: "approve" })
      assert.strictEqual((yield* Fiber.join(first)).decision, "approve")
      assert.strictEqual((yield* Fiber.join(replay)).decision, "approve")
    }))

  it.effect("an id pending for another call (conversation, tool call id or arguments) is a defect; the pending approval is untouched", () =>
    Effect.gen(function*() {
      const service = yield* Approvals.make
      const fiber = yield* waiting(service, request("a"))
      for (
        const other of [
          request("a", { conversationId: "c2" }),
          request("a", { toolCallId: "call_b" }),
          request("a", { argsHash: Approvals.hashArgs({ path: "b" }) })
        ]
      ) {
        assert.strictEqual(yield* dies(service.request(other)), "approval id a is already used by another call")
      }
      assert.deepStrictEqual((yield* service.pending()).map((p) => p.toolCallId), ["call_a"])
      yield* service.decide({ conversationId: "c1", approvalId: "a", decision: "deny" })
      assert.strictEqual((yield* Fiber.join(fiber)).decision, "deny")
    }))

  it.effect("an id decided in another conversation is a defect when asked again, not its decision", () =>
    Effect.gen(function*() {
      const service = yield* Approvals.make
      const fiber = yield* waiting(service, request("a"))
      yield* service.decide({ conversationId: "c1", approvalId: "a", decision: "approve" })
      yield* Fiber.join(fiber)
      assert.strictEqual(
        yield* dies(service.request(request("a", { conversationId: "c2" }))),
        "approval id a belongs to another conversation"
      )
    }))

  it.effect("a cancelled approval asked again (the run resumed) is pending again and can be decided", () =>
    Effect.gen(function*() {
      const service = yield* Approvals.make
      const cancelled = yield* waiting(service, request("a"))
      yield* Fiber.interrupt(cancelled)
      const again = yield* waiting(service, request("a"))
      assert.deepStrictEqual((yield* service.pending()).map((p) => p.approvalId), ["a"])
      yield* service.decide({ conversationId: "c1", approvalId: "a", decision: "approve" })
      assert.strictEqual((yield* Fiber.join(again)).decision, "approve")
    }))

  it.effect("a reason of only spaces is no reason", () =>
    Effect.gen(function*() {
      const service = yield* Approvals.make
      const fiber = yield* waiting(service, request("a"))
      yield* service.decide({ conversationId: "c1", approvalId: "a", decision: "deny", reason: "   " })
      const decision = yield* Fiber.join(fiber)
      assert.notProperty(decision, "reason")
      assert.strictEqual(decision.decision, "deny")
    }))

  it.effect("onStored runs once the request is registered: a decision taken there answers the request", () =>
    Effect.gen(function*() {
      const service = yield* Approvals.make
      const decision = yield* service.request({
        ...request("a"),
        onStored: Effect.orDie(service.decide({ conversationId: "c1", approvalId: "a", decision: "approve" }))
      })
      assert.strictEqual(decision.decision, "approve")
    }))

  it.effect("a decision taken in the instant the timeout passes stands (the timer does not overwrite it)", () =>
    Effect.gen(function*() {
      const service = yield* Approvals.make
      const fiber = yield* waiting(service, request("a", { timeout: "1 minute" }))
      yield* TestClock.adjust("59 seconds")
      yield* service.decide({ conversationId: "c1", approvalId: "a", decision: "approve" })
      yield* TestClock.adjust("1 second")
      assert.strictEqual((yield* Fiber.join(fiber)).decision, "approve")
      assert.deepStrictEqual(
        yield* Effect.flip(service.decide({ conversationId: "c1", approvalId: "a", decision: "deny" })),
        new Approvals.AlreadyDecided({ approvalId: "a", status: "approved" })
      )
    }))
})
