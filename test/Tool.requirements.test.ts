/**
 * A tool handler that needs a service says so in its type (`dependencies`), the
 * toolkit layer requires that service, and the agent runs the handler with the
 * service the layer was built with — the run's own context does not have it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Hooks from "../src/Hooks.js"
import * as Interrupts from "../src/Interrupts.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import * as Toolkit from "../src/Toolkit.js"

class Prices extends Context.Tag("test/Prices")<Prices, { readonly of: (sku: string) => Effect.Effect<number> }>() {}

const lookups: Array<string> = []
const price = Tool.make({
  name: "price",
  description: "The price of a product",
  parameters: Schema.Struct({ sku: Schema.String }),
  dependencies: [Prices],
  handler: ({ sku }) => Effect.map(Effect.flatMap(Prices, (prices) => prices.of(sku)), (p) => `${sku}: ${p} EUR`)
})

const pricesLayer = Layer.succeed(Prices, {
  of: (sku) =>
    Effect.sync(() => {
      lookups.push(sku)
      return sku.length * 10
    })
})

describe("Tool requirements", () => {
  it("are in the types: the tool's R, the toolkit layer's requirements", () => {
    const typed: Tool.Tool<Prices> = price
    const layer: Layer.Layer<Toolkit.Toolkit, never, Prices> = Toolkit.layer([price])
    // a toolkit built at once cannot hold a tool that still needs a service
    // @ts-expect-error Tool<Prices> is not a Tool
    const unsafe = () => Toolkit.makeUnsafe([price])
    // a handler using a service it does not declare does not type-check
    const undeclared = () =>
      Tool.make({
        name: "undeclared",
        description: "uses Prices without saying so",
        parameters: Schema.Struct({}),
        // @ts-expect-error Prices is not among the dependencies
        handler: () => Effect.map(Prices, () => "x")
      })
    // the toolkit layer cannot be used without the service
    const program = Effect.map(Toolkit.Toolkit, (kit) => kit.size)
    // @ts-expect-error Prices is missing
    const missing: Effect.Effect<number> = Effect.provide(program, Toolkit.layer([price]))
    const provided: Effect.Effect<number> = Effect.provide(
      program,
      Toolkit.layer([price]).pipe(Layer.provide(pricesLayer))
    )
    assert.strictEqual(typeof typed.handler, "function")
    assert.isDefined(layer)
    assert.isDefined(unsafe)
    assert.isDefined(undeclared)
    assert.isDefined(missing)
    assert.strictEqual(Effect.runSync(provided), 1)
  })

  it.effect("the agent runs the handler with the service the toolkit layer was built with", () =>
    Effect.gen(function*() {
      lookups.length = 0
      const llm = ScriptedLlm.makeUnsafe([
        ScriptedLlm.toolCalls([{ id: "c1", name: "price", arguments: { sku: "abc" } }]),
        ScriptedLlm.text("done")
      ])
      const agent = ReactAgent.layer({ synthesis: "auto" }).pipe(
        Layer.provide(Layer.mergeAll(
          llm.layer,
          Toolkit.layer([price]).pipe(Layer.provide(pricesLayer)),
          Hooks.layerNoop,
          ContextGuard.layer(),
          Interrupts.layerMemory
        )),
        Layer.orDie
      )
      // the run itself has no Prices in its context: only the toolkit layer had it
      const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "price of abc?" })).pipe(
        Effect.provide(agent)
      )
      const observation = llm.requests[1].request.messages.find((m) => m.role === "tool")
      assert.strictEqual(observation?.content, "abc: 30 EUR")
      assert.deepStrictEqual(lookups, ["abc"])
      assert.strictEqual(result.answer, "done")
    }))

  it.effect("a tool without dependencies is kept as it is (no per-call context switch)", () =>
    Effect.gen(function*() {
      const plain = Tool.make({
        name: "plain",
        description: "",
        parameters: Schema.Struct({}),
        handler: () => Effect.succeed("ok")
      })
      const kit = yield* Effect.provide(Toolkit.Toolkit, Toolkit.layer([plain, price]).pipe(Layer.provide(pricesLayer)))
      assert.strictEqual(kit.get("plain"), plain)
      assert.notStrictEqual(kit.get("price"), price)
      assert.strictEqual(yield* Tool.execute(kit.get("price")!, { sku: "xy" }), "xy: 20 EUR")
    }))
})
