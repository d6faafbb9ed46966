import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Tool from "../src/Tool.js"
import * as Toolkit from "../src/Toolkit.js"
import { DuplicateToolError } from "../src/Toolkit.js"

const tool = (name: string) =>
  Tool.make({
    name,
    description: `the ${name} tool`,
    parameters: Schema.Struct({}),
    handler: () => Effect.succeed(name)
  })

describe("Toolkit", () => {
  it("keeps insertion order; get/has by name", () => {
    const kit = Toolkit.makeUnsafe([tool("c"), tool("a"), tool("b")])
    assert.deepStrictEqual(kit.tools.map((t) => t.name), ["c", "a", "b"])
    assert.strictEqual(kit.size, 3)
    assert.strictEqual(kit.get("a")?.name, "a")
    assert.isUndefined(kit.get("zzz"))
    assert.isTrue(kit.has("b"))
    assert.isFalse(kit.has("zzz"))
    assert.deepStrictEqual(kit.definitions().map((d) => d.function.name), ["c", "a", "b"])
    assert.strictEqual(kit.definitions(), kit.definitions()) // memoized
  })

  it("rejects duplicate names, also when adding", () => {
    assert.throws(() => Toolkit.makeUnsafe([tool("a"), tool("a")]), DuplicateToolError)
    try {
      Toolkit.makeUnsafe([tool("x"), tool("y")]).add(tool("x"))
      assert.fail("expected a DuplicateToolError")
    } catch (e) {
      assert.instanceOf(e, DuplicateToolError)
      assert.strictEqual((e as DuplicateToolError).name, "x")
      assert.include((e as DuplicateToolError).message, "\"x\" is already registered")
    }
  })

  it("filter by names keeps registration order and ignores unknown names", () => {
    const kit = Toolkit.makeUnsafe([tool("a"), tool("b"), tool("c"), tool("d")])
    const some = kit.filter(["d", "nope", "b"])
    assert.deepStrictEqual(some.tools.map((t) => t.name), ["b", "d"])
    assert.strictEqual(kit.size, 4) // original unchanged
    assert.strictEqual(kit.filter([]).size, 0)
  })

  it("add returns a new toolkit", () => {
    const kit = Toolkit.makeUnsafe([tool("a")])
    const more = kit.add(tool("b"), tool("c"))
    assert.deepStrictEqual(more.tools.map((t) => t.name), ["a", "b", "c"])
    assert.strictEqual(kit.size, 1)
    assert.strictEqual(Toolkit.empty.size, 0)
  })

  it.effect("the Tools layers provide the toolkit", () =>
    Effect.gen(function*() {
      const kit = yield* Effect.provide(Toolkit.Toolkit, Toolkit.layer([tool("a"), tool("b")]))
      assert.deepStrictEqual(kit.tools.map((t) => t.name), ["a", "b"])
      assert.strictEqual((yield* Effect.provide(Toolkit.Toolkit, Toolkit.layerNoop)).size, 0)
    }))
})
