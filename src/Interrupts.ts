/**
 * Per-conversation queues of user messages injected while a run is active (SPEC §8).
 *
 * CONTRACT (the loop and the server call these).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"

/** @since 0.1.0 @category models */
export interface Injection {
  readonly id: string
  readonly content: string
}

/** @since 0.1.0 @category errors */
export class NoActiveRun extends Schema.TaggedError<NoActiveRun>()("NoActiveRun", {
  conversationId: Schema.String
}) {
  override get message(): string {
    return `No active run for conversation ${this.conversationId}`
  }
}

/** @since 0.1.0 @category models */
export interface InterruptsService {
  /** Opens the queue of a conversation for the duration of a run. */
  readonly register: (conversationId: string) => Effect.Effect<void>
  /** Queues a message; fails with `NoActiveRun` when no run is registered. */
  readonly inject: (conversationId: string, content: string) => Effect.Effect<Injection, NoActiveRun>
  /** Removes a not-yet-drained message; true when it was still queued. */
  readonly recall: (conversationId: string, id: string) => Effect.Effect<boolean>
  /** Takes everything queued, in order (empty when nothing or not registered). */
  readonly drain: (conversationId: string) => Effect.Effect<ReadonlyArray<Injection>>
  /** Closes the queue; returns what was still queued. */
  readonly unregister: (conversationId: string) => Effect.Effect<ReadonlyArray<Injection>>
  readonly isActive: (conversationId: string) => Effect.Effect<boolean>
}

/** @since 0.1.0 @category Context */
export class Interrupts extends Context.Tag("react-engine/Interrupts")<Interrupts, InterruptsService>() {}
