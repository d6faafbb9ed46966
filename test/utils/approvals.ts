/**
 * What the Approvals tests share: a request for a `write` call in conversation
 * `c1`, and a request forked and awaited until it is registered.
 */
import * as Effect from "effect/Effect"
import * as Approvals from "../../src/Approvals.js"

/** A request for `write {path: approvalId}` in conversation `c1`. */
export const request = (
  approvalId: string,
  overrides: Partial<Approvals.ApprovalRequest> = {}
): Approvals.ApprovalRequest => ({
  approvalId,
  conversationId: "c1",
  toolCallId: `call_${approvalId}`,
  toolName: "write",
  args: { path: approvalId },
  argsHash: Approvals.hashArgs({ path: approvalId }),
  iteration: 1,
  ...overrides
})

/** Forks a request and waits until it is registered. */
export const waiting = (service: Approvals.ApprovalsService, req: Approvals.ApprovalRequest) =>
  Effect.gen(function*() {
    const fiber = yield* Effect.fork(service.request(req))
    while ((yield* service.pending()).every((p) => p.approvalId !== req.approvalId)) yield* Effect.yieldNow()
    return fiber
  })
