/**
 * Whether a JSON Schema can be sent with `strict: true` in an OpenAI-compatible
 * `response_format: json_schema` (structured outputs' strict mode): an object
 * root; every object lists all its properties in `required` and has
 * `additionalProperties: false`; only the keywords strict mode supports; at
 * most 10 levels of nesting. Anything else (an optional property, `minLength`,
 * `oneOf`, `allOf`, a `Record`'s additional properties, an unknown `format`) is
 * sent non-strict: the provider then only aims at the schema, and the Effect
 * Schema still decodes (and enforces) what comes back.
 *
 * @internal
 */
import type { JsonSchemaObject } from "../../Llm.js"

/** The keywords strict mode accepts. */
const SUPPORTED = new Set([
  "type",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "const",
  "anyOf",
  "$ref",
  "$defs",
  "description",
  "title",
  "pattern",
  "format",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "exclusiveMaximum",
  "multipleOf",
  "minItems",
  "maxItems"
])

/** The string formats strict mode accepts. */
const FORMATS = new Set(["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"])

/** Strict mode's nesting limit. */
export const MAX_DEPTH = 10

const isRecord = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const strictNode = (node: unknown, depth: number): boolean => {
  if (!isRecord(node) || depth > MAX_DEPTH) return false
  for (const key of Object.keys(node)) if (!SUPPORTED.has(key)) return false
  if (node.format !== undefined && !(typeof node.format === "string" && FORMATS.has(node.format))) return false
  const properties = node.properties
  if (node.type === "object" || properties !== undefined) {
    if (!isRecord(properties) || node.additionalProperties !== false) return false
    const required = Array.isArray(node.required) ? new Set(node.required) : new Set()
    for (const [name, child] of Object.entries(properties)) {
      if (!required.has(name) || !strictNode(child, depth + 1)) return false
    }
  } else if (node.additionalProperties !== undefined) {
    return false
  }
  if (node.items !== undefined && !strictNode(node.items, depth + 1)) return false
  if (node.anyOf !== undefined && !(Array.isArray(node.anyOf) && node.anyOf.every((c) => strictNode(c, depth)))) {
    return false
  }
  if (node.$defs !== undefined && !(isRecord(node.$defs) && Object.values(node.$defs).every((d) => strictNode(d, 0)))) {
    return false
  }
  return true
}

/** True when `schema` meets strict mode's rules (see the module documentation). */
export const allowsStrict = (schema: JsonSchemaObject): boolean => schema.type === "object" && strictNode(schema, 0)
