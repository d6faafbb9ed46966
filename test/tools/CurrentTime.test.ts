import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as TestClock from "effect/TestClock"
import * as BuiltinTools from "../../src/BuiltinTools.js"
import * as Tool from "../../src/Tool.js"
import * as CurrentTime from "../../src/tools/CurrentTime.js"

// 2026-12-02T11:27:05Z, a Wednesday
const INSTANT = Date.UTC(2026, 11, 2, 11, 27, 5)

const at = <A, E, R>(millis: number, effect: Effect.Effect<A, E, R>) =>
  Effect.zipRight(TestClock.setTime(millis), effect)

describe("current_time", () => {
  it.effect("defaults to UTC and reads the Clock", () =>
    Effect.gen(function*() {
      const out = yield* at(INSTANT, Tool.execute(BuiltinTools.currentTime, {}))
      assert.strictEqual(
        out,
        [
          "Time zone: UTC",
          "Local time: 2026-12-02T11:27:05Z",
          "Human-readable: Wednesday, December 2, 2026 at 11:27:05 AM UTC",
          "Weekday: Wednesday",
          "UTC: 2026-12-02T11:27:05.000Z"
        ].join("\n")
      )
    }))

  it.effect("follows the TestClock", () =>
    Effect.gen(function*() {
      yield* TestClock.setTime(INSTANT)
      yield* TestClock.adjust("1 day")
      const out = yield* Tool.execute(BuiltinTools.currentTime, { timezone: "UTC" })
      assert.include(out as string, "Local time: 2026-12-03T11:27:05Z")
      assert.include(out as string, "Weekday: Thursday")
    }))

  it.effect("converts to a zone with its offset (DST-aware), case-insensitively", () =>
    Effect.gen(function*() {
      const tokyo = yield* at(INSTANT, Tool.execute(BuiltinTools.currentTime, { timezone: "asia/tokyo" }))
      assert.include(tokyo as string, "Time zone: Asia/Tokyo")
      assert.include(tokyo as string, "Local time: 2026-12-02T20:27:05+09:00")
      const ny = yield* at(INSTANT, Tool.execute(BuiltinTools.currentTime, { timezone: "America/New_York" }))
      assert.include(ny as string, "Local time: 2026-12-02T06:27:05-05:00")
      const summer = CurrentTime.describeInstant(Date.UTC(2026, 6, 1, 12, 0, 0), "America/New_York")
      assert.strictEqual(summer.iso, "2026-07-01T08:00:00-04:00")
      assert.strictEqual(summer.offsetMinutes, -240)
      const kolkata = CurrentTime.describeInstant(INSTANT, "Asia/Kolkata")
      assert.strictEqual(kolkata.iso, "2026-12-02T16:57:05+05:30")
      // crossing midnight changes the weekday
      const auckland = CurrentTime.describeInstant(INSTANT, "Pacific/Auckland")
      assert.strictEqual(auckland.weekday, "Thursday")
    }))

  it.effect("an unknown zone is a clear ToolError naming an example", () =>
    Effect.gen(function*() {
      const err = yield* Effect.flip(Tool.execute(BuiltinTools.currentTime, { timezone: "Mars/Olympus" }))
      assert.instanceOf(err, Tool.ToolError)
      assert.include(err.message, "Unknown time zone \"Mars/Olympus\"")
      assert.include(err.message, "Europe/Paris")
      const wrongType = yield* Effect.flip(Tool.execute(BuiltinTools.currentTime, { timezone: 42 }))
      assert.include(wrongType.message, "Invalid arguments for current_time")
    }))

  it("resolves aliases", () => {
    assert.strictEqual(CurrentTime.resolveTimeZone("gmt"), "UTC")
    assert.strictEqual(CurrentTime.resolveTimeZone(""), "UTC")
    assert.strictEqual(CurrentTime.resolveTimeZone("europe/paris"), "Europe/Paris")
    assert.isUndefined(CurrentTime.resolveTimeZone("Nowhere/City"))
  })
})
