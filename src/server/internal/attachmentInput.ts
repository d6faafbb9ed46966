/**
 * Attachments as requests give them — inline base64 (or a `data:` URL), an
 * `https` URL, the id of an upload — checked all together, then stored: a
 * request with one bad attachment stores none (and starts no run). Refusals
 * are `AttachmentError`s naming the field (`attachments.1.data`).
 *
 * @internal
 */
import type * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Attachments from "../../Attachments.js"
import type { FileRef } from "../../Message.js"
import * as ApiError from "../ApiError.js"

/** One attachment of a request, with the field it came in (for an id: the id's own field). */
export type Spec =
  | {
    readonly _tag: "Inline"
    readonly field: string
    readonly data: string
    readonly mediaType?: string | undefined
    readonly name?: string | undefined
  }
  | {
    readonly _tag: "Url"
    readonly field: string
    readonly url: string
    readonly mediaType?: string | undefined
    readonly name?: string | undefined
  }
  | { readonly _tag: "Id"; readonly field: string; readonly id: string; readonly name?: string | undefined }

/** `POST /api/react`'s `attachments` items. */
export const ReactAttachment = Schema.Union(
  Schema.Struct({
    media_type: Schema.optional(Schema.String),
    data: Schema.String,
    name: Schema.optional(Schema.String)
  }),
  Schema.Struct({
    url: Schema.String,
    media_type: Schema.optional(Schema.String),
    name: Schema.optional(Schema.String)
  }),
  Schema.Struct({ attachment_id: Schema.String, name: Schema.optional(Schema.String) })
)
export type ReactAttachment = typeof ReactAttachment.Type

/** The specs of `POST /api/react`'s `attachments`. */
export const fromReact = (items: ReadonlyArray<ReactAttachment>): ReadonlyArray<Spec> =>
  items.map((item, i): Spec => {
    const field = `attachments.${i}`
    if ("attachment_id" in item) {
      return { _tag: "Id", field: `${field}.attachment_id`, id: item.attachment_id, name: item.name }
    }
    if ("url" in item) {
      return { _tag: "Url", field, url: item.url, mediaType: item.media_type, name: item.name }
    }
    return { _tag: "Inline", field, data: item.data, mediaType: item.media_type, name: item.name }
  })

const DATA_URL = /^data:([^;,]*)(;[^,]*)?,(.*)$/s

/** A `data:` URL or an `https` URL as a spec (what `/v1` and `/api/chat` parts carry). */
export const fromUrl = (field: string, url: string, mediaType?: string, name?: string): Spec => {
  const data = DATA_URL.exec(url)
  if (data === null) return { _tag: "Url", field, url, mediaType, name }
  // a data URL that is not base64 is refused as such below (`;base64` missing)
  return {
    _tag: "Inline",
    field,
    data: (data[2] ?? "").includes(";base64") ? data[3] : "\u0000",
    mediaType: mediaType ?? (data[1] || undefined),
    name
  }
}

const refuse = (code: Attachments.AttachmentError["code"], field: string, message: string, limit?: number) =>
  new Attachments.AttachmentError({
    code,
    field,
    message: `${field}: ${message}`,
    ...(limit !== undefined ? { limit } : {})
  })

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** Base64 text as bytes, strictly (whitespace allowed, padding optional). */
const base64 = (text: string): Uint8Array | undefined => {
  const clean = text.replace(/\s+/g, "")
  if (!BASE64.test(clean) || clean.length % 4 === 1) return undefined
  return new Uint8Array(Buffer.from(clean, "base64"))
}

const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"]
const EXTENSION = /\.(png|jpe?g|gif|webp|pdf|txt|md|csv|json)$/i

/** What a URL attachment becomes: a reference to an image, sent to the model as given. */
const urlRef = (spec: Extract<Spec, { _tag: "Url" }>): Either.Either<FileRef, Attachments.AttachmentError> => {
  let url: URL
  try {
    url = new URL(spec.url)
  } catch {
    return Either.left(refuse("invalid_attachment", `${spec.field}.url`, "not a URL"))
  }
  if (url.protocol !== "https:") {
    return Either.left(refuse("invalid_attachment", `${spec.field}.url`, "must be an https URL (or send the bytes)"))
  }
  const fromPath = EXTENSION.exec(url.pathname)?.[1].toLowerCase()
  const declared = spec.mediaType !== undefined
    ? spec.mediaType.split(";")[0].trim().toLowerCase().replace("image/jpg", "image/jpeg")
    : fromPath !== undefined
    ? `image/${fromPath.replace("jpg", "jpeg")}`
    : "image/*"
  if (declared !== "image/*" && !IMAGE_TYPES.includes(declared)) {
    return Either.left(refuse(
      "unsupported_media_type",
      spec.mediaType !== undefined ? `${spec.field}.media_type` : `${spec.field}.url`,
      `a URL attachment must be an image (${IMAGE_TYPES.join(", ")}); got ${
        declared.replace(/^image\/(pdf|txt|md|csv|json)$/, ".$1")
      }`
    ))
  }
  const name = Attachments.cleanName(spec.name) ?? Attachments.cleanName(decodeURIComponent(url.pathname)) ??
    url.hostname
  return Either.right({ name, media_type: declared, url: url.toString() })
}

/** How an inline attachment is checked: a refused type names its `media_type`, anything else its `data`. */
const options = (spec: Extract<Spec, { _tag: "Inline" }>): Attachments.PutOptions => ({
  mediaType: spec.mediaType,
  name: spec.name,
  field: `${spec.field}.data`,
  typeField: `${spec.field}.media_type`
})

/** A checked attachment, not stored yet. */
type Checked =
  | { readonly _tag: "Bytes"; readonly bytes: Uint8Array; readonly spec: Extract<Spec, { _tag: "Inline" }> }
  | { readonly _tag: "Ref"; readonly ref: FileRef }

const check = (
  spec: Spec,
  store: Attachments.AttachmentsService
): Effect.Effect<Checked, Attachments.AttachmentError> => {
  switch (spec._tag) {
    case "Url":
      return Effect.map(urlRef(spec), (ref): Checked => ({ _tag: "Ref", ref }))
    case "Id": {
      if (!/^[0-9a-f]{64}$/.test(spec.id)) {
        return Effect.fail(refuse("invalid_attachment", spec.field, "expected an attachment id (64 hex digits)"))
      }
      return Effect.flatMap(
        store.stat(spec.id),
        Option.match({
          onNone: () => Effect.fail(refuse("attachment_not_found", spec.field, `no attachment ${spec.id}`)),
          onSome: (ref) => {
            const name = Attachments.cleanName(spec.name)
            return Effect.succeed<Checked>({ _tag: "Ref", ref: name === undefined ? ref : { ...ref, name } })
          }
        })
      )
    }
    case "Inline": {
      if (spec.mediaType === undefined || spec.mediaType.trim() === "") {
        return Effect.fail(
          refuse("invalid_attachment", `${spec.field}.media_type`, "missing: the media type of the data is required")
        )
      }
      const bytes = base64(spec.data)
      if (bytes === undefined) {
        return Effect.fail(refuse("invalid_attachment", `${spec.field}.data`, "not valid base64"))
      }
      const checked = Attachments.inspect(bytes, { ...options(spec), maxBytes: store.maxBytes })
      return Either.isLeft(checked)
        ? Effect.fail(checked.left)
        : Effect.succeed<Checked>({ _tag: "Bytes", bytes, spec })
    }
  }
}

/**
 * Checks every attachment (count, types, sizes, ids), then stores the inline
 * ones: the references, in order. Nothing is stored when any is refused.
 */
export const resolve = (
  specs: ReadonlyArray<Spec>,
  store: Attachments.AttachmentsService,
  maxAttachments: number,
  field = "attachments"
): Effect.Effect<ReadonlyArray<FileRef>, Attachments.AttachmentError> =>
  Effect.gen(function*() {
    if (specs.length > maxAttachments) {
      return yield* refuse(
        "too_many_attachments",
        field,
        `${specs.length} attachments; at most ${maxAttachments} per request`,
        maxAttachments
      )
    }
    const checked = yield* Effect.forEach(specs, (spec) => check(spec, store))
    return yield* Effect.forEach(checked, (c) =>
      c._tag === "Ref" ? Effect.succeed(c.ref) : store.put(c.bytes, options(c.spec)))
  })

/** The characters of a decoded body's inline files: `data` (base64), and `data:` URLs under `url` or `file_data`. */
const inlineChars = (value: unknown, depth = 0): number => {
  if (value === null || typeof value !== "object" || depth > 64) return 0
  let chars = 0
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== "string") chars += inlineChars(v, depth + 1)
    else if (key === "data" || ((key === "url" || key === "file_data") && v.startsWith("data:"))) chars += v.length
  }
  return chars
}

/**
 * A JSON body that may carry files inline (`POST /api/react`, `/v1/chat/completions`,
 * `/api/chat`): read up to `MAX_BODY_BYTES` plus room for one of the largest
 * attachments in base64, then decoded; what is not inline file data must
 * still be within `MAX_BODY_BYTES` (413 otherwise).
 */
export const decodeBody = <A, I>(
  schema: Schema.Schema<A, I>,
  settings: { readonly maxBodyBytes: number; readonly maxAttachmentBytes: number }
): Effect.Effect<
  A,
  ApiError.PayloadTooLarge | ApiError.InvalidRequest | ApiError.UnsupportedMediaType,
  HttpServerRequest.HttpServerRequest
> =>
  Effect.flatMap(
    ApiError.decodeBody(schema, settings.maxBodyBytes + Math.ceil(settings.maxAttachmentBytes / 3) * 4),
    (body) =>
      Buffer.byteLength(JSON.stringify(body)) - inlineChars(body) > settings.maxBodyBytes
        ? Effect.fail(new ApiError.PayloadTooLarge({ limit: settings.maxBodyBytes }))
        : Effect.succeed(body)
  )
