/**
 * Per-conversation queues of user messages injected while a run is active.
 *
 * CONTRACT (the loop and the server call these).
 *
 * The in-memory layer keeps one queue per registered conversation in a single
 * `Ref` (updates are atomic). Ids are unique per layer instance (`inj_1`, `inj_2`, …).
 * A message can be recalled until the loop drains it; injecting into a conversation
 * without an active run fails with `NoActiveRun` (never a silent drop).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"

/**
 * @since 0.1.0
 * @category models
 */
export interface Injection {
  readonly id: string
  readonly content: string
}

/**
 * @since 0.1.0
 * @category errors
 */
export class NoActiveRun extends Schema.TaggedError<NoActiveRun>()("NoActiveRun", {
  conversationId: Schema.String
}) {
  override get message(): string {
    return `No active run for conversation ${this.conversationId}`
  }
}

/**
 * @since 0.1.0
 * @category models
 */
export interface InterruptsService {
  /** Opens the queue of a conversation for the duration of a run. */
  readonly register: (conversationId: string) => Effect.Effect<void>
  /** Queues a message; fails with `NoActiveRun` when no run is registered. */
  readonly inject: (conversationId: string, content: string) => Effect.Effect<Injection, NoActiveRun>
  /** Removes a not-yet-drained message; true when it was still queued. */
  readonly recall: (conversationId: string, id: string) => Effect.Effect<boolean>
  /**
   * Takes everything queued, in order (empty when nothing or not registered).
   * With a `key` (a durable run's step: the same for every attempt of the
   * step), a drain also returns again what an earlier drain with the same key
   * took, so a step re-run after a crash gets the messages its first attempt
   * already marked drained. The in-memory queues (one process, nothing re-run)
   * ignore it.
   */
  readonly drain: (conversationId: string, options?: DrainOptions) => Effect.Effect<ReadonlyArray<Injection>>
  /** Closes the queue; returns what was still queued. */
  readonly unregister: (conversationId: string) => Effect.Effect<ReadonlyArray<Injection>>
  readonly isActive: (conversationId: string) => Effect.Effect<boolean>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface DrainOptions {
  /** The drain's idempotency key (see `InterruptsService.drain`). */
  readonly key?: string | undefined
}

type Queues = ReadonlyMap<string, ReadonlyArray<Injection>>

const none: ReadonlyArray<Injection> = []

const withQueue = (queues: Queues, id: string, queue: ReadonlyArray<Injection>): Queues => {
  const next = new Map(queues)
  next.set(id, queue)
  return next
}

/**
 * Builds an in-memory interrupts service. Registering an already registered
 * conversation keeps its queue.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<InterruptsService> = Effect.gen(function*() {
  const state = yield* Ref.make<Queues>(new Map())
  const counter = yield* Ref.make(0)
  return {
    register: (conversationId) =>
      Ref.update(state, (queues) => (queues.has(conversationId) ? queues : withQueue(queues, conversationId, none))),
    inject: (conversationId, content) =>
      Effect.flatMap(Ref.updateAndGet(counter, (n) => n + 1), (n) => {
        const injection: Injection = { id: `inj_${n}`, content }
        return Effect.flatten(Ref.modify(state, (queues): readonly [Effect.Effect<Injection, NoActiveRun>, Queues] => {
          const queue = queues.get(conversationId)
          if (queue === undefined) return [Effect.fail(new NoActiveRun({ conversationId })), queues] as const
          return [Effect.succeed(injection), withQueue(queues, conversationId, [...queue, injection])] as const
        }))
      }),
    recall: (conversationId, id) =>
      Ref.modify(state, (queues) => {
        const queue = queues.get(conversationId)
        if (queue === undefined || !queue.some((i) => i.id === id)) return [false, queues] as const
        return [true, withQueue(queues, conversationId, queue.filter((i) => i.id !== id))] as const
      }),
    drain: (conversationId) =>
      Ref.modify(state, (queues) => {
        const queue = queues.get(conversationId)
        if (queue === undefined || queue.length === 0) return [none, queues] as const
        return [queue, withQueue(queues, conversationId, none)] as const
      }),
    unregister: (conversationId) =>
      Ref.modify(state, (queues) => {
        const queue = queues.get(conversationId)
        if (queue === undefined) return [none, queues] as const
        const next = new Map(queues)
        next.delete(conversationId)
        return [queue, next] as const
      }),
    isActive: (conversationId) => Effect.map(Ref.get(state), (queues) => queues.has(conversationId))
  }
})

/**
 * @since 0.1.0
 * @category Context
 */
export class Interrupts extends Context.Tag("effect-react-engine/Interrupts")<Interrupts, InterruptsService>() {}

/**
 * In-memory queues (one process).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory: Layer.Layer<Interrupts> = Layer.effect(Interrupts, make)
