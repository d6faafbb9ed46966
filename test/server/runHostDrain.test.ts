/**
 * The shutdown grace of a process's run host (`internal/runHost.ts`, `drain`): tool calls in
 * flight are waited for, at most the grace, also from a finalizer (uninterruptible, where a
 * plain timeout could not stop the wait); once the host is stopping no call begins.
 * test/durable/shutdownGrace.test.ts checks the same end to end on a real server process.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as TestClock from "effect/TestClock"
import * as RunHost from "../../src/server/internal/runHost.js"

describe("run host: the shutdown grace", () => {
  it.scoped("waits for the calls in flight and returns when the last one ends; no call begins once stopping", () =>
    Effect.gen(function*() {
      const host = yield* RunHost.make("boot")
      assert.isTrue(yield* host.beginCall)
      assert.isTrue(yield* host.beginCall)
      assert.isFalse(yield* host.stopping)
      const drain = yield* Effect.fork(Effect.uninterruptible(host.drain(5000)))
      yield* TestClock.adjust(10)
      assert.isTrue(yield* host.stopping)
      assert.isFalse(yield* host.beginCall, "no call begins once the host is stopping")
      yield* host.endCall
      yield* TestClock.adjust(1000)
      assert.isTrue((yield* Fiber.poll(drain))._tag === "None", "one call is still in flight")
      yield* host.endCall
      const drained = yield* Fiber.join(drain)
      assert.strictEqual(drained.inFlight, 2)
      assert.strictEqual(drained.left, 0)
    }))

  it.scoped("gives up after the grace, from an uninterruptible region (a finalizer), with the calls still running counted", () =>
    Effect.gen(function*() {
      const host = yield* RunHost.make("boot")
      assert.isTrue(yield* host.beginCall)
      const drain = yield* Effect.fork(Effect.uninterruptible(host.drain(1500)))
      yield* TestClock.adjust(1499)
      assert.isTrue((yield* Fiber.poll(drain))._tag === "None", "still waiting within the grace")
      yield* TestClock.adjust(1)
      const drained = yield* Fiber.join(drain)
      assert.strictEqual(drained.inFlight, 1)
      assert.strictEqual(drained.left, 1)
    }))

  it.scoped("returns at once when nothing is in flight", () =>
    Effect.gen(function*() {
      const host = yield* RunHost.make("boot")
      const drained = yield* Effect.uninterruptible(host.drain(60_000))
      assert.deepStrictEqual({ inFlight: drained.inFlight, left: drained.left }, { inFlight: 0, left: 0 })
      assert.isFalse(yield* host.beginCall)
    }))
})
