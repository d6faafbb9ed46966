/**
 * The server's fiber scheduler: Effect's own (tasks run as microtasks), except
 * that it gives the event loop a turn at least every `sliceMs` of work, and
 * one runner serves every fiber. Effect's default scheduler yields to a timer only after
 * 2,048 microtask rounds of a fiber's runner; a server whose runs keep the CPU
 * busy (a zero-latency model, many runs at once: their steps are synchronous
 * SQLite and JavaScript) then reads new connections, requests and socket
 * writes seconds late, and a client whose run was acknowledged at once got
 * its first frame only when the runs ahead let the loop turn. With a slice,
 * the runner that finds the slice used up continues after the event loop's
 * poll phase (`setImmediate`: accepted connections, read requests, flushed
 * responses first; no 1 ms timer floor). docs/benchmarks.md ("A burst of
 * users") has the measurements.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Scheduler from "effect/Scheduler"

/**
 * The default slice, in milliseconds.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_SLICE_MS = 5

/** Effect's default: a runner yields to the event loop after this many microtask rounds. */
const MAX_ROUNDS = 2048

/**
 * A scheduler that lets the event loop turn at least every `sliceMs` of work
 * (and, as Effect's default, after 2,048 rounds of a fiber's runner).
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: { readonly sliceMs: number }): Scheduler.Scheduler => {
  // when the event loop last had its turn
  let turn = performance.now()
  // one runner for every fiber (Effect's default has one per fiber): the slice is the process's,
  // not each fiber's — with a runner per fiber, every runner resumed after the loop's turn would
  // take a slice of its own before the loop turns again
  const runner = new Scheduler.SchedulerRunner((rounds, drain) => {
    if (rounds >= MAX_ROUNDS || performance.now() - turn >= options.sliceMs) {
      setImmediate(() => {
        turn = performance.now()
        drain(0)
      })
    } else {
      queueMicrotask(() => drain(rounds + 1))
    }
  })
  return {
    shouldYield: (fiber) => Scheduler.defaultScheduler.shouldYield(fiber),
    scheduleTask: (task, priority) => runner.scheduleTask(task, priority)
  }
}

/**
 * Runs what is built after it (the server, its runs) on `make({ sliceMs })`;
 * `sliceMs` 0 keeps Effect's default scheduler.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (sliceMs: number = DEFAULT_SLICE_MS): Layer.Layer<never> =>
  sliceMs > 0 ? Layer.setScheduler(make({ sliceMs })) : Layer.empty

/**
 * `layer` with the slice from `REACT_SCHEDULER_SLICE_MS` (default 5; 0: Effect's default scheduler).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerConfig: Layer.Layer<never, ConfigError.ConfigError> = Layer.unwrapEffect(
  Effect.map(
    Config.integer("REACT_SCHEDULER_SLICE_MS").pipe(
      Config.withDefault(DEFAULT_SLICE_MS),
      Config.validate({ message: "REACT_SCHEDULER_SLICE_MS must be 0 or more", validation: (n) => n >= 0 })
    ),
    layer
  )
)
