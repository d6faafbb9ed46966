/**
 * Uploads (docs/attachments.md): `POST /api/attachments` stores a file once and answers
 * `201 {attachment_id, media_type, size, sha256, name}` (+ `width`/`height`,
 * `pages` when known) — the body is the raw bytes (`Content-Type` = the media
 * type, `?name=`), or `multipart/form-data` with a `file` field (the
 * platform's multipart parser, bounded by `REACT_MAX_ATTACHMENT_BYTES`). The
 * same bytes give the same `attachment_id` (their SHA-256), which
 * `POST /api/react`'s `attachments: [{attachment_id}]` takes.
 * `GET /api/attachments/:id` serves the bytes back (the page's thumbnails of a
 * stored conversation), sandboxed.
 *
 * Refusals name the problem: 415 `unsupported_media_type`, 413
 * `attachment_too_large` (checked by `Content-Length` before reading, then
 * while reading), 400 `invalid_attachment`, 404 `attachment_not_found`.
 *
 * @since 0.1.0
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Multipart from "@effect/platform/Multipart"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Attachments from "../Attachments.js"
import type { FileRef } from "../Message.js"
import * as ApiError from "./ApiError.js"
import { readBounded } from "./internal/apiError.js"
import * as ServerConfig from "./ServerConfig.js"

const tooLarge = (limit: number) =>
  new Attachments.AttachmentError({
    code: "attachment_too_large",
    field: "file",
    message: `file: over the limit of ${limit} bytes per attachment (REACT_MAX_ATTACHMENT_BYTES)`,
    limit
  })

const invalid = (field: string, message: string) =>
  new Attachments.AttachmentError({ code: "invalid_attachment", field, message: `${field}: ${message}` })

/**
 * The raw body's bytes, at most `limit`. A longer body is read to its end and
 * dropped (not kept): a browser that is still sending gets the 413, not a reset
 * connection.
 */
const rawBytes = (limit: number) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const { bytes, size } = yield* Effect.mapError(
      readBounded(request.stream, limit),
      () => invalid("file", "the body could not be read")
    )
    if (size > limit) return yield* tooLarge(limit)
    return new Uint8Array(bytes)
  })

interface Upload {
  readonly bytes: Uint8Array
  readonly mediaType: string | undefined
  readonly name: string | undefined
}

type ReceivedFile = {
  readonly key: string
  readonly name: string
  readonly contentType: string
  readonly bytes: Uint8Array
}
type Received = ReceivedFile | { readonly key: string; readonly value: string }

/** The `file` field of a multipart body (and a `name` field, if any). */
const multipartFile = (limit: number) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const declared = Number(request.headers["content-length"] ?? NaN)
    // the other fields and the multipart framing get a little room beyond the file
    if (Number.isFinite(declared) && declared > limit + 65_536) return yield* tooLarge(limit)
    const parts = yield* request.multipartStream.pipe(
      Stream.mapEffect((part): Effect.Effect<Received, Multipart.MultipartError> =>
        Multipart.isFile(part)
          ? Effect.map(
            part.contentEffect,
            (bytes) => ({ key: part.key, name: part.name, contentType: part.contentType, bytes })
          )
          : Effect.succeed({ key: part.key, value: (part as Multipart.Field).value })
      ),
      Stream.runCollect,
      Multipart.withLimits({
        maxParts: Option.some(8),
        maxFieldSize: 4096,
        maxFileSize: Option.some(limit),
        maxTotalSize: Option.some(limit + 65_536)
      }),
      Effect.mapError((e: Multipart.MultipartError) =>
        e.reason === "FileTooLarge" || e.reason === "BodyTooLarge"
          ? tooLarge(limit)
          : invalid("file", `malformed multipart body (${e.reason})`)
      )
    )
    const all: ReadonlyArray<Received> = Chunk.toReadonlyArray(parts)
    const files = all.filter((p): p is ReceivedFile => "bytes" in p && p.key === "file")
    const nameField = all.find((p): p is { readonly key: string; readonly value: string } =>
      "value" in p && p.key === "name"
    )
    if (files.length !== 1) {
      return yield* invalid(
        "file",
        files.length === 0 ? "missing: send the file in a `file` field" : "send one file per upload"
      )
    }
    return {
      bytes: files[0].bytes,
      mediaType: files[0].contentType,
      name: nameField?.value ?? files[0].name
    } satisfies Upload
  })

/** The JSON an upload is answered with. */
export const uploaded = (ref: FileRef) => ({
  attachment_id: ref.sha256,
  media_type: ref.media_type,
  size: ref.size,
  sha256: ref.sha256,
  name: ref.name,
  ...(ref.width !== undefined ? { width: ref.width, height: ref.height } : {}),
  ...(ref.pages !== undefined ? { pages: ref.pages } : {})
})

/**
 * `POST /api/attachments` and `GET /api/attachments/:id` as one router layer
 * (mounted by `Server.Routes`). Needs `ServerConfig` and the `Attachments` store.
 *
 * @since 0.1.0
 * @category layers
 */
export const AttachmentRoutes = HttpLayerRouter.use((router) =>
  Effect.gen(function*() {
    const settings = yield* ServerConfig.ServerConfig
    const store = yield* Attachments.Attachments
    const guard = ApiError.authorize(settings.apiToken)
    const limit = settings.maxAttachmentBytes

    yield* router.add(
      "POST",
      "/api/attachments",
      ApiError.handle(Effect.zipRight(
        guard,
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const contentType = request.headers["content-type"] ?? ""
          const multipart = contentType.split(";")[0].trim().toLowerCase() === "multipart/form-data"
          const query = new URL(request.url, "http://localhost").searchParams
          const upload: Upload = multipart
            ? yield* multipartFile(limit)
            : {
              bytes: yield* rawBytes(limit),
              mediaType: contentType || undefined,
              name: query.get("name") ?? undefined
            }
          const ref = yield* store.put(upload.bytes, {
            mediaType: upload.mediaType,
            name: upload.name,
            field: multipart ? "file" : "body",
            typeField: multipart ? "file" : "Content-Type"
          })
          return HttpServerResponse.unsafeJson(uploaded(ref), { status: 201 })
        })
      ))
    )

    yield* router.add(
      "GET",
      "/api/attachments/:id",
      ApiError.handle(Effect.zipRight(
        guard,
        Effect.gen(function*() {
          const id = (yield* HttpLayerRouter.params).id ?? ""
          if (!/^[0-9a-f]{64}$/.test(id)) return yield* invalid("id", "expected an attachment id (64 hex digits)")
          const row = yield* store.get(id)
          return HttpServerResponse.uint8Array(row.bytes, {
            contentType: row.ref.media_type,
            headers: {
              "content-disposition": `inline; filename*=UTF-8''${encodeURIComponent(row.ref.name)}`,
              "x-content-type-options": "nosniff",
              // served from the page's origin: nothing in it may run
              "content-security-policy": "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'",
              "cache-control": "private, max-age=31536000, immutable"
            }
          })
        })
      ))
    )
  })
)
