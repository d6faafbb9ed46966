/**
 * The ephemeral events (re-exported by RunEvent.ts): a tool's progress and a
 * typed answer's partial value — live followers only, never stored; and how a
 * collected run reports its failure (a typed answer's included).
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import { agent, step_id } from "./fields.js"

/**
 * A tool reports how far it is (`Tool.progress`, an MCP server's
 * `notifications/progress`): `progress` is a fraction from 0 to 1 when the tool
 * knows one. Ephemeral (`isEphemeral`): live followers only, never stored.
 *
 * @since 0.1.0
 * @category models
 */
export const ToolProgress = Schema.TaggedStruct("ToolProgress", {
  iteration: Schema.Number,
  tool_name: Schema.String,
  tool_call_id: Schema.optional(Schema.String),
  message: Schema.String,
  progress: Schema.optional(Schema.Number),
  step_id,
  agent
})

/**
 * A schema-bound answer as parsed so far (`RunInput.output`): the deep-partial
 * value of the JSON streamed until now. Ephemeral (`isEphemeral`); the decoded
 * value is `Done.output`.
 *
 * @since 0.1.0
 * @category models
 */
export const OutputPartial = Schema.TaggedStruct("OutputPartial", { value: Schema.Unknown, agent })

/**
 * Why a run failed, as `RunResult.error` reports it: `code` `output_invalid`
 * when its typed answer did not validate, `value` then the last value shown.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunError {
  readonly message: string
  readonly retryable: boolean
  readonly code?: string
  readonly value?: unknown
}
