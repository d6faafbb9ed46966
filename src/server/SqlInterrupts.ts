/**
 * The `Interrupts` of the server: the user messages injected into a run are
 * rows of the run log, so a message can be injected and recalled through any
 * instance, drained by the run wherever it executes, and survives a restart.
 * The conversation's active run (`RunLog.start` / `finish`) is what `register`
 * and `unregister` mean in memory.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { InterruptsService } from "../Interrupts.js"
import { NoActiveRun } from "../Interrupts.js"
import * as Interrupts from "../Interrupts.js"
import * as RunLog from "./RunLog.js"

/**
 * The service over a run log (a database failure is a defect of the calling run).
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe = (log: RunLog.RunLogService): InterruptsService => ({
  // the run log's active-run row is the registration
  register: () => Effect.void,
  inject: (conversationId, content) =>
    Effect.flatMap(
      Effect.orDie(log.inject(conversationId, content)),
      Option.match({
        onNone: () => Effect.fail(new NoActiveRun({ conversationId })),
        onSome: Effect.succeed
      })
    ),
  recall: (conversationId, id) => Effect.orDie(log.recall(conversationId, id)),
  drain: (conversationId, options) => Effect.orDie(log.drain(conversationId, options?.key)),
  // what is still queued when the run ends is reported in its `done`
  unregister: (conversationId) => Effect.orDie(log.drain(conversationId)),
  isActive: (conversationId) => Effect.map(Effect.orDie(log.active(conversationId)), Option.isSome)
})

/**
 * The service over the `RunLog` in context.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make: Effect.Effect<InterruptsService, never, RunLog.RunLog> = Effect.map(RunLog.RunLog, makeUnsafe)

/**
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<Interrupts.Interrupts, never, RunLog.RunLog> = Layer.effect(Interrupts.Interrupts, make)
