/**
 * The call a tool handler runs for: its context on the fiber, and what a
 * handler reports through it (re-exported by Tool.ts).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import * as Option from "effect/Option"
import type { RunEvent } from "../../RunEvent.js"

/**
 * The call a tool handler is running for, as the agent's loop sets it around the
 * handler (`currentCall`).
 *
 * @since 0.1.0
 * @category models
 */
export interface CallContext {
  readonly toolName: string
  /** The provider's call id (native mode); absent in JSON mode. */
  readonly toolCallId?: string
  readonly iteration: number
  /**
   * The call's idempotency key: the same for every attempt of this call (a
   * durable run replayed after a crash, restarted, or taken over by another
   * instance runs an idempotent call again with the same key) and different
   * for every other call. Pass it to a backend that deduplicates (a payments
   * API's `Idempotency-Key`, an `INSERT … ON CONFLICT`) to make the call's
   * effect happen once. The `iteration start` event carries it too
   * (`idempotency_key`). Absent only under a `RunJournal` that gives no keys.
   */
  readonly idempotencyKey?: string
  /** The conversation of the run that made the call. */
  readonly conversationId: string
  /** The conversation whose user answers the run's approvals (its own, or the run's parent's). */
  readonly approverConversationId?: string
  /**
   * Forwards an event into the run that made the call (an agent used as a tool
   * surfaces its sub-run's approval requests there, for the run's user).
   */
  readonly emit?: (event: RunEvent) => Effect.Effect<void>
}

/**
 * The call being handled: set by the agent's loop while a handler runs (and
 * inherited by the fibers it forks), `None` outside a run.
 *
 * @since 0.1.0
 * @category context
 */
export const currentCall: FiberRef.FiberRef<Option.Option<CallContext>> = globalValue(
  Symbol.for("effect-react-engine/Tool/currentCall"),
  // a module-level FiberRef, made once as Effect's own are (globalValue keeps one per process)
  () => FiberRef.unsafeMake<Option.Option<CallContext>>(Option.none())
)

/**
 * Runs `effect` as the handling of `call` (see `currentCall`).
 *
 * @since 0.1.0
 * @category context
 */
export const withCall = (call: CallContext) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.locally(effect, currentCall, Option.some(call))

/**
 * Reports how far the current call is: a `ToolProgress` event (`step` channel,
 * status `progress`) with `message` and, when known, `fraction` (clamped to
 * 0–1). Use it in a handler; a no-op outside a run. Ephemeral (live only, at
 * most 10 per second per call: more frequent reports are dropped, a report of
 * 1 always passes).
 *
 * @since 0.1.0
 * @category utils
 */
export const progress = (message: string, fraction?: number): Effect.Effect<void> =>
  Effect.flatMap(FiberRef.get(currentCall), (call) => {
    if (Option.isNone(call) || call.value.emit === undefined) return Effect.void
    const { emit, iteration, toolCallId, toolName } = call.value
    const id = toolCallId !== undefined ? { tool_call_id: toolCallId } : {}
    const known = fraction !== undefined && Number.isFinite(fraction)
      ? { progress: Math.min(1, Math.max(0, fraction)) }
      : {}
    return emit({ _tag: "ToolProgress", iteration, tool_name: toolName, message, ...id, ...known })
  })
