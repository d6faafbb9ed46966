/**
 * The `Approvals` of the server: every approval is a row of the shared
 * database, so a person can answer from any instance, a wait survives a
 * restart (the run's `approval/…` activity asks again, joins the same row by
 * its deterministic id and gets the decision at once if it was made in the
 * meantime), a timeout counts from the request (its deadline is stored) and a
 * replayed or forged decision is refused. A decision made on the instance that
 * waits wakes the run at once; one made elsewhere is seen within half a second.
 * A run that asked for approval is marked waiting in the run log: the detach
 * grace no longer cancels it.
 *
 * @since 0.1.0
 */
import * as SqlClient from "@effect/sql/SqlClient"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { ApprovalsService, Decision, FinishedStatus, PendingApproval } from "../Approvals.js"
import { AlreadyDecided, ApprovalMismatch, ApprovalNotFound, Approvals, TIMED_OUT } from "../Approvals.js"
import * as RunLog from "./RunLog.js"

interface Row {
  readonly approval_id: string
  readonly conversation_id: string
  readonly tool_call_id: string
  readonly tool_name: string
  readonly args: string
  readonly args_hash: string
  readonly iteration: number | string
  readonly status: string
  readonly reason: string | null
  readonly deadline: number | string | null
}

const POLL = "500 millis"

const toPending = (row: Row): PendingApproval => ({
  approvalId: row.approval_id,
  conversationId: row.conversation_id,
  toolCallId: row.tool_call_id,
  toolName: row.tool_name,
  args: JSON.parse(row.args),
  argsHash: row.args_hash,
  iteration: Number(row.iteration)
})

const decisionOf = (row: Row): Decision | undefined =>
  row.status === "approved" || row.status === "denied"
    ? {
      approvalId: row.approval_id,
      argsHash: row.args_hash,
      decision: row.status === "approved" ? "approve" : "deny",
      ...(row.reason !== null ? { reason: row.reason } : {})
    }
    : undefined

/**
 * The service over the `SqlClient` and the run log in context (the run log's
 * migrations create its table).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<ApprovalsService, never, SqlClient.SqlClient | RunLog.RunLog> = Effect.gen(
  function*() {
    const sql = yield* SqlClient.SqlClient
    yield* RunLog.RunLog // its migrations made the table
    const waiters = new Map<string, Set<Deferred.Deferred<void>>>()
    const wake = (id: string) =>
      Effect.forEach([...(waiters.get(id) ?? [])], (d) => Deferred.succeed(d, undefined), { discard: true })

    const row = (id: string) =>
      Effect.map(
        sql<Row>`SELECT * FROM react_approvals WHERE approval_id = ${id}`,
        (rows) => Option.fromNullable(rows[0])
      )

    /** Finishes a pending approval; false when it was no longer pending (the first writer wins). */
    const settle = (id: string, status: FinishedStatus, reason: string | undefined) =>
      Effect.map(
        sql<{ approval_id: string }>`UPDATE react_approvals SET status = ${status}, reason = ${reason ?? null}
        WHERE approval_id = ${id} AND status = 'pending' RETURNING approval_id`,
        (rows) => rows.length > 0
      )

    const request: ApprovalsService["request"] = (req) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const deadline = req.timeout === undefined ? null : now + Duration.toMillis(Duration.decode(req.timeout))
        yield* sql`INSERT INTO react_approvals (approval_id, conversation_id, tool_call_id, tool_name, args, args_hash, iteration, status, deadline, created_at)
        VALUES (${req.approvalId}, ${req.conversationId}, ${req.toolCallId}, ${req.toolName}, ${
          JSON.stringify(req.args)
        },
          ${req.argsHash}, ${req.iteration}, 'pending', ${deadline}, ${now})
        ON CONFLICT (approval_id) DO NOTHING`
        const first = yield* row(req.approvalId)
        if (Option.isNone(first)) {
          return yield* Effect.dieMessage(`approval ${req.approvalId} was not stored`)
        }
        const stored = first.value
        if (
          stored.conversation_id !== req.conversationId || stored.tool_call_id !== req.toolCallId ||
          stored.args_hash !== req.argsHash
        ) {
          return yield* Effect.dieMessage(`approval id ${req.approvalId} is already used by another call`)
        }
        // a person waits to be asked: the detach grace does not apply to this run any more
        yield* sql`UPDATE react_runs SET waiting = 1
        WHERE run_id IN (SELECT run_id FROM react_active_runs WHERE conversation_id = ${req.conversationId})`
        if (req.onStored !== undefined) yield* req.onStored
        const woken = yield* Deferred.make<void>()
        const set = waiters.get(req.approvalId) ?? new Set()
        waiters.set(req.approvalId, set.add(woken))
        const check: Effect.Effect<Option.Option<Decision>, unknown> = Effect.gen(function*() {
          const current = yield* row(req.approvalId)
          if (Option.isNone(current)) return yield* Effect.dieMessage(`approval ${req.approvalId} disappeared`)
          const decided = decisionOf(current.value)
          if (decided !== undefined) return Option.some(decided)
          const end = current.value.deadline === null ? undefined : Number(current.value.deadline)
          if (end !== undefined && (yield* Clock.currentTimeMillis) >= end) {
            yield* settle(req.approvalId, "denied", TIMED_OUT)
            return Option.flatMap(yield* row(req.approvalId), (r) => Option.fromNullable(decisionOf(r)))
          }
          return Option.none()
        })
        const wait = check.pipe(
          Effect.flatMap((decided) =>
            Option.isSome(decided)
              ? Effect.succeed(decided)
              : Effect.as(Effect.raceFirst(Deferred.await(woken), Effect.sleep(POLL)), Option.none<Decision>())
          ),
          Effect.repeat({ until: Option.isSome }),
          Effect.map(Option.getOrThrow)
        )
        return yield* wait.pipe(
          // a run cancelled while it waits closes the approval; a server shutting down does not (it asks again on restart)
          Effect.onInterrupt(() =>
            sql`UPDATE react_approvals SET status = 'cancelled' WHERE approval_id = ${req.approvalId} AND status = 'pending'
            AND conversation_id IN (SELECT a.conversation_id FROM react_active_runs a JOIN react_runs r ON r.run_id = a.run_id
              WHERE r.cancel_requested = 1)`.pipe(Effect.ignore)
          ),
          Effect.ensuring(Effect.sync(() => {
            set.delete(woken)
            if (set.size === 0) waiters.delete(req.approvalId)
          }))
        )
      }).pipe(Effect.orDie)

    const decide: ApprovalsService["decide"] = (input) =>
      Effect.gen(function*() {
        const { approvalId } = input
        const found = yield* Effect.orDie(row(approvalId))
        if (Option.isNone(found) || found.value.conversation_id !== input.conversationId) {
          return yield* Effect.fail(new ApprovalNotFound({ conversationId: input.conversationId, approvalId }))
        }
        const call = found.value
        if (call.status !== "pending") {
          return yield* Effect.fail(new AlreadyDecided({ approvalId, status: call.status as FinishedStatus }))
        }
        if (input.toolCallId !== undefined && input.toolCallId !== call.tool_call_id) {
          return yield* Effect.fail(new ApprovalMismatch({ approvalId, field: "tool_call_id" }))
        }
        if (input.argsHash !== undefined && input.argsHash !== call.args_hash) {
          return yield* Effect.fail(new ApprovalMismatch({ approvalId, field: "args_hash" }))
        }
        const status: FinishedStatus = input.decision === "approve" ? "approved" : "denied"
        const reason = input.reason !== undefined && input.reason.trim() !== "" ? input.reason.trim() : undefined
        if (!(yield* Effect.orDie(settle(approvalId, status, reason)))) {
          // decided (or timed out) by someone else in between
          const now = yield* Effect.orDie(row(approvalId))
          const current = Option.isSome(now) ? now.value.status as FinishedStatus : status
          return yield* Effect.fail(new AlreadyDecided({ approvalId, status: current }))
        }
        yield* wake(approvalId)
        return { approval_id: approvalId, decision: input.decision }
      })

    const pending: ApprovalsService["pending"] = (conversationId) =>
      (conversationId === undefined
        ? sql<Row>`SELECT * FROM react_approvals WHERE status = 'pending' ORDER BY created_at`
        : sql<
          Row
        >`SELECT * FROM react_approvals WHERE status = 'pending' AND conversation_id = ${conversationId} ORDER BY created_at`)
        .pipe(Effect.map((rows) => rows.map(toPending)), Effect.orDie)

    return { request, decide, pending }
  }
)

/**
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Approvals, never, SqlClient.SqlClient | RunLog.RunLog> = Layer.effect(Approvals, make)
