import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Tool from "../src/Tool.js"
import { ToolError } from "../src/Tool.js"

class Point extends Schema.Class<Point>("Point")({ x: Schema.Number, y: Schema.Number }) {}

const distance = Tool.make({
  name: "distance",
  description: "Distance between two points",
  parameters: Schema.Struct({ from: Point, to: Point, precision: Schema.optional(Schema.Int) }),
  handler: ({ from, precision, to }) => Effect.succeed(Math.hypot(to.x - from.x, to.y - from.y).toFixed(precision ?? 2))
})

const failure = <A>(effect: Effect.Effect<A, ToolError>) =>
  Effect.flatMap(
    Effect.either(effect),
    (e) => (Either.isLeft(e) ? Effect.succeed(e.left) : Effect.dieMessage("expected a ToolError"))
  )

describe("Tool", () => {
  it.effect("decodes the arguments with the Schema, then runs the handler", () =>
    Effect.gen(function*() {
      const out = yield* Tool.execute(distance, { from: { x: 0, y: 0 }, to: { x: 3, y: 4 }, extra: "ignored" })
      assert.strictEqual(out, "5.00")
    }))

  it.effect("an argument decode failure is a ToolError with a readable message naming the tool and the field", () =>
    Effect.gen(function*() {
      let ran = false
      const tool = Tool.make({
        name: "search",
        description: "",
        parameters: Schema.Struct({ query: Schema.String, limit: Schema.Number }),
        handler: () => Effect.sync(() => (ran = true, "x"))
      })
      const error = yield* failure(Tool.execute(tool, { query: 42 }))
      assert.instanceOf(error, ToolError)
      assert.include(error.message, "Invalid arguments for search")
      assert.include(error.message, "query")
      assert.include(error.message, "limit") // all errors reported, not just the first
      assert.isFalse(ran)
      const notObject = yield* failure(Tool.execute(tool, "just a string"))
      assert.include(notObject.message, "Invalid arguments for search")
    }))

  it("the JSON Schema is an object root with $defs for identified sub-schemas", () => {
    assert.strictEqual(distance.jsonSchema.type, "object")
    assert.notProperty(distance.jsonSchema, "$schema")
    assert.deepStrictEqual(distance.jsonSchema.required, ["from", "to"])
    assert.property(distance.jsonSchema.$defs as object, "Point")
  })

  it("toDefinition gives the OpenAI function tool; defaults are read-only, not pinned", () => {
    const def = Tool.toDefinition(distance)
    assert.deepStrictEqual(def, {
      type: "function",
      function: { name: "distance", description: "Distance between two points", parameters: distance.jsonSchema }
    })
    assert.isTrue(distance.readOnly)
    assert.isFalse(distance.pinned)
    assert.isUndefined(distance.timeout)
    const writer = Tool.make({
      name: "write_file",
      description: "",
      parameters: Schema.Struct({}),
      handler: () => Effect.succeed("ok"),
      readOnly: false,
      pinned: true,
      timeout: "5 seconds"
    })
    assert.isFalse(writer.readOnly)
    assert.isTrue(writer.pinned)
    assert.strictEqual(writer.timeout, "5 seconds")
    assert.deepStrictEqual(writer.jsonSchema, { type: "object", properties: {} })
  })

  it("invalid names and non-object parameters are rejected at definition time", () => {
    const base = { description: "", handler: () => Effect.succeed("") }
    assert.throws(() => Tool.make({ ...base, name: "has space", parameters: Schema.Struct({}) }), /Invalid tool name/)
    assert.throws(() => Tool.make({ ...base, name: "", parameters: Schema.Struct({}) }), /Invalid tool name/)
    assert.throws(
      () => Tool.make({ ...base, name: "x".repeat(65), parameters: Schema.Struct({}) }),
      /Invalid tool name/
    )
    assert.throws(() => Tool.make({ ...base, name: "str", parameters: Schema.String }), /expected an object schema/)
  })

  it.effect("fromJsonSchema: keeps the given schema (minus $schema), checks only that arguments are an object", () =>
    Effect.gen(function*() {
      const tool = Tool.fromJsonSchema({
        name: "mcp__echo",
        description: "echo",
        jsonSchema: { $schema: "http://json-schema.org/draft-07/schema#", properties: { text: { type: "string" } } },
        handler: (args) => Effect.succeed(String(args.text))
      })
      assert.deepStrictEqual(tool.jsonSchema, { type: "object", properties: { text: { type: "string" } } })
      assert.strictEqual(yield* Tool.execute(tool, { text: "hi" }), "hi")
      const error = yield* failure(Tool.execute(tool, [1, 2]))
      assert.include(error.message, "Invalid arguments for mcp__echo")
    }))

  it("toRich normalises outputs", () => {
    assert.deepStrictEqual(Tool.toRich("plain"), { content: "plain", contentType: "text" })
    const rich = {
      content: "<p>x</p>",
      contentType: "html" as const,
      artifacts: [{ name: "x.html", mimeType: "text/html" }]
    }
    assert.strictEqual(Tool.toRich(rich), rich)
  })
})
