/**
 * What `ApiError` is built from: reading a body within a limit, the failing
 * fields of a decoding error, the checks run on a body before any decoding,
 * the responses of attachment refusals, and the constant-time comparison of
 * the API token.
 *
 * @internal
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as ParseResult from "effect/ParseResult"
import * as Stream from "effect/Stream"
import { timingSafeEqual } from "node:crypto"
import type { AttachmentError } from "../../Attachments.js"
import type { Issue } from "./httpErrors.js"
import { unstorableText } from "./storableText.js"

/** The failing fields of a decoding error, with dotted paths (`ApiError.formatIssues`). */
export const formatIssues = (error: ParseResult.ParseError): Array<Issue> => {
  const byPath = new Map<string, Array<string>>()
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const path = issue.path.map(String).join(".")
    const messages = byPath.get(path) ?? []
    if (!messages.includes(issue.message)) messages.push(issue.message)
    byPath.set(path, messages)
  }
  return [...byPath].map(([path, messages]) => {
    // `Schema.optional` adds "Expected undefined" next to the real complaint
    const useful = messages.filter((m) => !m.startsWith("Expected undefined"))
    return { path, message: (useful.length > 0 ? useful : messages).join("; ") }
  })
}

/** The path of the first value nested deeper than `max` levels, if any (iterative: no stack overflow). */
export const tooDeep = (root: unknown, max: number): string | undefined => {
  const stack: Array<readonly [unknown, number, string]> = [[root, 1, ""]]
  while (stack.length > 0) {
    const [value, depth, path] = stack.pop()!
    if (value === null || typeof value !== "object") continue
    if (depth > max) return path
    for (const [key, child] of Object.entries(value)) {
      stack.push([child, depth + 1, path === "" ? key : `${path}.${key}`])
    }
  }
  return undefined
}

/** The first problem of a parsed JSON body that no schema should see: nested too deep, or text no database can store. */
export const bodyIssue = (
  root: unknown,
  max: number
): { readonly path: string; readonly message: string } | undefined => {
  const deep = tooDeep(root, max)
  return deep !== undefined ? { path: deep, message: `JSON nested deeper than ${max} levels` } : unstorableText(root)
}

const ATTACHMENT_STATUS = {
  unsupported_media_type: 415,
  attachment_too_large: 413,
  too_many_attachments: 400,
  invalid_attachment: 400,
  attachment_not_found: 404,
  storage_failed: 500
} as const

/** The status of an attachment refusal (`Attachments.AttachmentError.code`). @internal */
export const attachmentStatus = (code: keyof typeof ATTACHMENT_STATUS): number => ATTACHMENT_STATUS[code]

/** An attachment refusal: `{error: code, message, field?, limit?}` with its status. @internal */
export const attachmentResponse = (error: AttachmentError) =>
  HttpServerResponse.unsafeJson(
    {
      error: error.code,
      message: error.message,
      ...(error.field !== undefined ? { field: error.field } : {}),
      ...(error.limit !== undefined ? { limit: error.limit } : {})
    },
    {
      status: ATTACHMENT_STATUS[error.code],
      ...(error.code === "attachment_too_large" ? { headers: { connection: "close" } } : {})
    }
  )

/** Two secrets compared in constant time (`ApiError.authorize`). */
export const sameSecret = (given: string, expected: string): boolean => {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * A body read to its end, keeping at most `limit` bytes: `size` is what came,
 * `bytes` what was kept (all of it when `size <= limit`). The rest of a longer
 * body is dropped, not stored, so the client gets the 413 instead of a reset.
 */
export const readBounded = <E, R>(
  body: Stream.Stream<Uint8Array, E, R>,
  limit: number
): Effect.Effect<{ readonly size: number; readonly bytes: Buffer }, E, R> =>
  Effect.suspend(() => {
    const state = { size: 0, chunks: [] as Array<Uint8Array> }
    return Effect.map(
      Stream.runForEach(body, (chunk) =>
        Effect.sync(() => {
          state.size += chunk.length
          if (state.size <= limit) state.chunks.push(chunk)
        })),
      () => ({ size: state.size, bytes: Buffer.concat(state.chunks) })
    )
  })
