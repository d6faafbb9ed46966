/**
 * A tool timeout that costs nothing for tools that finish synchronously.
 *
 * `Effect.timeoutFail` races the effect against a sleep on two forked fibers: about
 * 170 µs per call here, more than the rest of a loop iteration. Instead the tool
 * runs at once on its own fiber (same context and fiber refs); when it has already
 * finished — the common case for pure tools — its exit is used directly. Only a
 * tool that suspends is awaited under `Effect.timeoutFail`. Either way the tool
 * fiber is interrupted (and awaited) when the caller is interrupted or the
 * timeout fires.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Runtime from "effect/Runtime"

export const timeoutFail = <A, E, E2>(
  self: Effect.Effect<A, E>,
  duration: Duration.DurationInput,
  onTimeout: () => E2,
  /** The tool's fiber interrupted itself (not the caller): a failure, not an interruption of the run. */
  onSelfInterrupt: () => E2
): Effect.Effect<A, E | E2> =>
  Effect.flatMap(Effect.runtime<never>(), (runtime) => {
    const fiber = Runtime.runFork(runtime)(self)
    const handle = (exit: Exit.Exit<A, E>): Effect.Effect<A, E | E2> =>
      exit._tag === "Failure" && Cause.isInterruptedOnly(exit.cause) ? Effect.fail(onSelfInterrupt()) : exit
    const done = fiber.unsafePoll()
    if (done !== null) return handle(done)
    return Fiber.await(fiber).pipe(
      Effect.timeoutFail({ duration, onTimeout }),
      Effect.onExit((exit) => (exit._tag === "Success" ? Effect.void : Fiber.interrupt(fiber))),
      Effect.flatMap(handle)
    )
  })
