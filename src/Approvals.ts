/**
 * Tool approval: a person approves or denies a tool call before it
 * runs. The agent asks with `request` (which waits until the call is decided);
 * whoever answers for the person (the HTTP API, a terminal prompt, your own
 * code through `ReactAgent.approve`) calls `decide`.
 *
 * CONTRACT (the agent and the server rely on exactly this; a durable store
 * implements the same service).
 *
 * - An approval is identified by `approvalId` and bound to the conversation whose
 *   user answers it, the tool call id and the hash of the call's canonical
 *   arguments (`hashArgs`). The agent derives the id from those (`makeId`), so a
 *   run replayed after a crash asks for the same id again.
 * - `request` registers the approval (or joins one already registered under that
 *   id: a replay) and waits for its decision. A decided approval answers at
 *   once with its decision. With a `timeout`, the approval is denied with reason
 *   `timed out` when it passes. Interrupting the wait (the run was cancelled)
 *   closes the approval: a later `decide` is refused with `AlreadyDecided`
 *   (status `cancelled`).
 * - `decide` settles a pending approval once: an unknown id, or one of another
 *   conversation, is `ApprovalNotFound`; a second decision is `AlreadyDecided`; a
 *   `toolCallId` or `argsHash` given with the decision that is not the call's is
 *   `ApprovalMismatch`. A refused decision changes nothing.
 * - The `Decision` a request returns carries the approval id and the arguments
 *   hash it was given for: the agent runs the tool only when both are the ones
 *   of the call it is about to run.
 *
 * The in-memory service (`make`, `layerMemory`) keeps pending approvals until they are
 * decided, and the last `FINISHED_KEPT` finished ones (so that replaying a
 * decision is refused as `AlreadyDecided`, not `ApprovalNotFound`).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import { createHash } from "node:crypto"
import * as Entries from "./internal/approvals/entries.js"
import * as Json from "./Json.js"

/**
 * @since 0.1.0
 * @category models
 */
export const DecisionKind = Schema.Literal("approve", "deny")

/**
 * @since 0.1.0
 * @category models
 */
export type DecisionKind = typeof DecisionKind.Type

/**
 * The answer to an approval request, for the call it names: the agent stores it
 * (a journal activity's result) and runs the tool only when `decision` is
 * `approve` and `approvalId` and `argsHash` are those of the call.
 *
 * @since 0.1.0
 * @category models
 */
export const Decision = Schema.Struct({
  approvalId: Schema.String,
  argsHash: Schema.String,
  decision: DecisionKind,
  reason: Schema.optional(Schema.String)
})

/**
 * @since 0.1.0
 * @category models
 */
export type Decision = typeof Decision.Type

/**
 * What the agent asks a person about: one tool call, with the arguments that
 * would run (after the PreToolUse hooks).
 *
 * @since 0.1.0
 * @category models
 */
export interface PendingApproval {
  readonly approvalId: string
  /** The conversation whose user answers (for a DAG step, the run's conversation). */
  readonly conversationId: string
  /** The provider's tool call id (`json_<iteration>` in JSON mode). */
  readonly toolCallId: string
  readonly toolName: string
  readonly args: Record<string, unknown>
  /** `hashArgs(args)`. */
  readonly argsHash: string
  readonly iteration: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ApprovalRequest extends PendingApproval {
  /** Denied with reason `timed out` when no decision came by then (default: waits as long as it takes). */
  readonly timeout?: Duration.DurationInput
  /**
   * Runs once the request is stored, so that `decide` finds it, and before the wait: where
   * the caller announces it (the agent emits `approval requested` here — a person who answers
   * the moment the event arrives is never told the approval does not exist).
   */
  readonly onStored?: Effect.Effect<void>
}

/**
 * A person's answer, as `decide` takes it.
 *
 * @since 0.1.0
 * @category models
 */
export interface DecideInput {
  readonly conversationId: string
  readonly approvalId: string
  readonly decision: DecisionKind
  readonly reason?: string
  /** When given, must be the approval's tool call id (else `ApprovalMismatch`). */
  readonly toolCallId?: string
  /** When given, must be the hash of the approval's arguments (else `ApprovalMismatch`). */
  readonly argsHash?: string
}

/**
 * What `decide` answers (the HTTP API's response body).
 *
 * @since 0.1.0
 * @category models
 */
export interface Decided {
  readonly approval_id: string
  readonly decision: DecisionKind
}

/**
 * How an approval that no longer waits ended.
 *
 * @since 0.1.0
 * @category models
 */
export type FinishedStatus = "approved" | "denied" | "cancelled"

/**
 * No pending or recent approval with this id in this conversation.
 *
 * @since 0.1.0
 * @category errors
 */
export class ApprovalNotFound extends Schema.TaggedError<ApprovalNotFound>()("ApprovalNotFound", {
  conversationId: Schema.String,
  approvalId: Schema.String
}) {
  override get message(): string {
    return `No approval ${this.approvalId} in conversation ${this.conversationId}`
  }
}

/**
 * The approval was already decided (or its run was cancelled): nothing changed.
 *
 * @since 0.1.0
 * @category errors
 */
export class AlreadyDecided extends Schema.TaggedError<AlreadyDecided>()("AlreadyDecided", {
  approvalId: Schema.String,
  status: Schema.Literal("approved", "denied", "cancelled")
}) {
  override get message(): string {
    return `Approval ${this.approvalId} is already ${this.status}`
  }
}

/**
 * The decision names another tool call or other arguments than the approval's:
 * nothing changed.
 *
 * @since 0.1.0
 * @category errors
 */
export class ApprovalMismatch extends Schema.TaggedError<ApprovalMismatch>()("ApprovalMismatch", {
  approvalId: Schema.String,
  field: Schema.Literal("tool_call_id", "args_hash")
}) {
  override get message(): string {
    return `Approval ${this.approvalId} is for another ${
      this.field === "tool_call_id" ? "tool call" : "set of arguments"
    }`
  }
}

/**
 * @since 0.1.0
 * @category errors
 */
export type DecideError = ApprovalNotFound | AlreadyDecided | ApprovalMismatch

/**
 * @since 0.1.0
 * @category models
 */
export interface ApprovalsService {
  /** Registers the approval (or joins the one with its id) and waits for its decision. */
  readonly request: (request: ApprovalRequest) => Effect.Effect<Decision>
  /** Settles a pending approval (see the module's contract for the refusals). */
  readonly decide: (input: DecideInput) => Effect.Effect<Decided, DecideError>
  /** The approvals waiting for a decision: of one conversation, or of every conversation when absent. */
  readonly pending: (conversationId?: string) => Effect.Effect<ReadonlyArray<PendingApproval>>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Approvals extends Context.Tag("effect-react-engine/Approvals")<Approvals, ApprovalsService>() {}

const sha256 = (text: string): string => createHash("sha256").update(text).digest("hex")

/**
 * The SHA-256 (hex) of the canonical JSON of a call's arguments (`Json.canonical`:
 * key order does not matter).
 *
 * @since 0.1.0
 * @category utils
 */
export const hashArgs = (args: unknown): string => sha256(Json.canonical(args))

/**
 * The approval id of a call: derived from the conversation, a key unique to the
 * run, the iteration, the tool call id and the arguments hash (the same inputs
 * give the same id, e.g. when a durable run is replayed).
 *
 * @since 0.1.0
 * @category utils
 */
export const makeId = (parts: {
  readonly conversationId: string
  readonly runKey: string
  readonly iteration: number
  readonly toolCallId: string
  readonly argsHash: string
}): string =>
  `apr_${
    sha256(
      [parts.conversationId, parts.runKey, String(parts.iteration), parts.toolCallId, parts.argsHash].join("\u0000")
    )
      .slice(0, 32)
  }`

export {
  /**
   * Finished approvals the in-memory service remembers (oldest forgotten first).
   *
   * @since 0.1.0
   * @category constants
   */
  FINISHED_KEPT
} from "./internal/approvals/entries.js"

/**
 * The reason of a decision taken because `timeout` passed.
 *
 * @since 0.1.0
 * @category constants
 */
export const TIMED_OUT = "timed out"

/**
 * Builds an in-memory approvals service (one process).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<ApprovalsService> = Effect.gen(function*() {
  const state = yield* Ref.make<Entries.Entries>(new Map())

  /** Finishes a pending approval with `decision`; false when it was no longer pending. */
  const settle = (id: string, decision: Decision): Effect.Effect<boolean> =>
    Effect.flatten(Ref.modify(state, (entries): readonly [Effect.Effect<boolean>, Entries.Entries] => {
      const entry = entries.get(id)
      if (entry === undefined || entry.status !== "pending") return [Effect.succeed(false), entries]
      return [
        Deferred.succeed(entry.deferred, decision),
        Entries.finish(entries, id, entry, Entries.statusOf(decision.decision))
      ]
    }))

  const close = (id: string): Effect.Effect<void> =>
    Ref.update(state, (entries) => {
      const entry = entries.get(id)
      return entry === undefined || entry.status !== "pending"
        ? entries
        : Entries.finish(entries, id, entry, "cancelled")
    })

  const request = (req: ApprovalRequest): Effect.Effect<Decision> =>
    Effect.gen(function*() {
      const { onStored, timeout, ...pending } = req
      const fresh = yield* Deferred.make<Decision>()
      const entry = yield* Ref.modify(state, (entries) => Entries.open(entries, req.approvalId, pending, fresh))
      if (typeof entry === "string") return yield* Effect.die(new Error(entry))
      if (onStored !== undefined) yield* onStored
      const wait = Deferred.await(entry.deferred)
      const timedOut: Decision = {
        approvalId: req.approvalId,
        argsHash: req.argsHash,
        decision: "deny",
        reason: TIMED_OUT
      }
      const waited = timeout === undefined ? wait : Effect.raceFirst(
        wait,
        // whichever settles first wins: a decision that beat the timer stands
        Effect.sleep(timeout).pipe(Effect.zipRight(settle(req.approvalId, timedOut)), Effect.zipRight(wait))
      )
      return yield* Effect.onInterrupt(waited, () => close(req.approvalId))
    })

  const decide = (input: DecideInput): Effect.Effect<Decided, DecideError> =>
    Effect.flatten(Ref.modify(state, (entries): readonly [Effect.Effect<Decided, DecideError>, Entries.Entries] => {
      const { approvalId } = input
      const entry = entries.get(approvalId)
      if (entry === undefined || entry.conversationId !== input.conversationId) {
        return [Effect.fail(new ApprovalNotFound({ conversationId: input.conversationId, approvalId })), entries]
      }
      if (entry.status !== "pending") {
        return [Effect.fail(new AlreadyDecided({ approvalId, status: entry.status })), entries]
      }
      const call = entry.request
      if (input.toolCallId !== undefined && input.toolCallId !== call.toolCallId) {
        return [Effect.fail(new ApprovalMismatch({ approvalId, field: "tool_call_id" })), entries]
      }
      if (input.argsHash !== undefined && input.argsHash !== call.argsHash) {
        return [Effect.fail(new ApprovalMismatch({ approvalId, field: "args_hash" })), entries]
      }
      const decision: Decision = {
        approvalId,
        argsHash: call.argsHash,
        decision: input.decision,
        ...(input.reason !== undefined && input.reason.trim() !== "" ? { reason: input.reason.trim() } : {})
      }
      return [
        Effect.as(Deferred.succeed(entry.deferred, decision), { approval_id: approvalId, decision: input.decision }),
        Entries.finish(entries, approvalId, entry, Entries.statusOf(input.decision))
      ]
    }))

  const pending = (conversationId?: string): Effect.Effect<ReadonlyArray<PendingApproval>> =>
    Effect.map(Ref.get(state), (entries) => Entries.pendingOf(entries, conversationId))

  return { request, decide, pending }
})

/**
 * In-memory approvals (one process).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<Approvals> = Layer.effect(Approvals, make)
