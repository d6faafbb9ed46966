/**
 * JSON Schema for tool parameters, generated from an Effect Schema and made
 * acceptable to OpenAI-compatible providers: an object root (never a `$ref`), no
 * `$schema`, `$defs` attached, optional fields left out of `required`.
 *
 * @since 0.1.0
 */
import * as JSONSchema from "effect/JSONSchema"
import type * as Schema from "effect/Schema"
import type { JsonSchemaObject } from "./Llm.js"

/**
 * @since 0.1.0 @category constructors
 */
export const make = <A, I, R>(schema: Schema.Schema<A, I, R>): JsonSchemaObject => {
  const definitions: Record<string, JSONSchema.JsonSchema7> = {}
  const root = JSONSchema.fromAST(schema.ast, { definitions, topLevelReferenceStrategy: "skip" }) as unknown as Record<string, unknown>
  const out: Record<string, unknown> = { ...root }
  delete out.$schema
  if (out.type === undefined && out.properties === undefined && out.anyOf === undefined) {
    // e.g. Schema.Unknown / Schema.Any: accept any object
    out.type = "object"
  }
  if (out.type === "object" && out.properties === undefined) out.properties = {}
  if (Object.keys(definitions).length > 0) out.$defs = definitions
  return out
}
