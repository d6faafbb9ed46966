import { assert, describe, it } from "@effect/vitest"
import * as Schema from "effect/Schema"
import * as JsonSchema from "../src/JsonSchema.js"

class Point extends Schema.Class<Point>("Point")({ x: Schema.Number, y: Schema.Number }) {}

interface Category {
  readonly name: string
  readonly children: ReadonlyArray<Category>
}
const Category = Schema.Struct({
  name: Schema.String,
  children: Schema.Array(Schema.suspend((): Schema.Schema<Category> => Category))
}).annotations({ identifier: "Category" })

const hasKeyDeep = (value: unknown, key: string): boolean =>
  Array.isArray(value)
    ? value.some((v) => hasKeyDeep(v, key))
    : value !== null && typeof value === "object"
    ? Object.entries(value).some(([k, v]) => k === key || hasKeyDeep(v, key))
    : false

describe("JsonSchema.make", () => {
  it("a struct: object root, no $schema, optional fields not required", () => {
    const schema = JsonSchema.make(Schema.Struct({
      query: Schema.String.annotations({ description: "what to search" }),
      limit: Schema.optional(Schema.Number),
      mode: Schema.optionalWith(Schema.Literal("fast", "deep"), { default: () => "fast" as const })
    }))
    assert.strictEqual(schema.type, "object")
    assert.notProperty(schema, "$schema")
    assert.notProperty(schema, "$ref")
    assert.deepStrictEqual(schema.required, ["query"])
    const properties = schema.properties as Record<string, any>
    assert.deepStrictEqual(Object.keys(properties), ["query", "limit", "mode"])
    assert.strictEqual(properties.query.description, "what to search")
    assert.deepStrictEqual(properties.mode.enum, ["fast", "deep"])
  })

  it("a Schema.Class field goes to $defs, referenced with #/$defs/", () => {
    const schema = JsonSchema.make(Schema.Struct({ from: Point, to: Point }))
    const properties = schema.properties as Record<string, any>
    assert.deepStrictEqual(properties.from, { $ref: "#/$defs/Point" })
    assert.deepStrictEqual(properties.to, { $ref: "#/$defs/Point" })
    const defs = schema.$defs as Record<string, any>
    assert.strictEqual(defs.Point.type, "object")
    assert.deepStrictEqual(defs.Point.required, ["x", "y"])
  })

  it("a Schema.Class root is inlined (the root is never a $ref)", () => {
    const schema = JsonSchema.make(Point)
    assert.strictEqual(schema.type, "object")
    assert.notProperty(schema, "$ref")
    assert.notProperty(schema, "$defs")
    assert.deepStrictEqual(Object.keys(schema.properties as object), ["x", "y"])
  })

  it("a recursive root keeps its definition for the inner references", () => {
    const schema = JsonSchema.make(Category)
    assert.strictEqual(schema.type, "object")
    assert.notProperty(schema, "$ref")
    const defs = schema.$defs as Record<string, any>
    assert.property(defs, "Category")
    assert.deepStrictEqual((schema.properties as any).children.items, { $ref: "#/$defs/Category" })
  })

  it("an empty struct is an object with no properties (no-argument tools)", () => {
    assert.deepStrictEqual(JsonSchema.make(Schema.Struct({})), { type: "object", properties: {} })
  })

  it("Unknown and records become objects without $id noise", () => {
    const unknown = JsonSchema.make(Schema.Unknown)
    assert.strictEqual(unknown.type, "object")
    assert.deepStrictEqual(unknown.properties, {})
    const record = JsonSchema.make(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
    assert.strictEqual(record.type, "object")
    assert.isFalse(hasKeyDeep(unknown, "$id"))
    assert.isFalse(hasKeyDeep(record, "$id"))
  })

  it("describes the encoded side (what the model sends)", () => {
    const schema = JsonSchema.make(Schema.Struct({ when: Schema.DateFromString, n: Schema.NumberFromString }))
    const defs = (schema.$defs ?? {}) as Record<string, any>
    const deref = (s: any) => (typeof s.$ref === "string" ? defs[s.$ref.replace("#/$defs/", "")] : s)
    const properties = schema.properties as Record<string, any>
    assert.strictEqual(deref(properties.when).type, "string")
    assert.strictEqual(deref(properties.n).type, "string")
  })

  it("isObjectRoot rejects non-object roots", () => {
    assert.isTrue(JsonSchema.isObjectRoot(JsonSchema.make(Schema.Struct({ a: Schema.String }))))
    assert.isFalse(JsonSchema.isObjectRoot(JsonSchema.make(Schema.String)))
    assert.isFalse(JsonSchema.isObjectRoot(JsonSchema.make(Schema.Array(Schema.String))))
  })
})
