/**
 * The in-memory approvals service's bookkeeping (`Approvals.make`): its map of
 * approvals as a value, and the pure changes made to it.
 *
 * @internal
 */
import type * as Deferred from "effect/Deferred"
import type { Decision, DecisionKind, FinishedStatus, PendingApproval } from "../../Approvals.js"

/** Finished approvals the in-memory service remembers (oldest forgotten first). */
export const FINISHED_KEPT = 1000

/** A finished entry drops the request (its arguments may be large). */
export type Entry =
  | {
    readonly status: "pending"
    readonly conversationId: string
    readonly request: PendingApproval
    readonly deferred: Deferred.Deferred<Decision>
  }
  | { readonly status: FinishedStatus; readonly conversationId: string; readonly deferred: Deferred.Deferred<Decision> }

/** The approvals by id, in the order they finished (pending ones anywhere). */
export type Entries = ReadonlyMap<string, Entry>

/** The status an approval finishes with. */
export const statusOf = (decision: DecisionKind): FinishedStatus => (decision === "approve" ? "approved" : "denied")

/** The map with `id` finished (moved last: the map's order is the finishing order), oldest finished ones forgotten. */
export const finish = (entries: Entries, id: string, entry: Entry, status: FinishedStatus): Entries => {
  const next = new Map(entries)
  next.delete(id)
  next.set(id, { conversationId: entry.conversationId, deferred: entry.deferred, status })
  let finished = 0
  for (const e of next.values()) if (e.status !== "pending") finished++
  for (const [key, e] of next) {
    if (finished <= FINISHED_KEPT) break
    if (e.status === "pending") continue
    next.delete(key)
    finished--
  }
  return next
}

const sameCall = (a: PendingApproval, b: PendingApproval): boolean =>
  a.conversationId === b.conversationId && a.toolCallId === b.toolCallId && a.argsHash === b.argsHash

/**
 * A request for `approvalId`: the entry it joins (a replay; a decided one
 * answers at once) or the pending one it registers with `fresh` — or, as a
 * string, why the id cannot be used (another call's, another conversation's).
 */
export const open = (
  entries: Entries,
  approvalId: string,
  request: PendingApproval,
  fresh: Deferred.Deferred<Decision>
): readonly [Entry | string, Entries] => {
  const current = entries.get(approvalId)
  if (current !== undefined && current.status !== "cancelled") {
    if (current.status === "pending" && !sameCall(current.request, request)) {
      return [`approval id ${approvalId} is already used by another call`, entries]
    }
    if (current.conversationId !== request.conversationId) {
      return [`approval id ${approvalId} belongs to another conversation`, entries]
    }
    return [current, entries]
  }
  const created: Entry = { conversationId: request.conversationId, request, deferred: fresh, status: "pending" }
  const next = new Map(entries)
  next.set(approvalId, created)
  return [created, next]
}

/** The pending approvals (of one conversation, when given), in the map's order. */
export const pendingOf = (entries: Entries, conversationId: string | undefined): ReadonlyArray<PendingApproval> => {
  const out: Array<PendingApproval> = []
  for (const entry of entries.values()) {
    if (entry.status !== "pending") continue
    if (conversationId === undefined || entry.conversationId === conversationId) out.push(entry.request)
  }
  return out
}
