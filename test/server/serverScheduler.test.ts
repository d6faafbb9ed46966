/**
 * The server's scheduler (`ServerScheduler`) gives the event loop a turn every
 * slice of work, however many fibers keep the CPU busy: an I/O callback (here a
 * `setImmediate`, which runs right after the poll phase that reads sockets)
 * waits for one slice, not for 2,048 microtask rounds of every fiber's runner
 * as under Effect's default scheduler. Counted in rounds of work done before
 * the callback ran, not timed; and every fiber still runs to its end.
 */
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Layer from "effect/Layer"
import * as Scheduler from "effect/Scheduler"
import * as ServerScheduler from "../../src/server/ServerScheduler.js"

const FIBERS = 4
const ROUNDS = 3_000

/** A little CPU work (a few µs). */
const work = () => {
  let x = 0
  for (let i = 0; i < 2_000; i++) x += Math.sqrt(i)
  return x
}

/** Runs busy fibers under `scheduler`; how many rounds were done when a `setImmediate` queued at the start ran. */
const roundsBeforeTheLoopTurns = (scheduler: Scheduler.Scheduler) =>
  Effect.gen(function*() {
    let rounds = 0
    let seen: number | undefined
    setImmediate(() => {
      seen = rounds
    })
    const busy = Effect.gen(function*() {
      for (let i = 0; i < ROUNDS; i++) {
        work()
        rounds++
        yield* Effect.yieldNow()
      }
    })
    yield* Effect.all(Array.from({ length: FIBERS }, () => busy), { concurrency: "unbounded", discard: true }).pipe(
      Effect.withScheduler(scheduler)
    )
    // let the callback run if it has not yet
    yield* Effect.promise(() => new Promise<void>((resolve) => setImmediate(resolve)))
    return { seen: seen ?? Number.NaN, rounds }
  })

describe("ServerScheduler", () => {
  it.live("the event loop turns after a slice of work, not after 2,048 rounds of each fiber", () =>
    Effect.gen(function*() {
      const sliced = yield* roundsBeforeTheLoopTurns(ServerScheduler.make({ sliceMs: 2 }))
      assert.strictEqual(sliced.rounds, FIBERS * ROUNDS, "every fiber ran to its end")
      assert.isBelow(sliced.seen, 500, `the loop turned after ${sliced.seen} rounds`)
      // what the slice changes: under Effect's default scheduler the loop waits for every runner's 2,048 rounds
      const standard = yield* roundsBeforeTheLoopTurns(Scheduler.defaultScheduler)
      assert.isAtLeast(standard.seen, 2_048)
    }))

  it.live("layer(0) keeps Effect's default scheduler; layer(n) sets the sliced one", () =>
    Effect.gen(function*() {
      const current = Effect.map(FiberRef.get(FiberRef.currentScheduler), (s) => s === Scheduler.defaultScheduler)
      assert.isTrue(yield* Effect.provide(current, ServerScheduler.layer(0)))
      assert.isFalse(yield* Effect.provide(current, ServerScheduler.layer(5)))
      assert.isFalse(yield* Effect.provide(current, Layer.orDie(ServerScheduler.layerConfig)))
    }))

  it.live("REACT_SCHEDULER_SLICE_MS: 0 keeps Effect's default; a negative or non-integer value is refused, named", () =>
    Effect.gen(function*() {
      const withEnv = (value: string) =>
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map([["REACT_SCHEDULER_SLICE_MS", value]])))
      const current = Effect.map(FiberRef.get(FiberRef.currentScheduler), (s) => s === Scheduler.defaultScheduler)
      assert.isTrue(yield* Effect.provide(current, ServerScheduler.layerConfig).pipe(withEnv("0")))
      for (const bad of ["-1", "2.5", "fast"]) {
        const refused = yield* Effect.flip(Effect.provide(current, ServerScheduler.layerConfig).pipe(withEnv(bad)))
        assert.include(String(refused), "REACT_SCHEDULER_SLICE_MS", bad)
      }
    }))
})
