/**
 * Tool execution under a timeout that costs nothing for tools that finish
 * synchronously, and one fiber (the tool's own) for tools that suspend.
 *
 * `Effect.timeoutFail` races the effect against a sleep on two forked fibers: about
 * 170 µs per call here, more than the rest of a loop iteration. Instead the tool
 * starts at once on its own fiber (same context and fiber refs, `Runtime.runFork`
 * runs it synchronously until it first suspends); when it has already finished —
 * the common case for pure tools — its exit is used directly. A tool that suspends
 * is awaited with one `Effect.async` watching its fiber and one timer (a plain
 * `setTimeout` with the live clock; `Effect.timeoutFail` when a test clock is
 * installed, so `TestClock` keeps working). Either way the tool fiber is interrupted
 * (and awaited) when the caller is interrupted or the timeout fires.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Runtime from "effect/Runtime"

/** The constructor of the live clock: any other clock (a `TestClock`) takes the Effect path. */
const LiveClock = (Clock.make() as object).constructor
const MAX_TIMER_MILLIS = 2 ** 31 - 1

/** True when an effect is an already successful `Exit` (`Effect.succeed(…)`): its value can be read without running it. */
export const isDone = <A, E, R>(effect: Effect.Effect<A, E, R>): effect is Exit.Success<A, E> =>
  Exit.isExit(effect) && effect._tag === "Success"

/** `Effect.flatMap` that applies `f` at once when the effect is an already successful `Exit`. */
export const chain = <A, E, B, E2>(
  effect: Effect.Effect<A, E>,
  f: (a: A) => Effect.Effect<B, E2>
): Effect.Effect<B, E | E2> => isDone(effect) ? f(effect.value) : Effect.flatMap(effect, f)

/** Awaits a started fiber; fails with `onTimeout()` after `duration` (and interrupts the fiber). */
const awaitFiber = <A, E, E2>(
  fiber: Fiber.RuntimeFiber<A, E>,
  duration: Duration.Duration,
  onTimeout: () => E2
): Effect.Effect<Exit.Exit<A, E>, E2> =>
  Effect.clockWith((clock) => {
    const millis = Duration.toMillis(duration)
    const live = (clock as object).constructor === LiveClock
    const waited: Effect.Effect<Exit.Exit<A, E>, E2> = !live
      ? Effect.timeoutFail(Fiber.await(fiber), { duration, onTimeout })
      : Effect.async<Exit.Exit<A, E>, E2>((resume) => {
        let timer: ReturnType<typeof setTimeout> | undefined
        const observer = (exit: Exit.Exit<A, E>) => {
          if (timer !== undefined) clearTimeout(timer)
          resume(Effect.succeed(exit))
        }
        fiber.addObserver(observer)
        if (millis <= MAX_TIMER_MILLIS) {
          timer = setTimeout(() => {
            fiber.removeObserver(observer)
            resume(Effect.fail(onTimeout()))
          }, millis)
        }
        return Effect.sync(() => {
          if (timer !== undefined) clearTimeout(timer)
          fiber.removeObserver(observer)
        })
      })
    return Effect.onExit(waited, (exit) => (exit._tag === "Success" ? Effect.void : Fiber.interrupt(fiber)))
  })

/**
 * Runs `self` on its own fiber under the timeout and maps its exit with `handle`
 * (which must not throw for the fast path to be exact; it is called with the tool's
 * exit, never with the timeout). The timeout's error goes through `onError`.
 * Returns an already successful `Exit` when the tool finished synchronously.
 */
export const runTimed = <A, E, E2, B>(
  runtime: Runtime.Runtime<never>,
  self: Effect.Effect<A, E>,
  duration: Duration.DurationInput,
  onTimeout: () => E2,
  handle: (exit: Exit.Exit<A, E>) => Effect.Effect<B>,
  onError: (e: E2) => Effect.Effect<B>
): Effect.Effect<B> => {
  const fiber = Runtime.runFork(runtime)(self)
  const done = fiber.unsafePoll()
  if (done !== null) return handle(done)
  return Effect.matchEffect(awaitFiber(fiber, Duration.decode(duration), onTimeout), { onFailure: onError, onSuccess: handle })
}

/** True when a cause is an interruption only (the tool's fiber interrupted itself). */
export const interruptedOnly = (cause: Cause.Cause<unknown>): boolean => Cause.isInterruptedOnly(cause)
