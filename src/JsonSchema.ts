/**
 * JSON Schema for tool parameters, generated from an Effect Schema and made
 * acceptable to OpenAI-compatible providers: an object root (never a `$ref`), no
 * `$schema`/`$id`, `$defs` attached for identified sub-schemas (classes, branded
 * or annotated schemas, recursive `suspend`s), optional fields left out of
 * `required`. The schema describes the encoded side (what the model sends), so the
 * same Schema decodes the model's arguments.
 *
 * @since 0.1.0
 */
import * as JSONSchema from "effect/JSONSchema"
import type * as Schema from "effect/Schema"
import * as AST from "effect/SchemaAST"
import type { JsonSchemaObject } from "./Llm.js"

const DEFS = "#/$defs/"

const isEmptyObjectAst = (ast: AST.AST): boolean => {
  const encoded = AST.encodedAST(ast)
  return AST.isTypeLiteral(encoded) && encoded.propertySignatures.length === 0 && encoded.indexSignatures.length === 0
}

const references = (value: unknown, ref: string): number => {
  let n = 0
  const visit = (v: unknown): void => {
    if (Array.isArray(v)) {
      for (const x of v) visit(x)
    } else if (v !== null && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) {
        if (k === "$ref" && x === ref) n++
        else visit(x)
      }
    }
  }
  visit(value)
  return n
}

const stripIds = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(stripIds)
  if (value === null || typeof value !== "object") return value
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(value)) if (k !== "$id" && k !== "$schema") out[k] = stripIds(v)
  return out
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const make = <A, I, R>(schema: Schema.Schema<A, I, R>): JsonSchemaObject => {
  if (isEmptyObjectAst(schema.ast)) return { type: "object", properties: {} }
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  let root = { ...(JSONSchema.fromAST(schema.ast, { definitions }) as unknown as Record<string, unknown>) }
  // An identified top-level schema (e.g. a Schema.Class) comes back as a `$ref`:
  // inline its definition, keeping it in `$defs` only when it is recursive.
  for (let guard = 0; typeof root.$ref === "string" && root.$ref.startsWith(DEFS) && guard < 10; guard++) {
    const ref = root.$ref
    const name = ref.slice(DEFS.length)
    const target = definitions[name] as unknown as Record<string, unknown> | undefined
    if (target === undefined) break
    const { $ref: _, ...rest } = root
    root = { ...target, ...rest }
    if (references({ root, definitions }, ref) === 0) delete definitions[name]
  }
  delete root.$schema
  delete root.$id
  if (root.type === undefined && root.properties === undefined && root.anyOf === undefined && root.$ref === undefined) {
    // Schema.Unknown / Schema.Any: accept any object
    delete root.title
    root.type = "object"
  }
  if (root.type === "object" && root.properties === undefined) root.properties = {}
  if (Object.keys(definitions).length > 0) root.$defs = definitions
  return stripIds(root) as JsonSchemaObject
}

/**
 * True when the schema's root is an object (what providers accept as tool
 * parameters).
 *
 * @since 0.1.0
 * @category utils
 */
export const isObjectRoot = (jsonSchema: JsonSchemaObject): boolean => jsonSchema.type === "object"
