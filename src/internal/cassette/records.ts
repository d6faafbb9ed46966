/**
 * The records a cassette lists besides its input and events: the model calls
 * (request, reply or deltas, error), the executions of tool handlers, the tools
 * as the run had them, the interrupt drains and the approval decisions. Each is
 * re-exported by Cassette.ts, which documents it; the document around them (its
 * format, version, decoding and upgrades) is Cassette.ts's own.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import { ChatResponseSchema, LlmErrorReason } from "../../Llm.js"
import { ChatMessage } from "../../Message.js"
import { Usage } from "../../Usage.js"

/** Any JSON value, stored as it was (arguments, schemas, options, tool outputs). */
export const Json = Schema.Unknown

/** A request as the model received it (`Llm.ChatRequest`). */
export const ChatRequest = Schema.Struct({
  messages: Schema.Array(ChatMessage),
  tools: Schema.optional(Schema.Array(Json)),
  toolChoice: Schema.optional(Json),
  responseFormat: Schema.optional(Json),
  temperature: Schema.optional(Schema.Number),
  maxTokens: Schema.optional(Schema.Number)
})

/** One piece of a streamed reply (`Llm.ChatDelta`). */
export const ChatDelta = Schema.Union(
  Schema.TaggedStruct("Content", { text: Schema.String }),
  Schema.TaggedStruct("Reasoning", { text: Schema.String }),
  Schema.TaggedStruct("ToolCall", {
    index: Schema.Number,
    id: Schema.optional(Schema.String),
    name: Schema.optional(Schema.String),
    arguments: Schema.optional(Schema.String)
  }),
  Schema.TaggedStruct("Usage", { usage: Usage }),
  Schema.TaggedStruct("Finish", { reason: Schema.NullOr(Schema.String) })
)

/** A model call's failure. */
export const ModelError = Schema.Struct({
  reason: LlmErrorReason,
  message: Schema.String,
  status: Schema.optional(Schema.Number)
})

/** One model call: `chat` (a whole reply) or `stream` (its deltas, then perhaps the error that cut the stream). */
export const ModelCall = Schema.Struct({
  method: Schema.Literal("chat", "stream"),
  request: ChatRequest,
  reply: Schema.optional(ChatResponseSchema),
  deltas: Schema.optional(Schema.Array(ChatDelta)),
  error: Schema.optional(ModelError)
})
export type ModelCall = typeof ModelCall.Type

/**
 * How a tool handler ended — the handler's `Exit`, not the call's outcome
 * (`Tool.ToolOutcome`): its output unchecked, a `ToolError` message, a defect,
 * or interrupted.
 */
export const ToolOutcome = Schema.Union(
  Schema.TaggedStruct("Success", { output: Json }),
  Schema.TaggedStruct("Failure", { message: Schema.String }),
  Schema.TaggedStruct("Die", { message: Schema.String }),
  Schema.TaggedStruct("Interrupted", {})
)
export type ToolOutcome = typeof ToolOutcome.Type

/** One execution of a tool handler. */
export const ToolCall = Schema.Struct({
  iteration: Schema.Number,
  tool_call_id: Schema.optional(Schema.String),
  tool_name: Schema.String,
  args: Json,
  outcome: ToolOutcome
})
export type ToolCall = typeof ToolCall.Type

/** A tool as the run had it. */
export const ToolSpec = Schema.Struct({
  name: Schema.String,
  description: Schema.String,
  parameters: Schema.Record({ key: Schema.String, value: Json }),
  read_only: Schema.Boolean,
  pinned: Schema.Boolean,
  idempotent: Schema.Boolean,
  /** The tool's own timeout, when it has one. */
  timeout_ms: Schema.optional(Schema.Number),
  /** `conditional`: a check of the arguments decided (replay asks where the recorded run asked). */
  needs_approval: Schema.Literal("never", "always", "conditional")
})
export type ToolSpec = typeof ToolSpec.Type

/** What one drain of the interrupt queue took. */
export const Drain = Schema.Struct({
  items: Schema.Array(Schema.Struct({ id: Schema.String, content: Schema.String }))
})

/** A person's decision on a call that waited for approval. */
export const ApprovalDecision = Schema.Struct({
  tool_call_id: Schema.optional(Schema.String),
  tool_name: Schema.optional(Schema.String),
  iteration: Schema.optional(Schema.Number),
  decision: Schema.Literal("approve", "deny"),
  reason: Schema.optional(Schema.String)
})
export type ApprovalDecision = typeof ApprovalDecision.Type
