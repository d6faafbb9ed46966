/**
 * The in-memory `Approvals` service: the contract a durable store implements too.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as Approvals from "../src/Approvals.js"
import { request, waiting } from "./utils/approvals.js"

describe("Approvals", () => {
  it("hashArgs is the SHA-256 of the canonical JSON (key order does not matter)", () => {
    assert.strictEqual(
      Approvals.hashArgs({ b: 1, a: [1, { d: 2, c: 3 }] }),
      Approvals.hashArgs({ a: [1, { c: 3, d: 2 }], b: 1 })
    )
    assert.notStrictEqual(Approvals.hashArgs({ a: 1 }), Approvals.hashArgs({ a: 2 }))
    // sha256('{"a":1}')
    assert.strictEqual(Approvals.hashArgs({ a: 1 }), "015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862")
  })

  it("makeId changes with each of its parts", () => {
    const base = { conversationId: "c", runKey: "r", iteration: 1, toolCallId: "t", argsHash: "h" }
    const id = Approvals.makeId(base)
    assert.match(id, /^apr_[0-9a-f]{32}$/)
    assert.strictEqual(Approvals.makeId({ ...base }), id)
    for (
      const change of [{ conversationId: "d" }, { runKey: "s" }, { iteration: 2 }, { toolCallId: "u" }, {
        argsHash: "i"
      }]
    ) {
      assert.notStrictEqual(Approvals.makeId({ ...base, ...change }), id)
    }
  })

  it.effect("request waits for decide; the decision names the approval and its arguments; pending lists what waits", () =>
    Effect.gen(function*() {
      const service = yield* Approvals.make
      const fiber = yield* waiting(service, request("a"))
      yield* waiting(service, request("b", { conversationId: "c2" }))
      assert.deepStrictEqual((yield* service.pending("c1")).map((p) => p.approvalId), ["a"])
      assert.deepStrictEqual((yield* service.pending()).map((p) => p.approvalId), ["a", "b"])
      const { timeout: _, ...expected } = request("a")
      assert.deepStrictEqual((yield* service.pending("c1"))[0], expected)
      const decided = yield* service.decide({
        conversationId: "c1",
        approvalId: "a",
        decision: "deny",
        reason: "  nope "
      })
      assert.deepStrictEqual(decided, { approval_id: "a", decision: "deny" })
      assert.deepStrictEqual(yield* Fiber.join(fiber), {
        approvalId: "a",
        argsHash: Approvals.hashArgs({ path: "a" }),
        decision: "deny",
        reason: "nope"
      })
      assert.deepStrictEqual((yield* service.pending()).map((p) => p.approvalId), ["b"])
    }))

  it.effect("refusals: unknown id or other conversation (not found), second decision (already decided), other call or arguments (mismatch)", () =>
    Effect.gen(function*() {
      const service = yield* Approvals.make
      const fiber = yield* waiting(service, request("a"))
      const refused = (input: Approvals.DecideInput) => Effect.flip(service.decide(input))
      assert.deepStrictEqual(
        yield* refused({ conversationId: "c1", approvalId: "nope", decision: "approve" }),
        new Approvals.ApprovalNotFound({ conversationId: "c1", approvalId: "nope" })
      )
      assert.strictEqual(
        (yield* refused({ conversationId: "c2", approvalId: "a", decision: "approve" }))._tag,
        "ApprovalNotFound"
      )
      assert.deepStrictEqual(
        yield* refused({ conversationId: "c1", approvalId: "a", decision: "approve", toolCallId: "call_b" }),
        new Approvals.ApprovalMismatch({ approvalId: "a", field: "tool_call_id" })
      )
      assert.deepStrictEqual(
        yield* refused({
          conversationId: "c1",
          approvalId: "a",
          decision: "approve",
          argsHash: Approvals.hashArgs({ path: "b" })
        }),
        new Approvals.ApprovalMismatch({ approvalId: "a", field: "args_hash" })
      )
      // none of that changed anything
      assert.strictEqual((yield* service.pending("c1")).length, 1)
      yield* service.decide({
        conversationId: "c1",
        approvalId: "a",
        decision: "approve",
        toolCallId: "call_a",
        argsHash: Approvals.hashArgs({ path: "a" })
      })
      assert.strictEqual((yield* Fiber.join(fiber)).decision, "approve")
      assert.deepStrictEqual(
        yield* refused({ conversationId: "c1", approvalId: "a", decision: "deny" }),
        new Approvals.AlreadyDecided({ approvalId: "a", status: "approved" })
      )
    }))

  it.effect("a request for an id already decided answers at once with that decision (a replay)", () =>
    Effect.gen(function*() {
      const service = yield* Approvals.make
      const fiber = yield* waiting(service, request("a"))
      yield* service.decide({ conversationId: "c1", approvalId: "a", decision: "approve" })
      const first = yield* Fiber.join(fiber)
      assert.deepStrictEqual(yield* service.request(request("a")), first)
    }))

  it.effect("timeout: denied with reason `timed out`; a decision before it stands", () =>
    Effect.gen(function*() {
      const service = yield* Approvals.make
      const late = yield* waiting(service, request("a", { timeout: "1 minute" }))
      const early = yield* waiting(service, request("b", { timeout: "1 minute" }))
      yield* service.decide({ conversationId: "c1", approvalId: "b", decision: "approve" })
      yield* TestClock.adjust("1 minute")
      assert.deepStrictEqual(yield* Fiber.join(late), {
        approvalId: "a",
        argsHash: Approvals.hashArgs({ path: "a" }),
        decision: "deny",
        reason: Approvals.TIMED_OUT
      })
      assert.strictEqual((yield* Fiber.join(early)).decision, "approve")
      assert.deepStrictEqual(
        yield* Effect.flip(service.decide({ conversationId: "c1", approvalId: "a", decision: "approve" })),
        new Approvals.AlreadyDecided({ approvalId: "a", status: "denied" })
      )
    }))

  it.effect("an interrupted wait closes the approval (`cancelled`)", () =>
    Effect.gen(function*() {
      const service = yield* Approvals.make
      const fiber = yield* waiting(service, request("a"))
      yield* Fiber.interrupt(fiber)
      assert.deepStrictEqual(yield* service.pending(), [])
      assert.deepStrictEqual(
        yield* Effect.flip(service.decide({ conversationId: "c1", approvalId: "a", decision: "approve" })),
        new Approvals.AlreadyDecided({ approvalId: "a", status: "cancelled" })
      )
    }))

  it.effect("finished approvals are remembered up to FINISHED_KEPT, oldest forgotten first; pending ones never", () =>
    Effect.gen(function*() {
      const service = yield* Approvals.make
      const kept = yield* waiting(service, request("pending"))
      for (let i = 0; i <= Approvals.FINISHED_KEPT; i++) {
        const fiber = yield* waiting(service, request(`d${i}`))
        yield* service.decide({ conversationId: "c1", approvalId: `d${i}`, decision: "approve" })
        yield* Fiber.join(fiber)
      }
      assert.strictEqual(
        (yield* Effect.flip(service.decide({ conversationId: "c1", approvalId: "d0", decision: "approve" })))._tag,
        "ApprovalNotFound"
      )
      assert.strictEqual(
        (yield* Effect.flip(service.decide({ conversationId: "c1", approvalId: "d1", decision: "approve" })))._tag,
        "AlreadyDecided"
      )
      yield* service.decide({ conversationId: "c1", approvalId: "pending", decision: "deny" })
      assert.strictEqual((yield* Fiber.join(kept)).decision, "deny")
    }))
})
