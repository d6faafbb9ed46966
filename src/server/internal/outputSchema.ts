/**
 * An output schema as a client sends it (`output_schema` on `/api/react`,
 * `response_format.json_schema.schema` on `/v1`): a JSON Schema object of at
 * most 64 KB that `Output.fromJsonSchema` can honour; anything else is a 400
 * naming the keyword.
 *
 * @internal
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Output from "../../Output.js"

/** The largest output schema taken, in bytes of its JSON. */
export const MAX_OUTPUT_SCHEMA_BYTES = 64 * 1024

/** Why a JSON Schema cannot be an output schema (undefined: it can). */
export const problemOf = (schema: unknown): string | undefined => {
  const bytes = Buffer.byteLength(JSON.stringify(schema) ?? "", "utf8")
  if (bytes > MAX_OUTPUT_SCHEMA_BYTES) {
    return `the schema is ${bytes} bytes; at most ${MAX_OUTPUT_SCHEMA_BYTES} are taken`
  }
  const converted = Output.fromJsonSchema(schema)
  if (Either.isRight(converted)) return undefined
  const { keyword, message, path } = converted.left
  return `unsupported JSON Schema: ${message} (keyword "${keyword}" at ${path === "" ? "the root" : path})`
}

/** A JSON Schema object that can serve as an output schema. */
export const OutputSchema = Schema.Record({ key: Schema.String, value: Schema.Unknown }).pipe(
  Schema.filter((schema) => problemOf(schema) ?? true)
)

/** The Effect Schema of a JSON Schema checked at the edge (a stored run's, read again: it converted then). */
export const toSchema = (jsonSchema: unknown): Schema.Schema<unknown, unknown> =>
  Either.getOrThrowWith(Output.fromJsonSchema(jsonSchema), (e) => new Error(`output schema: ${e.message}`))
