/**
 * Request bodies of the HTTP API, as Effect Schemas (decoded before any lookup).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { Mode } from "../DagAgent.js"
import * as AttachmentInput from "./internal/attachmentInput.js"
import { OutputSchema } from "./internal/outputSchema.js"

/**
 * Longest accepted query / injected message, in characters.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_TEXT_CHARS = 100_000

/**
 * Conversation ids: 1–128 chars of letters, digits, `_ - . :`, but not `.` or `..`
 * (browsers rewrite those path segments, so `/api/conversations/..` could never be
 * read back).
 *
 * @since 0.1.0
 * @category models
 */
export const ConversationId = Schema.String.pipe(
  Schema.pattern(/^[A-Za-z0-9_.:-]{1,128}$/, {
    message: () => "Expected 1-128 characters of letters, digits, '_', '-', '.', ':'"
  }),
  Schema.filter((id) => id !== "." && id !== "..", { message: () => "'.' and '..' are not conversation ids" })
)

const Text = (what: string) =>
  Schema.String.pipe(
    Schema.filter((s) => s.trim().length > 0, { message: () => `${what} must not be empty` }),
    Schema.maxLength(MAX_TEXT_CHARS, { message: () => `${what} is longer than ${MAX_TEXT_CHARS} characters` })
  )

/**
 * A run's cap on loop LLM calls: `max_iterations` (and the CLI's `--max-iterations`).
 *
 * @since 0.1.0
 * @category models
 */
export const MaxIterations = Schema.Int.pipe(
  Schema.between(1, 200, { message: () => "Expected an integer between 1 and 200" })
)

/**
 * `POST /api/react`.
 *
 * @since 0.1.0
 * @category models
 */
export const ReactRequest = Schema.Struct({
  query: Text("query"),
  conversation_id: Schema.optional(ConversationId),
  max_iterations: Schema.optional(MaxIterations),
  /** `react`, `dag` or `auto`; default `REACT_DEFAULT_MODE`. */
  mode: Schema.optional(Mode),
  /** A JSON Schema (an object root, ≤ 64 KB): the answer is a value of it (`done.output`). */
  output_schema: Schema.optional(OutputSchema),
  /** Images and files (docs/attachments.md): `{media_type, data, name?}` (base64), `{url, media_type?, name?}`, `{attachment_id, name?}`. */
  attachments: Schema.optional(Schema.Array(AttachmentInput.ReactAttachment)),
  /** The user (docs/memory.md), checked by the route (400 `invalid_user_id`). */
  user_id: Schema.optional(Schema.Unknown)
})
/**
 * @since 0.1.0
 * @category models
 */
export type ReactRequest = typeof ReactRequest.Type

/**
 * `POST /api/react/inject`.
 *
 * @since 0.1.0
 * @category models
 */
export const InjectRequest = Schema.Struct({ conversation_id: ConversationId, content: Text("content") })

/**
 * `POST /api/react/inject/recall`.
 *
 * @since 0.1.0
 * @category models
 */
export const RecallRequest = Schema.Struct({ conversation_id: ConversationId, id: Schema.String })

/**
 * `POST /api/react/cancel`.
 *
 * @since 0.1.0
 * @category models
 */
export const CancelRequest = Schema.Struct({ conversation_id: ConversationId })

/**
 * `POST /api/react/approve`: a person's answer to a tool call waiting for
 * approval. `tool_call_id` and `args_hash`, when given, must be the
 * call's (the page sends what it showed), else 409 `approval_mismatch`.
 *
 * @since 0.1.0
 * @category models
 */
export const ApproveRequest = Schema.Struct({
  conversation_id: ConversationId,
  approval_id: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  decision: Schema.Literal("approve", "deny"),
  reason: Schema.optional(
    Schema.String.pipe(Schema.maxLength(2000, { message: () => "reason is longer than 2000 characters" }))
  ),
  tool_call_id: Schema.optional(Schema.String.pipe(Schema.maxLength(200))),
  args_hash: Schema.optional(
    Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}$/, { message: () => "Expected a SHA-256 in lowercase hex" }))
  )
})

/**
 * `POST /api/react/budget`: a person's answer to a run waiting for more budget
 * (policy `ask`): `extend` by `add_usd`, or `stop`.
 *
 * @since 0.1.0
 * @category models
 */
export const BudgetRequest = Schema.Union(
  Schema.Struct({
    conversation_id: ConversationId,
    decision: Schema.Literal("extend"),
    add_usd: Schema.Number.pipe(
      Schema.positive(),
      Schema.lessThanOrEqualTo(1_000_000, {
        message: () => "add_usd must be a positive amount of USD, at most 1000000"
      })
    )
  }),
  Schema.Struct({ conversation_id: ConversationId, decision: Schema.Literal("stop") })
)

/**
 * The message of an invalid cursor (`after=`, `Last-Event-ID`).
 *
 * @since 0.1.0
 * @category constants
 */
export const CURSOR_MESSAGE =
  "Expected a non-negative decimal integer (digits only, no sign, exponent or leading zeros)"

/**
 * An event cursor (`after=`, `Last-Event-ID`): a plain non-negative decimal
 * integer up to `Number.MAX_SAFE_INTEGER` — `0`, `42`; not `0x10`, `1e3`, `+1`,
 * `01`, `1.0` or `-1` (which `Number()` would read as some other cursor).
 *
 * @since 0.1.0
 * @category models
 */
export const Cursor = Schema.String.pipe(
  Schema.filter((s) => /^(0|[1-9][0-9]{0,15})$/.test(s) && Number(s) <= Number.MAX_SAFE_INTEGER, {
    message: () => CURSOR_MESSAGE
  }),
  Schema.compose(Schema.NumberFromString)
)

/**
 * `GET /api/react/events` query parameters.
 *
 * @since 0.1.0
 * @category models
 */
export const EventsQuery = Schema.Struct({
  conversation_id: ConversationId,
  after: Schema.optional(Cursor)
})

/**
 * `POST /api/conversations/:id/fork`: the run to fork (default: the
 * conversation's latest), the event id of that run to fork at (default: its
 * last event) — or the tool call whose `iteration done` event it is — and a
 * query that replaces the run's (default: the same query).
 *
 * @since 0.1.0
 * @category models
 */
export const ForkRequest = Schema.Struct({
  run_id: Schema.optional(
    Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,128}$/, { message: () => "Expected a run id" }))
  ),
  at: Schema.optional(Schema.Int.pipe(Schema.positive({ message: () => "Expected an event id (a positive integer)" }))),
  tool_call_id: Schema.optional(Schema.String.pipe(Schema.minLength(1, { message: () => "Expected a tool call id" }))),
  replace_query: Schema.optional(Text("replace_query"))
})
