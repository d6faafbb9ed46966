/**
 * HTTP errors of the API as tagged errors, each with its status and JSON body
 * (`{error, message, …}`), plus the request guards every `/api` route uses:
 * bearer-token auth, the body-size limit and Schema decoding of JSON bodies.
 *
 * @since 0.1.0
 */
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type { AttachmentError } from "../Attachments.js"
import * as internal from "./internal/apiError.js"
import {
  InternalError,
  InvalidRequest,
  PayloadTooLarge,
  Unauthorized,
  UnsupportedMediaType
} from "./internal/httpErrors.js"
import type {
  HostNotAllowed,
  Issue,
  NotForkable,
  NotFound,
  OriginNotAllowed,
  Overloaded,
  RunInProgress
} from "./internal/httpErrors.js"
import * as Users from "./internal/users.js"

// The error classes, defined beside this module (their docs are there)
export {
  HostNotAllowed,
  InternalError,
  InvalidRequest,
  type Issue,
  NotForkable,
  NotFound,
  OriginNotAllowed,
  Overloaded,
  PayloadTooLarge,
  RunInProgress,
  Unauthorized,
  UnsupportedMediaType
} from "./internal/httpErrors.js"

/**
 * @since 0.1.0
 * @category errors
 */
export type ApiError =
  | InvalidRequest
  | Unauthorized
  | NotFound
  | NotForkable
  | RunInProgress
  | PayloadTooLarge
  | UnsupportedMediaType
  | OriginNotAllowed
  | HostNotAllowed
  | Overloaded
  | InternalError
  | AttachmentError
  | Users.InvalidUserId
  | Users.ConversationUserMismatch

const notFoundMessage = {
  conversation_not_found: "Unknown conversation",
  no_active_execution: "No active run for this conversation",
  no_run: "No run to replay for this conversation",
  run_not_found: "No such run in this conversation",
  event_not_found: "No such event in this run"
} as const

/**
 * The JSON response of an API error.
 *
 * @since 0.1.0
 * @category conversions
 */
export const toResponse = (error: ApiError): HttpServerResponse.HttpServerResponse => {
  switch (error._tag) {
    case "InvalidRequest":
      return HttpServerResponse.unsafeJson(
        { error: "invalid_request", message: error.message, issues: error.issues },
        { status: 400 }
      )
    case "Unauthorized":
      return HttpServerResponse.unsafeJson(
        { error: "unauthorized", message: "Missing or invalid bearer token" },
        { status: 401, headers: { "www-authenticate": "Bearer" } }
      )
    case "NotFound":
      return HttpServerResponse.unsafeJson(
        {
          error: error.code,
          message: notFoundMessage[error.code],
          conversation_id: error.conversationId,
          ...(error.runId !== undefined ? { run_id: error.runId } : {}),
          ...(error.at !== undefined ? { at: error.at } : {})
        },
        { status: 404 }
      )
    case "NotForkable":
      return HttpServerResponse.unsafeJson({ error: "not_forkable", message: error.reason, run_id: error.runId }, {
        status: 422
      })
    case "RunInProgress":
      return HttpServerResponse.unsafeJson(
        {
          error: "run_in_progress",
          message: "This conversation already has an active run",
          conversation_id: error.conversationId
        },
        { status: 409 }
      )
    case "PayloadTooLarge":
      return HttpServerResponse.unsafeJson(
        { error: "payload_too_large", message: `Request body exceeds ${error.limit} bytes`, limit: error.limit },
        { status: 413, headers: { connection: "close" } }
      )
    case "UnsupportedMediaType":
      return HttpServerResponse.unsafeJson(
        { error: "unsupported_media_type", message: "The body must be JSON, sent with Content-Type: application/json" },
        { status: 415 }
      )
    case "OriginNotAllowed":
      return HttpServerResponse.unsafeJson(
        {
          error: "origin_not_allowed",
          message: "Cross-origin request refused (CORS_ORIGINS lists the allowed origins)"
        },
        { status: 403, headers: { vary: "Origin" } }
      )
    case "HostNotAllowed":
      return HttpServerResponse.unsafeJson(
        {
          error: "host_not_allowed",
          message: "This server does not answer for that Host (ALLOWED_HOSTS lists extra names)"
        },
        { status: 421 }
      )
    case "Overloaded":
      return HttpServerResponse.unsafeJson(
        { error: "overloaded", message: "Too many runs: try again later", retry_after: error.retryAfterSeconds },
        { status: 503, headers: { "retry-after": String(error.retryAfterSeconds) } }
      )
    case "InternalError":
      return HttpServerResponse.unsafeJson({ error: "internal_error", message: error.message }, { status: 500 })
    case "AttachmentError":
      return internal.attachmentResponse(error)
    case "InvalidUserId":
    case "ConversationUserMismatch":
      return Users.toResponse(error)
  }
}

/**
 * Turns every `ApiError` of a handler into its response.
 *
 * @since 0.1.0
 * @category combinators
 */
export const handle = <R>(
  effect: Effect.Effect<HttpServerResponse.HttpServerResponse, ApiError, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, R> =>
  effect.pipe(
    Effect.catchAll((error) => Effect.succeed(toResponse(error))),
    // a defect (a database that refused a statement, a bug) is a logged 500 with a JSON body, never an empty one
    Effect.catchAllDefect((defect) =>
      Effect.logError("request failed", Cause.die(defect)).pipe(
        Effect.as(toResponse(new InternalError({ message: "Internal error: the server's log has the details" })))
      )
    )
  )

/**
 * Checks `Authorization: Bearer <token>` (or `?access_token=` for a browser
 * `EventSource`, which cannot set headers) when a token is configured.
 *
 * @since 0.1.0
 * @category guards
 */
export const authorize = (
  token: Option.Option<Redacted.Redacted<string>>
): Effect.Effect<void, Unauthorized, HttpServerRequest.HttpServerRequest> =>
  Option.match(token, {
    onNone: () => Effect.void,
    onSome: (secret) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const expected = Redacted.value(secret)
        const header = request.headers["authorization"] ?? ""
        const match = /^Bearer\s+(.+)$/i.exec(header.trim())
        if (match && internal.sameSecret(match[1].trim(), expected)) return Effect.void
        const query = new URL(request.url, "http://localhost").searchParams.get("access_token")
        if (query !== null && internal.sameSecret(query, expected)) return Effect.void
        return Effect.fail(new Unauthorized())
      })
  })

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false })

/**
 * Reads the body as text, rejecting bodies over `limit` bytes with 413: first by
 * `Content-Length`, then while reading (chunked bodies). The rest of an over-limit
 * body is drained, not stored, so the client gets the 413 instead of a reset.
 * Bytes that are not UTF-8 are a 400.
 *
 * @since 0.1.0
 * @category guards
 */
export const readBody = (
  limit: number
): Effect.Effect<string, PayloadTooLarge | InvalidRequest, HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const declared = Number(request.headers["content-length"] ?? NaN)
    if (Number.isFinite(declared) && declared > limit) {
      return yield* Effect.fail(new PayloadTooLarge({ limit }))
    }
    const { bytes, size } = yield* internal.readBounded(request.stream, limit).pipe(
      Effect.catchAll(() =>
        Effect.fail(new InvalidRequest({ issues: [{ path: "", message: "Could not read the request body" }] }))
      )
    )
    if (size > limit) return yield* Effect.fail(new PayloadTooLarge({ limit }))
    try {
      return utf8.decode(bytes)
    } catch {
      return yield* Effect.fail(new InvalidRequest({ issues: [{ path: "", message: "The body is not valid UTF-8" }] }))
    }
  })

/**
 * The failing fields of a decoding error, with dotted paths.
 *
 * @since 0.1.0
 * @category conversions
 */
export const formatIssues: (error: ParseResult.ParseError) => Array<Issue> = internal.formatIssues

/**
 * Request bodies nest no deeper than this (deeper input is a 400, before any decoding).
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_JSON_DEPTH = 32

/**
 * `Content-Type: application/json` (parameters such as `charset` allowed), else 415.
 * Browsers send `text/plain`, form and multipart bodies across origins without a
 * CORS preflight; a JSON body cannot be sent that way.
 *
 * @since 0.1.0
 * @category guards
 */
export const requireJson: Effect.Effect<void, UnsupportedMediaType, HttpServerRequest.HttpServerRequest> = Effect
  .flatMap(
    HttpServerRequest.HttpServerRequest,
    (request) => {
      const contentType = request.headers["content-type"] ?? ""
      return contentType.split(";")[0].trim().toLowerCase() === "application/json"
        ? Effect.void
        : Effect.fail(new UnsupportedMediaType({ contentType }))
    }
  )

/**
 * Reads, parses and decodes a JSON body: 415 when it is not sent as JSON, 413 when
 * too large, 400 with the failing fields when the JSON or a field is invalid.
 *
 * @since 0.1.0
 * @category guards
 */
export const decodeBody = <A, I>(
  schema: Schema.Schema<A, I>,
  limit: number
): Effect.Effect<A, PayloadTooLarge | InvalidRequest | UnsupportedMediaType, HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function*() {
    yield* requireJson
    const text = yield* readBody(limit)
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (e) {
      return yield* Effect.fail(
        new InvalidRequest({ issues: [{ path: "", message: `Invalid JSON body: ${(e as Error).message}` }] })
      )
    }
    if (json === null || typeof json !== "object" || Array.isArray(json)) {
      return yield* Effect.fail(
        new InvalidRequest({ issues: [{ path: "", message: "The body must be a JSON object" }] })
      )
    }
    // too deep, or text no database can store (U+0000, unpaired surrogates: refused alike on SQLite and PostgreSQL)
    const issue = internal.bodyIssue(json, MAX_JSON_DEPTH)
    if (issue !== undefined) return yield* Effect.fail(new InvalidRequest({ issues: [issue] }))
    return yield* Schema.decodeUnknown(schema, { errors: "all", onExcessProperty: "ignore" })(json).pipe(
      Effect.mapError((error) => new InvalidRequest({ issues: formatIssues(error) }))
    )
  })
