/**
 * The check of an attachment's bytes before anything is stored: its size, its
 * type (declared, else recognised; a declared type the bytes contradict is
 * refused), its SHA-256, a name, an image's dimensions, a PDF's page count.
 *
 * @internal
 */
import * as Either from "effect/Either"
import { createHash } from "node:crypto"
import type { FileRef } from "../../Message.js"
import * as Sniff from "./sniff.js"

/** Why an attachment is refused (the server's 4xx `error` codes). */
export type Code =
  | "unsupported_media_type"
  | "attachment_too_large"
  | "too_many_attachments"
  | "invalid_attachment"
  | "attachment_not_found"
  | "storage_failed"

export interface Refusal {
  readonly code: Code
  readonly message: string
  readonly field?: string
  readonly limit?: number
}

export interface InspectOptions {
  readonly mediaType?: string | undefined
  readonly name?: string | undefined
  /** Named in refusals (`attachments.0.data`). */
  readonly field?: string | undefined
  /** Named in refusals of the type (`attachments.0.media_type`; default `field`). */
  readonly typeField?: string | undefined
  readonly maxBytes: number
}

const KIND: Readonly<Record<string, string>> = {
  "image/png": "a PNG image",
  "image/jpeg": "a JPEG image",
  "image/gif": "a GIF image",
  "image/webp": "a WebP image",
  "application/pdf": "a PDF"
}

/** A file name without directories or control characters, at most 200 characters (`undefined` when nothing is left). */
export const cleanName = (name: string | undefined): string | undefined => {
  const base = (name ?? "").split(/[\\/]/).pop() ?? ""
  // no control characters (C0 and DEL)
  const clean = [...base].filter((c) => c.charCodeAt(0) > 0x1f && c.charCodeAt(0) !== 0x7f).join("").trim().slice(
    0,
    200
  )
  return clean === "" ? undefined : clean
}

/** SHA-256 of the bytes, lower-case hex. */
export const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

const at = (field: string | undefined, message: string) => (field === undefined ? message : `${field}: ${message}`)

/** The type the bytes are to be stored as, or why they are refused. */
const typeOf = (bytes: Uint8Array, options: InspectOptions): Either.Either<Sniff.MediaType, Refusal> => {
  const declared = Sniff.normalise(options.mediaType)
  const sniffed = Sniff.sniff(bytes)
  const field = options.typeField ?? options.field
  const refuse = (message: string) =>
    Either.left<Refusal>({ code: "unsupported_media_type", message: at(field, message), ...(field ? { field } : {}) })
  if (declared === "" || declared === "application/octet-stream") {
    // the name's extension says a text type at most: images and PDFs are what their bytes are
    const named = Sniff.fromName(options.name)
    const found = sniffed ?? (named !== undefined && Sniff.isText(named) ? named : undefined)
    if (found === undefined) {
      return refuse(`the type of the bytes could not be recognised: declare one of ${Sniff.SUPPORTED.join(", ")}`)
    }
    return Sniff.isText(found) && Sniff.textOf(found, bytes) === undefined
      ? refuse(
        `the bytes are not ${found} (not UTF-8 text${found === "application/json" ? " that parses as JSON" : ""})`
      )
      : Either.right(found)
  }
  if (!Sniff.isSupported(declared)) {
    return refuse(`${declared} is not a supported type (supported: ${Sniff.SUPPORTED.join(", ")})`)
  }
  if (Sniff.isText(declared)) {
    if (sniffed !== undefined) return refuse(`declared ${declared}, but the bytes are ${KIND[sniffed]}`)
    return Sniff.textOf(declared, bytes) === undefined
      ? refuse(
        `declared ${declared}, but the bytes are not UTF-8 text${
          declared === "application/json" ? " that parses as JSON" : ""
        }`
      )
      : Either.right(declared)
  }
  if (sniffed !== declared) {
    return refuse(
      `declared ${declared}, but the bytes are ${sniffed !== undefined ? KIND[sniffed] : `not ${KIND[declared]}`}`
    )
  }
  return Either.right(declared)
}

/** The reference the bytes get when stored, or why they are refused. */
export const inspect = (bytes: Uint8Array, options: InspectOptions): Either.Either<FileRef, Refusal> => {
  const field = options.field
  if (bytes.length === 0) {
    return Either.left({
      code: "invalid_attachment",
      message: at(field, "the attachment is empty"),
      ...(field ? { field } : {})
    })
  }
  if (bytes.length > options.maxBytes) {
    return Either.left({
      code: "attachment_too_large",
      message: at(field, `${bytes.length} bytes is over the limit of ${options.maxBytes} bytes per attachment`),
      limit: options.maxBytes,
      ...(field ? { field } : {})
    })
  }
  return Either.map(typeOf(bytes, options), (mediaType): FileRef => {
    const hash = sha256(bytes)
    const name = cleanName(options.name) ?? `attachment-${hash.slice(0, 8)}.${Sniff.extensionOf(mediaType)}`
    const size = Sniff.isImage(mediaType) ? Sniff.dimensions(mediaType, bytes) : undefined
    const pages = Sniff.isPdf(mediaType) ? Sniff.pdfPages(bytes) : undefined
    return {
      name,
      media_type: mediaType,
      size: bytes.length,
      sha256: hash,
      ...(size !== undefined ? { width: size.width, height: size.height } : {}),
      ...(pages !== undefined ? { pages } : {})
    }
  })
}
