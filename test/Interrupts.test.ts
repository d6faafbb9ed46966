import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as FastCheck from "effect/FastCheck"
import { NoActiveRun } from "../src/Interrupts.js"
import * as Interrupts from "../src/Interrupts.js"

const run = <A, E>(effect: Effect.Effect<A, E, Interrupts.Interrupts>) => Effect.provide(effect, Interrupts.layerMemory)

describe("Interrupts", () => {
  it.effect("inject into a conversation without a run fails with NoActiveRun", () =>
    run(Effect.gen(function*() {
      const interrupts = yield* Interrupts.Interrupts
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
      const interrupts = yield* Interrupts.Interrupts
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
      const interrupts = yield* Interrupts.Interrupts
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
      const interrupts = yield* Interrupts.Interrupts
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
      const interrupts = yield* Interrupts.Interrupts
      yield* interrupts.register("c1")
      const a = yield* interrupts.inject("c1", "late")
      assert.deepStrictEqual(yield* interrupts.unregister("c1"), [a])
      assert.isFalse(yield* interrupts.isActive("c1"))
      assert.isTrue(Either.isLeft(yield* Effect.either(interrupts.inject("c1", "too late"))))
      assert.deepStrictEqual(yield* interrupts.unregister("c1"), [])
    })))

  it.effect("registering twice keeps the queue; conversations are independent", () =>
    run(Effect.gen(function*() {
      const interrupts = yield* Interrupts.Interrupts
      yield* interrupts.register("c1")
      yield* interrupts.register("c2")
      const a = yield* interrupts.inject("c1", "one")
      yield* interrupts.register("c1")
      assert.deepStrictEqual(yield* interrupts.drain("c2"), [])
      assert.deepStrictEqual(yield* interrupts.drain("c1"), [a])
    })))

  it.effect("each layer build has its own state", () =>
    Effect.gen(function*() {
      yield* run(Effect.flatMap(Interrupts.Interrupts, (i) => i.register("c1")))
      const active = yield* run(Effect.flatMap(Interrupts.Interrupts, (i) => i.isActive("c1")))
      assert.isFalse(active)
    }))

  type Op =
    | { readonly op: "inject"; readonly conv: number; readonly text: string }
    | { readonly op: "recall"; readonly conv: number; readonly pick: number }
    | { readonly op: "drain"; readonly conv: number }
    | { readonly op: "register"; readonly conv: number }
    | { readonly op: "unregister"; readonly conv: number }
  const conv = FastCheck.integer({ min: 0, max: 2 })
  const op: FastCheck.Arbitrary<Op> = FastCheck.oneof(
    FastCheck.record({ op: FastCheck.constant("inject" as const), conv, text: FastCheck.string({ maxLength: 5 }) }),
    FastCheck.record({ op: FastCheck.constant("recall" as const), conv, pick: FastCheck.nat(20) }),
    FastCheck.record({ op: FastCheck.constant("drain" as const), conv }),
    FastCheck.record({ op: FastCheck.constant("register" as const), conv }),
    FastCheck.record({ op: FastCheck.constant("unregister" as const), conv })
  )

  it.effect.prop(
    "behaves like a model of per-conversation FIFO queues",
    [FastCheck.array(op, { maxLength: 60 })],
    ([ops]) =>
      run(Effect.gen(function*() {
        const interrupts = yield* Interrupts.Interrupts
        const model = new Map<string, Array<{ id: string; content: string }>>()
        const issued: Array<string> = []
        for (const o of ops) {
          const id = `c${o.conv}`
          switch (o.op) {
            case "register":
              yield* interrupts.register(id)
              if (!model.has(id)) model.set(id, [])
              break
            case "inject": {
              const result = yield* Effect.either(interrupts.inject(id, o.text))
              const queue = model.get(id)
              if (queue === undefined) {
                assert.isTrue(Either.isLeft(result))
              } else {
                assert.isTrue(Either.isRight(result))
                if (Either.isRight(result)) {
                  assert.notInclude(issued, result.right.id)
                  issued.push(result.right.id)
                  queue.push(result.right)
                }
              }
              break
            }
            case "recall": {
              const target = issued.length > 0 ? issued[o.pick % issued.length] : "inj_0"
              const queue = model.get(id)
              const expected = queue !== undefined && queue.some((i) => i.id === target)
              assert.strictEqual(yield* interrupts.recall(id, target), expected)
              if (expected) model.set(id, queue!.filter((i) => i.id !== target))
              break
            }
            case "drain":
              assert.deepStrictEqual(yield* interrupts.drain(id), model.get(id) ?? [])
              if (model.has(id)) model.set(id, [])
              break
            case "unregister":
              assert.deepStrictEqual(yield* interrupts.unregister(id), model.get(id) ?? [])
              model.delete(id)
              break
          }
          assert.strictEqual(yield* interrupts.isActive(id), model.has(id))
        }
      })),
    { fastCheck: { numRuns: 40 } }
  )
})
