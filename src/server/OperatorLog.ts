/**
 * What the server's operator reads: `@effect/cluster`'s retry warnings folded,
 * and how many stored runs a start resumes.
 *
 * A restart with runs to resume makes the workflow engine retry the messages of
 * entities it has not assigned yet ("Could not find entity manager for address,
 * retrying"), each a multi-line warning with the entity's address: expected
 * while the runner starts, noise to the operator. `logger` folds such a streak
 * into one debug line; only when it persists (`persistMs`, default 10 s) is it
 * a warning again, once per `persistMs`, with the count.
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as HashMap from "effect/HashMap"
import * as HashSet from "effect/HashSet"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as RunLog from "./RunLog.js"

/** The messages of transient retries, folded (their text as `@effect/cluster` logs it). */
const transient = ["Could not find entity manager for address, retrying"]

const textOf = (message: unknown): string => Array.isArray(message) ? message.map(String).join(" ") : String(message)

/**
 * `inner` with the cluster's transient retry warnings folded: the first of a
 * streak as one debug line, the rest dropped while the streak lasts less than
 * `persistMs`; past that, one warning per `persistMs` with the count. A streak
 * ends after `quietMs` (default 5 s) without one.
 *
 * @since 0.1.0
 * @category constructors
 */
export const logger = (
  inner: Logger.Logger<unknown, void>,
  options?: { readonly persistMs?: number; readonly quietMs?: number }
): Logger.Logger<unknown, void> => {
  const persistMs = options?.persistMs ?? 10_000
  const quietMs = options?.quietMs ?? 5_000
  const streaks = new Map<string, { start: number; last: number; warned: number; count: number }>()
  return Logger.make((entry) => {
    const text = textOf(entry.message)
    const folded = transient.find((t) => text.startsWith(t))
    if (folded === undefined) return inner.log(entry)
    const now = entry.date.getTime()
    const previous = streaks.get(folded)
    const streak = previous === undefined || now - previous.last > quietMs
      ? { start: now, last: now, warned: now, count: 1 }
      : { ...previous, last: now, count: previous.count + 1 }
    streaks.set(folded, streak)
    const plain = { ...entry, annotations: HashMap.empty<string, unknown>() }
    if (streak.count === 1) {
      return inner.log({ ...plain, logLevel: LogLevel.Debug, message: `${folded} (folded while the runner starts)` })
    }
    if (now - streak.start < persistMs || now - streak.warned < persistMs) return
    streaks.set(folded, { ...streak, warned: now })
    inner.log({ ...plain, message: `${folded}: ${streak.count} times in ${Math.round((now - streak.start) / 1000)} s` })
  })
}

/**
 * The process's logger with the cluster's retry warnings folded (`logger`):
 * the pretty logger `NodeRuntime.runMain` installs, or the default one.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<never> = Layer.unwrapEffect(
  Effect.map(FiberRef.get(FiberRef.currentLoggers), (loggers) => {
    const base = HashSet.has(loggers, Logger.prettyLoggerDefault) ? Logger.prettyLoggerDefault : Logger.defaultLogger
    return Logger.replace(base, logger(base))
  })
)

/**
 * One line at start-up saying how many stored runs are resumed ("resuming 3
 * runs"); nothing when there are none.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerResuming: Layer.Layer<never, never, RunLog.RunLog> = Layer.effectDiscard(
  Effect.gen(function*() {
    const log = yield* RunLog.RunLog
    const running = yield* Effect.orElseSucceed(log.running, () => [])
    if (running.length === 0) return
    const now = yield* Clock.currentTimeMillis
    const oldest = Math.min(...running.map((run) => run.startedAt))
    yield* Effect.logInfo(
      `resuming ${running.length} run${running.length === 1 ? "" : "s"} stored as running ` +
        `(the oldest started ${Math.max(0, Math.round((now - oldest) / 1000))} s ago)`
    )
  })
)
