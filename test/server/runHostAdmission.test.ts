/**
 * The run host's admission (`internal/runHost.ts`): at most `maxActive` runs registered at once,
 * the next ones wait in arrival order, a start is refused once `maxActive + queue` places are
 * taken (executing, waiting or reserved), and a place comes back when a run ends, when a waiting
 * run is interrupted, or when a start that failed takes its reservation back.
 * test/server/admission.test.ts checks the same through the HTTP routes.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Scope from "effect/Scope"
import * as RunHost from "../../src/server/internal/runHost.js"

describe("run host: admission", () => {
  it.scoped("one at a time, one waiting: the third start is refused; places come back in arrival order", () =>
    Effect.gen(function*() {
      const host = yield* RunHost.make("boot", { maxActive: 1, queue: 1 })
      assert.isTrue(yield* host.reserve("a"))
      assert.isTrue(yield* host.reserve("b"))
      assert.isFalse(yield* host.reserve("c"), "1 executing + 1 waiting: full")

      const scopeA = yield* Scope.make()
      yield* Scope.extend(host.register("a", "conv_a"), scopeA)
      assert.isDefined(yield* host.local("a"))
      const scopeB = yield* Scope.make()
      const b = yield* Effect.fork(Scope.extend(host.register("b", "conv_b"), scopeB))
      yield* Effect.yieldNow()
      assert.isTrue(yield* host.queued("b"))
      assert.isUndefined(yield* host.local("b"))
      assert.deepStrictEqual(yield* host.admission, { active: 1, waiting: 1, maxActive: 1, queue: 1 })
      assert.isFalse(yield* host.reserve("c"))

      // a ends: b executes, and there is room for one more to wait
      yield* Scope.close(scopeA, Exit.void)
      yield* Fiber.join(b)
      assert.isDefined(yield* host.local("b"))
      assert.isFalse(yield* host.queued("b"))
      assert.isTrue(yield* host.reserve("c"))
      assert.isFalse(yield* host.reserve("d"))
      // a start that failed takes its reservation back
      yield* host.unreserve("c")
      assert.isTrue(yield* host.reserve("d"))
      yield* Scope.close(scopeB, Exit.void)
    }))

  it.scoped("a run interrupted while it waits gives its place back", () =>
    Effect.gen(function*() {
      const host = yield* RunHost.make("boot", { maxActive: 1, queue: 1 })
      const scopeA = yield* Scope.make()
      yield* Scope.extend(host.register("a", "conv_a"), scopeA)
      const waiting = yield* Effect.fork(Effect.scoped(host.register("b", "conv_b")))
      yield* Effect.yieldNow()
      assert.deepStrictEqual((yield* host.admission).waiting, 1)
      yield* Fiber.interrupt(waiting)
      assert.deepStrictEqual(yield* host.admission, { active: 1, waiting: 0, maxActive: 1, queue: 1 })
      assert.isTrue(yield* host.reserve("c"))
      yield* Scope.close(scopeA, Exit.void)
      assert.deepStrictEqual((yield* host.admission).active, 0)
    }))
})
