/**
 * What a tool gives back: its output (text or a rich result with artifacts)
 * and the outcome of a call. Re-exported by `Tool` (the docs are there).
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import { FilePart } from "../../Message.js"
import { Usage } from "../../Usage.js"

export const Artifact = Schema.Struct({
  name: Schema.String,
  path: Schema.optional(Schema.String),
  url: Schema.optional(Schema.String),
  mimeType: Schema.String,
  size: Schema.optional(Schema.Number)
})
export type Artifact = typeof Artifact.Type

export const ContentType = Schema.Literal("text", "html", "markdown", "json")
export type ContentType = typeof ContentType.Type

/**
 * A tool result with a content type and artifacts (files the UI can preview or
 * download). `usage`: LLM usage the tool spent producing it (an agent used as a
 * tool reports its sub-run's); the run counts it in `by_phase.subagents`.
 * `files`: attachments the model is to see (docs/attachments.md).
 */
export const RichResult = Schema.Struct({
  content: Schema.String,
  contentType: ContentType,
  artifacts: Schema.optional(Schema.Array(Artifact)),
  usage: Schema.optional(Usage),
  files: Schema.optional(Schema.Array(FilePart))
})
export type RichResult = typeof RichResult.Type

/**
 * What a handler returns: text, or a rich result.
 */
export const ToolOutput = Schema.Union(Schema.String, RichResult)
export type ToolOutput = typeof ToolOutput.Type

/** How a tool call came out: the tool's checked output, or a failure message. */
export const ToolOutcome = Schema.Union(
  Schema.TaggedStruct("Success", { output: ToolOutput }),
  Schema.TaggedStruct("Failure", { message: Schema.String })
)
export type ToolOutcome = typeof ToolOutcome.Type

/** Normalises a handler's output to a rich result. */
export const toRich = (output: ToolOutput): RichResult =>
  typeof output === "string" ? { content: output, contentType: "text" } : output
