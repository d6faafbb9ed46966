/**
 * The operator's log: the cluster's transient retry warnings folded into one
 * debug line unless they persist; every other entry untouched.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as TestClock from "effect/TestClock"
import * as OperatorLog from "../../src/server/OperatorLog.js"

const retry = "Could not find entity manager for address, retrying"

const collect = () => {
  const lines: Array<{ level: string; message: string }> = []
  const inner = Logger.make<unknown, void>(({ logLevel, message }) => {
    lines.push({ level: logLevel.label, message: Array.isArray(message) ? message.join(" ") : String(message) })
  })
  return { lines, logger: OperatorLog.logger(inner, { persistMs: 10_000, quietMs: 5_000 }) }
}

describe("OperatorLog.logger", () => {
  it.effect("a streak of retries is one debug line; a persisting one a warning per period with the count", () =>
    Effect.gen(function*() {
      const { lines, logger } = collect()
      const warn = Effect.logWarning(retry).pipe(Effect.annotateLogs({ address: { shardId: 1, entityId: "run-1" } }))
      yield* Effect.gen(function*() {
        for (let i = 0; i < 5; i++) {
          yield* warn
          yield* TestClock.adjust("1 second")
        }
        yield* Effect.logInfo("an unrelated line")
        // still retrying 12 s after the first: it persists
        for (let i = 0; i < 8; i++) {
          yield* warn
          yield* TestClock.adjust("1 second")
        }
      }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)), Logger.withMinimumLogLevel(LogLevel.All))
      assert.deepStrictEqual(lines, [
        { level: "DEBUG", message: `${retry} (folded while the runner starts)` },
        { level: "INFO", message: "an unrelated line" },
        { level: "WARN", message: `${retry}: 11 times in 10 s` }
      ])
    }))

  it.effect("a new streak after a quiet spell starts folded again", () =>
    Effect.gen(function*() {
      const { lines, logger } = collect()
      yield* Effect.gen(function*() {
        yield* Effect.logWarning(retry)
        yield* TestClock.adjust("6 seconds")
        yield* Effect.logWarning(retry)
      }).pipe(Effect.provide(Logger.replace(Logger.defaultLogger, logger)), Logger.withMinimumLogLevel(LogLevel.All))
      assert.deepStrictEqual(lines.map((l) => l.level), ["DEBUG", "DEBUG"])
    }))
})
