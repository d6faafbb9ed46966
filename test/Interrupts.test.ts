import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { Interrupts, NoActiveRun } from "../src/Interrupts.js"

const run = <A, E>(effect: Effect.Effect<A, E, Interrupts>) => Effect.provide(effect, Interrupts.layer)

describe("Interrupts", () => {
  it.effect("inject into a conversation without a run fails with NoActiveRun", () =>
    run(Effect.gen(function*() {
      const interrupts = yield* Interrupts
      const result = yield* Effect.either(interrupts.inject("c1", "hello"))
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) {
        assert.instanceOf(result.left, NoActiveRun)
        assert.strictEqual(result.left.conversationId, "c1")
        assert.include(result.left.message, "No active run")
      }
      assert.isFalse(yield* interrupts.isActive("c1"))
    })))

  it.effect("drain returns everything in order, then nothing", () =>
    run(Effect.gen(function*() {
      const interrupts = yield* Interrupts
      yield* interrupts.register("c1")
      assert.isTrue(yield* interrupts.isActive("c1"))
      const a = yield* interrupts.inject("c1", "first")
      const b = yield* interrupts.inject("c1", "second")
      const c = yield* interrupts.inject("c1", "third")
      assert.deepStrictEqual(yield* interrupts.drain("c1"), [a, b, c])
      assert.deepStrictEqual(yield* interrupts.drain("c1"), [])
      assert.deepStrictEqual(yield* interrupts.drain("unknown"), [])
    })))

  it.effect("ids are unique, also across conversations", () =>
    run(Effect.gen(function*() {
      const interrupts = yield* Interrupts
      yield* interrupts.register("c1")
      yield* interrupts.register("c2")
      const ids = yield* Effect.forEach(
        Array.from({ length: 50 }, (_, i) => i),
        (i) => Effect.map(interrupts.inject(i % 2 === 0 ? "c1" : "c2", `m${i}`), (inj) => inj.id),
        { concurrency: "unbounded" }
      )
      assert.strictEqual(new Set(ids).size, 50)
      for (const id of ids) assert.match(id, /^inj_\d+$/)
      assert.strictEqual((yield* interrupts.drain("c1")).length, 25)
      assert.strictEqual((yield* interrupts.drain("c2")).length, 25)
    })))

  it.effect("recall removes a queued message before it is drained, not after", () =>
    run(Effect.gen(function*() {
      const interrupts = yield* Interrupts
      yield* interrupts.register("c1")
      const a = yield* interrupts.inject("c1", "keep")
      const b = yield* interrupts.inject("c1", "oops")
      assert.isTrue(yield* interrupts.recall("c1", b.id))
      assert.isFalse(yield* interrupts.recall("c1", b.id))
      assert.isFalse(yield* interrupts.recall("other", a.id))
      assert.deepStrictEqual(yield* interrupts.drain("c1"), [a])
      assert.isFalse(yield* interrupts.recall("c1", a.id))
    })))

  it.effect("unregister returns leftovers and closes the queue", () =>
    run(Effect.gen(function*() {
      const interrupts = yield* Interrupts
      yield* interrupts.register("c1")
      const a = yield* interrupts.inject("c1", "late")
      assert.deepStrictEqual(yield* interrupts.unregister("c1"), [a])
      assert.isFalse(yield* interrupts.isActive("c1"))
      assert.isTrue(Either.isLeft(yield* Effect.either(interrupts.inject("c1", "too late"))))
      assert.deepStrictEqual(yield* interrupts.unregister("c1"), [])
    })))

  it.effect("registering twice keeps the queue; conversations are independent", () =>
    run(Effect.gen(function*() {
      const interrupts = yield* Interrupts
      yield* interrupts.register("c1")
      yield* interrupts.register("c2")
      const a = yield* interrupts.inject("c1", "one")
      yield* interrupts.register("c1")
      assert.deepStrictEqual(yield* interrupts.drain("c2"), [])
      assert.deepStrictEqual(yield* interrupts.drain("c1"), [a])
    })))

  it.effect("each layer build has its own state", () =>
    Effect.gen(function*() {
      yield* run(Effect.flatMap(Interrupts, (i) => i.register("c1")))
      const active = yield* run(Effect.flatMap(Interrupts, (i) => i.isActive("c1")))
      assert.isFalse(active)
    }))
})
