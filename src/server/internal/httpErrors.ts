/**
 * The API's errors as tagged errors, one class per status (`ApiError` re-exports
 * them; their responses are built there, by `ApiError.toResponse`).
 *
 * @internal
 */
import * as Schema from "effect/Schema"

/**
 * One invalid field.
 *
 * @since 0.1.0
 * @category models
 */
export interface Issue {
  /** Dotted path of the field (`max_iterations`, `messages.0.role`), `""` for the body itself. */
  readonly path: string
  readonly message: string
}

/**
 * 400: invalid JSON or fields.
 *
 * @since 0.1.0
 * @category errors
 */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  issues: Schema.Array(Schema.Struct({ path: Schema.String, message: Schema.String }))
}) {
  override get message(): string {
    return this.issues.map((i) => (i.path ? `${i.path}: ${i.message}` : i.message)).join("; ")
  }
}

/**
 * 401.
 *
 * @since 0.1.0
 * @category errors
 */
export class Unauthorized extends Schema.TaggedError<Unauthorized>()("Unauthorized", {}) {}

/**
 * 404: unknown conversation (or no run to replay).
 *
 * @since 0.1.0
 * @category errors
 */
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", {
  code: Schema.Literal("conversation_not_found", "no_active_execution", "no_run", "run_not_found", "event_not_found"),
  conversationId: Schema.String,
  /** The run and the event id (`run_not_found`, `event_not_found`). */
  runId: Schema.optional(Schema.String),
  at: Schema.optional(Schema.Number)
}) {}

/**
 * 422: a run that cannot be forked (a DAG run).
 *
 * @since 0.1.0
 * @category errors
 */
export class NotForkable extends Schema.TaggedError<NotForkable>()("NotForkable", {
  runId: Schema.String,
  reason: Schema.String
}) {}

/**
 * 409: the conversation already has an active run.
 *
 * @since 0.1.0
 * @category errors
 */
export class RunInProgress extends Schema.TaggedError<RunInProgress>()("RunInProgress", {
  conversationId: Schema.String
}) {}

/**
 * 413.
 *
 * @since 0.1.0
 * @category errors
 */
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  limit: Schema.Number
}) {}

/**
 * 415: a body-carrying route got a body that is not `application/json`.
 *
 * @since 0.1.0
 * @category errors
 */
export class UnsupportedMediaType extends Schema.TaggedError<UnsupportedMediaType>()("UnsupportedMediaType", {
  contentType: Schema.String
}) {}

/**
 * 403: a browser request from an origin that is neither the server's own nor in
 * `CORS_ORIGINS`.
 *
 * @since 0.1.0
 * @category errors
 */
export class OriginNotAllowed extends Schema.TaggedError<OriginNotAllowed>()("OriginNotAllowed", {
  origin: Schema.String
}) {}

/**
 * 421: a `Host` the server does not answer for (DNS rebinding: a loopback server
 * reached under an attacker's name).
 *
 * @since 0.1.0
 * @category errors
 */
export class HostNotAllowed extends Schema.TaggedError<HostNotAllowed>()("HostNotAllowed", {
  host: Schema.String
}) {}

/**
 * 503 with `Retry-After`: this instance already executes `REACT_MAX_ACTIVE_RUNS`
 * runs and `REACT_RUN_QUEUE` more wait their turn.
 *
 * @since 0.1.0
 * @category errors
 */
export class Overloaded extends Schema.TaggedError<Overloaded>()("Overloaded", {
  retryAfterSeconds: Schema.Number
}) {}

/**
 * 500: storage failure and other server-side errors.
 *
 * @since 0.1.0
 * @category errors
 */
export class InternalError extends Schema.TaggedError<InternalError>()("InternalError", {
  message: Schema.String
}) {}
