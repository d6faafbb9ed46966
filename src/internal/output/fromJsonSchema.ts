/**
 * A JSON Schema (what a client sends as `output_schema`, `response_format`, a
 * CLI `--schema` file) as an Effect Schema that decodes and validates the same
 * values: the subset below, anything else refused with the keyword named.
 *
 * Honoured: `type` (one or a list), `properties`, `required`,
 * `additionalProperties` (`false`, `true`, or a schema), `items`, `minItems`,
 * `maxItems`, `enum`, `const`, `anyOf`, `oneOf` (exactly one branch), `nullable`,
 * `minLength`, `maxLength`, `pattern`, `format` (date-time, date, time, email,
 * uuid, uri), `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
 * `multipleOf`, local `$ref`s into `$defs` / `definitions` (recursion too);
 * annotations (`title`, `description`, `default`, `examples`, `$schema`, `$id`,
 * `$comment`, `deprecated`, `readOnly`, `writeOnly`, `x-…`) are kept or ignored.
 *
 * @internal
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"

/** Why a JSON Schema cannot be honoured: the keyword, where (a JSON pointer), and what to do. */
export interface Unsupported {
  readonly keyword: string
  readonly path: string
  readonly message: string
}

type AnySchema = Schema.Schema<any, any, never>

const ANNOTATIONS = new Set([
  "title",
  "description",
  "default",
  "examples",
  "$schema",
  "$id",
  "$comment",
  "deprecated",
  "readOnly",
  "writeOnly",
  "$defs",
  "definitions"
])

const HANDLED = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "minItems",
  "maxItems",
  "enum",
  "const",
  "anyOf",
  "oneOf",
  "nullable",
  "minLength",
  "maxLength",
  "pattern",
  "format",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "$ref"
])

const FORMATS: Record<string, RegExp> = {
  "date-time": /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/,
  date: /^\d{4}-\d{2}-\d{2}$/,
  time: /^\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})?$/,
  email: /^[^\s@]+@[^\s@]+\.[^\s@]+$/,
  uuid: /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/,
  uri: /^[a-zA-Z][a-zA-Z0-9+.-]*:[^\s]*$/
}

/** Nesting deeper than this is refused (a schema is data from a client). */
export const MAX_DEPTH = 32

class Refused {
  constructor(readonly unsupported: Unsupported) {}
}

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const pointer = (path: string, key: string | number): string =>
  `${path}/${String(key).replace(/~/g, "~0").replace(/\//g, "~1")}`

interface Context {
  readonly root: Record<string, unknown>
  readonly refs: Map<string, AnySchema>
}

const refuse = (keyword: string, path: string, message: string): never => {
  throw new Refused({ keyword, path, message })
}

const literalOf = (value: unknown, path: string): AnySchema => {
  if (value === null || typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
    return Schema.Literal(value)
  }
  return refuse("enum", path, "only string, number, boolean and null values can be listed in enum / const")
}

const numberOf = (node: Record<string, unknown>, keyword: string, path: string): number | undefined => {
  const value = node[keyword]
  if (value === undefined) return undefined
  if (typeof value !== "number" || !Number.isFinite(value)) {
    return refuse(keyword, pointer(path, keyword), `${keyword} must be a number`)
  }
  return value
}

const withString = (base: typeof Schema.String, node: Record<string, unknown>, path: string): AnySchema => {
  let s: Schema.Schema<string> = base
  const min = numberOf(node, "minLength", path)
  const max = numberOf(node, "maxLength", path)
  if (min !== undefined) s = s.pipe(Schema.minLength(min))
  if (max !== undefined) s = s.pipe(Schema.maxLength(max))
  if (node.pattern !== undefined) {
    if (typeof node.pattern !== "string") return refuse("pattern", pointer(path, "pattern"), "pattern must be a string")
    let regex: RegExp
    try {
      regex = new RegExp(node.pattern, "u")
    } catch {
      return refuse("pattern", pointer(path, "pattern"), "pattern is not a valid regular expression")
    }
    s = s.pipe(Schema.pattern(regex))
  }
  if (node.format !== undefined) {
    const format = typeof node.format === "string" ? FORMATS[node.format] : undefined
    if (format === undefined) {
      return refuse(
        "format",
        pointer(path, "format"),
        `format ${JSON.stringify(node.format)} is not supported (${Object.keys(FORMATS).join(", ")})`
      )
    }
    s = s.pipe(Schema.pattern(format, { message: () => `Expected a ${String(node.format)} string` }))
  }
  return s
}

const withNumber = (base: Schema.Schema<number>, node: Record<string, unknown>, path: string): AnySchema => {
  let s = base
  const min = numberOf(node, "minimum", path)
  const max = numberOf(node, "maximum", path)
  const exMin = numberOf(node, "exclusiveMinimum", path)
  const exMax = numberOf(node, "exclusiveMaximum", path)
  const multiple = numberOf(node, "multipleOf", path)
  if (min !== undefined) s = s.pipe(Schema.greaterThanOrEqualTo(min))
  if (max !== undefined) s = s.pipe(Schema.lessThanOrEqualTo(max))
  if (exMin !== undefined) s = s.pipe(Schema.greaterThan(exMin))
  if (exMax !== undefined) s = s.pipe(Schema.lessThan(exMax))
  if (multiple !== undefined) {
    if (multiple <= 0) return refuse("multipleOf", pointer(path, "multipleOf"), "multipleOf must be greater than 0")
    s = s.pipe(
      Schema.filter((n) => Math.abs(n / multiple - Math.round(n / multiple)) < 1e-9, {
        message: () => `Expected a multiple of ${multiple}`
      })
    )
  }
  return s
}

const objectOf = (node: Record<string, unknown>, path: string, context: Context, depth: number): AnySchema => {
  const properties = node.properties ?? {}
  if (!isRecord(properties)) return refuse("properties", pointer(path, "properties"), "properties must be an object")
  const required = node.required ?? []
  if (!Array.isArray(required) || !required.every((r) => typeof r === "string")) {
    return refuse("required", pointer(path, "required"), "required must be a list of property names")
  }
  const fields: Record<string, AnySchema | Schema.optional<AnySchema>> = {}
  for (const [name, child] of Object.entries(properties)) {
    const schema = convert(child, pointer(pointer(path, "properties"), name), context, depth + 1)
    fields[name] = required.includes(name) ? schema : Schema.optional(schema)
  }
  for (const name of required) {
    if (!(name in properties)) {
      fields[name] = Schema.Unknown.pipe(
        Schema.filter((u) => u !== undefined, { message: () => `${name} is required` })
      )
    }
  }
  const additional = node.additionalProperties
  if (additional === undefined || additional === true || additional === false) {
    // `false`: excess properties are not part of the value (a decoded answer drops them); `true`: kept as they are
    return additional === true
      ? Schema.Struct(fields, Schema.Record({ key: Schema.String, value: Schema.Unknown }))
      : Schema.Struct(fields)
  }
  const rest = convert(additional, pointer(path, "additionalProperties"), context, depth + 1)
  return Schema.Struct(fields, Schema.Record({ key: Schema.String, value: rest }))
}

const arrayOf = (node: Record<string, unknown>, path: string, context: Context, depth: number): AnySchema => {
  if (Array.isArray(node.items)) {
    return refuse("items", pointer(path, "items"), "items as a list (tuples) is not supported")
  }
  let s: Schema.Schema<ReadonlyArray<any>, ReadonlyArray<any>> = Schema.Array(
    node.items === undefined ? Schema.Unknown : convert(node.items, pointer(path, "items"), context, depth + 1)
  )
  const min = numberOf(node, "minItems", path)
  const max = numberOf(node, "maxItems", path)
  if (min !== undefined) s = s.pipe(Schema.minItems(min))
  if (max !== undefined) s = s.pipe(Schema.maxItems(max))
  return s
}

const ofType = (
  type: unknown,
  node: Record<string, unknown>,
  path: string,
  context: Context,
  depth: number
): AnySchema => {
  switch (type) {
    case "object":
      return objectOf(node, path, context, depth)
    case "array":
      return arrayOf(node, path, context, depth)
    case "string":
      return withString(Schema.String, node, path)
    case "number":
      return withNumber(Schema.Number.pipe(Schema.finite()), node, path)
    case "integer":
      return withNumber(Schema.Number.pipe(Schema.int()), node, path)
    case "boolean":
      return Schema.Boolean
    case "null":
      return Schema.Null
    default:
      return refuse("type", pointer(path, "type"), `type ${JSON.stringify(type)} is not a JSON Schema type`)
  }
}

const resolveRef = (ref: unknown, path: string, context: Context, depth: number): AnySchema => {
  if (typeof ref !== "string") return refuse("$ref", pointer(path, "$ref"), "$ref must be a string")
  const match = /^#\/(\$defs|definitions)\/([^/]+)$/.exec(ref)
  if (match === null) {
    return refuse(
      "$ref",
      pointer(path, "$ref"),
      `only local references into $defs or definitions are supported, got ${ref}`
    )
  }
  const cached = context.refs.get(ref)
  if (cached !== undefined) return cached
  const defs = context.root[match[1]]
  const name = match[2].replace(/~1/g, "/").replace(/~0/g, "~")
  const target = isRecord(defs) ? defs[name] : undefined
  if (target === undefined) return refuse("$ref", pointer(path, "$ref"), `${ref} is not defined`)
  // recursion: the reference stands for itself while its definition is converted
  const resolved: { schema?: AnySchema } = {}
  const lazy = Schema.suspend(() => resolved.schema!)
  context.refs.set(ref, lazy)
  resolved.schema = convert(target, `#/${match[1]}/${match[2]}`, context, depth + 1)
  return lazy
}

const convert = (node: unknown, path: string, context: Context, depth: number): AnySchema => {
  if (depth > MAX_DEPTH) return refuse("$ref", path, `the schema nests deeper than ${MAX_DEPTH} levels`)
  if (node === true) return Schema.Unknown
  if (!isRecord(node)) return refuse("type", path, "a schema must be an object")
  for (const key of Object.keys(node)) {
    if (!HANDLED.has(key) && !ANNOTATIONS.has(key) && !key.startsWith("x-")) {
      return refuse(key, pointer(path, key), `the keyword ${key} is not supported`)
    }
  }
  let schema: AnySchema
  if (node.$ref !== undefined) {
    schema = resolveRef(node.$ref, path, context, depth)
  } else if (node.const !== undefined) {
    schema = literalOf(node.const, pointer(path, "const"))
  } else if (node.enum !== undefined) {
    if (!Array.isArray(node.enum) || node.enum.length === 0) {
      return refuse("enum", pointer(path, "enum"), "enum must be a non-empty list")
    }
    schema = Schema.Union(...node.enum.map((v, i) => literalOf(v, pointer(pointer(path, "enum"), i))))
  } else if (node.anyOf !== undefined || node.oneOf !== undefined) {
    const keyword = node.anyOf !== undefined ? "anyOf" : "oneOf"
    const list = node[keyword]
    if (!Array.isArray(list) || list.length === 0) {
      return refuse(keyword, pointer(path, keyword), `${keyword} must be a non-empty list`)
    }
    const members = list.map((m, i) => convert(m, pointer(pointer(path, keyword), i), context, depth + 1))
    const union: AnySchema = members.length === 1 ? members[0] : Schema.Union(...members)
    schema = keyword === "anyOf" ?
      union :
      union.pipe(Schema.filter((value) => members.filter((m) => Schema.is(m)(value)).length === 1, {
        message: () => "Expected a value matching exactly one oneOf branch"
      }))
  } else if (Array.isArray(node.type)) {
    if (node.type.length === 0) return refuse("type", pointer(path, "type"), "type must not be an empty list")
    const members = node.type.map((t) => ofType(t, node, path, context, depth))
    schema = members.length === 1 ? members[0] : Schema.Union(...members)
  } else if (node.type !== undefined) {
    schema = ofType(node.type, node, path, context, depth)
  } else if (node.properties !== undefined) {
    schema = objectOf(node, path, context, depth)
  } else {
    schema = Schema.Unknown
  }
  if (node.nullable === true) schema = Schema.NullOr(schema)
  return typeof node.description === "string" ? schema.annotations({ description: node.description }) : schema
}

/**
 * The Effect Schema of a JSON Schema whose root describes an object, or the
 * first thing in it that cannot be honoured.
 */
export const fromJsonSchema = (jsonSchema: unknown): Either.Either<Schema.Schema<unknown, unknown>, Unsupported> => {
  if (!isRecord(jsonSchema)) {
    return Either.left({ keyword: "type", path: "", message: "the schema must be a JSON object" })
  }
  const type = jsonSchema.type
  if (!(type === "object" || (type === undefined && jsonSchema.properties !== undefined))) {
    return Either.left({
      keyword: "type",
      path: "/type",
      message: "the answer must be an object: the schema's root needs \"type\": \"object\""
    })
  }
  try {
    return Either.right(
      convert(jsonSchema, "", { root: jsonSchema, refs: new Map() }, 0) as Schema.Schema<unknown, unknown>
    )
  } catch (e) {
    if (e instanceof Refused) return Either.left(e.unsupported)
    throw e
  }
}
