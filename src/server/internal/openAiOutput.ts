/**
 * `response_format` on `/v1/chat/completions` (SPEC §26, §17): `json_schema`
 * makes the run's answer a value of the schema (the client's JSON Schema, as
 * `POST /api/react`'s `output_schema`), `json_object` any JSON object, `text`
 * nothing. The completion's `content` is the JSON text. Streamed, the content
 * of a typed answer is sent once it validated: a value asked again would
 * otherwise have to be taken back, which a chat-completion stream cannot do
 * (the tool activity still streams as `reasoning_content`).
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import type { RunEvent } from "../../RunEvent.js"
import { isOwn } from "../../RunEvent.js"
import { OutputSchema, toSchema } from "./outputSchema.js"

/** `response_format` as the endpoint takes it. */
export const ResponseFormat = Schema.Union(
  Schema.Struct({ type: Schema.Literal("text") }),
  Schema.Struct({ type: Schema.Literal("json_object") }),
  Schema.Struct({
    type: Schema.Literal("json_schema"),
    json_schema: Schema.Struct({
      name: Schema.String,
      description: Schema.optional(Schema.String),
      schema: Schema.optional(OutputSchema),
      strict: Schema.optional(Schema.NullOr(Schema.Boolean))
    })
  })
)
export type ResponseFormat = typeof ResponseFormat.Type

/** Any JSON object (`json_object`). */
const AnyObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** The run's output schema for a `response_format` (undefined: a text answer). */
export const outputOf = (format: ResponseFormat | null | undefined): Schema.Schema<any, any> | undefined => {
  if (format === null || format === undefined || format.type === "text") return undefined
  if (format.type === "json_object" || format.json_schema.schema === undefined) return AnyObject
  return toSchema(format.json_schema.schema)
}

/**
 * Holds a typed answer's content until it is complete (`AnswerDone`) and drops
 * it at `AnswerReset` (a value asked again): the content a client gets is the
 * valid value's JSON, once. Other events pass at once. One instance per run.
 */
export const settledTypedAnswer = (): (event: RunEvent) => ReadonlyArray<RunEvent> => {
  let held: Array<RunEvent> = []
  return (event) => {
    if (!isOwn(event)) return [event]
    switch (event._tag) {
      case "AnswerDelta":
        held.push(event)
        return []
      case "AnswerReset":
        held = []
        return []
      case "AnswerDone": {
        const out = [...held, event]
        held = []
        return out
      }
      default:
        return [event]
    }
  }
}
