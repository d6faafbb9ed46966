/**
 * Attachments: images, PDFs and text files a run is given (or a tool returns),
 * stored once by the SHA-256 of their bytes. Messages, events, stored steps and
 * cassettes' requests carry only a `Message.FileRef` (name, media type, size,
 * hash, an image's dimensions, a PDF's page count); the LLM layers read the
 * bytes from this store at the moment they build a provider request.
 *
 * - `put(bytes, {mediaType?, name?})` checks and stores: PNG, JPEG, GIF, WebP
 *   and PDF are recognised by their bytes (a declared type the bytes contradict
 *   is refused), text types must be UTF-8 text (JSON must parse); over
 *   `maxBytes` is refused. The same bytes give the same reference (one copy).
 * - `layerMemory` keeps them in memory (the library, the CLI, tests); the
 *   server's store is in its database (`effect-react-engine/server`,
 *   `SqlAttachments`).
 * - The LLM layers (`OpenAiLlm`, `EffectAiLlm`, `ModelRegistry.layerConfig`)
 *   take the store from the context when they are built.
 *
 * ```ts
 * const program = Effect.gen(function*() {
 *   const store = yield* Attachments.Attachments
 *   const chart = yield* store.put(pngBytes, { name: "chart.png" })
 *   const agent = yield* ReactAgent.ReactAgent
 *   return yield* agent.runCollect({ query: [{ type: "text", text: "What does it show?" }, Message.file(chart)] })
 * })
 * ```
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Inspect from "./internal/attachments/inspect.js"
import * as Sniff from "./internal/attachments/sniff.js"
import type { FileRef } from "./Message.js"

/**
 * The media types an attachment may have.
 *
 * @since 0.1.0
 * @category constants
 */
export const SUPPORTED: ReadonlyArray<string> = Sniff.SUPPORTED

/**
 * Largest attachment by default: 10 MiB.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_MAX_BYTES = 10 * 1024 * 1024

/**
 * Why an attachment was refused, or could not be read: `code` is what the
 * server answers (415 `unsupported_media_type`, 413 `attachment_too_large`,
 * 400 `too_many_attachments` / `invalid_attachment`, 404
 * `attachment_not_found`, 500 `storage_failed`); `field` the input field it is
 * about, `limit` the limit it broke.
 *
 * @since 0.1.0
 * @category errors
 */
export class AttachmentError extends Schema.TaggedError<AttachmentError>()("AttachmentError", {
  code: Schema.Literal(
    "unsupported_media_type",
    "attachment_too_large",
    "too_many_attachments",
    "invalid_attachment",
    "attachment_not_found",
    "storage_failed"
  ),
  message: Schema.String,
  field: Schema.optional(Schema.String),
  limit: Schema.optional(Schema.Number)
}) {}

/**
 * @since 0.1.0
 * @category models
 */
export interface PutOptions {
  /** The declared type (`Content-Type`); absent or `application/octet-stream`: recognised from the bytes or the name. */
  readonly mediaType?: string | undefined
  readonly name?: string | undefined
  /** The input field named in a refusal (`attachments.0.data`). */
  readonly field?: string | undefined
  /** The field named when the type is refused (`attachments.0.media_type`; default `field`). */
  readonly typeField?: string | undefined
}

/**
 * An attachment with its bytes.
 *
 * @since 0.1.0
 * @category models
 */
export interface Stored {
  readonly ref: FileRef
  readonly bytes: Uint8Array
}

/**
 * @since 0.1.0
 * @category models
 */
export interface AttachmentsService {
  /** Largest accepted attachment, in bytes. */
  readonly maxBytes: number
  /**
   * Checks and stores the bytes; the same bytes are stored once. The reference
   * carries the name given (else the one stored first, else a made-up one).
   */
  readonly put: (bytes: Uint8Array, options?: PutOptions) => Effect.Effect<FileRef, AttachmentError>
  /** The attachment and its bytes; `attachment_not_found` when the hash is unknown. */
  readonly get: (sha256: string) => Effect.Effect<Stored, AttachmentError>
  /** The stored reference (with the name stored first), without reading the bytes. */
  readonly stat: (sha256: string) => Effect.Effect<Option.Option<FileRef>, AttachmentError>
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Attachments extends Context.Tag("effect-react-engine/Attachments")<Attachments, AttachmentsService>() {}

/**
 * Checks bytes without storing them: the reference they would get, or why
 * they are refused. What a store's `put` does first; the server checks every
 * attachment of a request this way before it stores any.
 *
 * @since 0.1.0
 * @category utils
 */
export const inspect = (
  bytes: Uint8Array,
  options: PutOptions & { readonly maxBytes?: number | undefined } = {}
): Either.Either<FileRef, AttachmentError> =>
  Either.mapLeft(
    Inspect.inspect(bytes, { ...options, maxBytes: options.maxBytes ?? DEFAULT_MAX_BYTES }),
    (refusal) => new AttachmentError(refusal)
  )

/**
 * SHA-256 of bytes, in lower-case hex (an attachment's id).
 *
 * @since 0.1.0
 * @category utils
 */
export const sha256: (bytes: Uint8Array) => string = Inspect.sha256

/**
 * A file name as stored: no directories, no control characters, ≤ 200 characters.
 *
 * @since 0.1.0
 * @category utils
 */
export const cleanName: (name: string | undefined) => string | undefined = Inspect.cleanName

/**
 * `attachment_not_found` for a hash.
 *
 * @since 0.1.0
 * @category errors
 */
export const notFound = (sha256: string, field?: string): AttachmentError =>
  new AttachmentError({
    code: "attachment_not_found",
    message: `${field !== undefined ? `${field}: ` : ""}no attachment ${sha256}`,
    ...(field !== undefined ? { field } : {})
  })

/**
 * An in-memory store.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeMemoryUnsafe = (options: { readonly maxBytes?: number } = {}): AttachmentsService & {
  /** How many distinct attachments are stored. */
  readonly count: () => number
} => {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES
  const rows = new Map<string, Stored>()
  return {
    maxBytes,
    count: () => rows.size,
    put: (bytes, put) =>
      Effect.suspend(() => {
        const checked = inspect(bytes, { ...put, maxBytes })
        if (Either.isLeft(checked)) return Effect.fail(checked.left)
        const ref = checked.right
        const key = ref.sha256 as string
        const first = rows.get(key)
        if (first === undefined) rows.set(key, { ref, bytes: Uint8Array.from(bytes) })
        const name = cleanName(put?.name)
        return Effect.succeed(first === undefined || name !== undefined ? ref : first.ref)
      }),
    get: (hash) =>
      Effect.suspend(() => {
        const row = rows.get(hash)
        return row === undefined ? Effect.fail(notFound(hash)) : Effect.succeed(row)
      }),
    stat: (hash) => Effect.sync(() => Option.map(Option.fromNullable(rows.get(hash)), (row) => row.ref))
  }
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const makeMemory = (options: { readonly maxBytes?: number } = {}): Effect.Effect<AttachmentsService> =>
  Effect.sync(() => makeMemoryUnsafe(options))

/**
 * An in-memory store (the library's default, the CLI's, tests').
 *
 * @since 0.1.0
 * @category layers
 */
export const layerMemory = (options: { readonly maxBytes?: number } = {}): Layer.Layer<Attachments> =>
  Layer.effect(Attachments, makeMemory(options))

/**
 * What a model can take: `text` (always; text files are sent as text), `image`,
 * `file` (PDF documents).
 *
 * @since 0.1.0
 * @category models
 */
export type Modality = "text" | "image" | "file"

/**
 * Every modality (the default of `LLM_INPUT_MODALITIES`).
 *
 * @since 0.1.0
 * @category constants
 */
export const ALL_MODALITIES: ReadonlyArray<Modality> = ["text", "image", "file"]

/**
 * The modality a model needs to read an attachment.
 *
 * @since 0.1.0
 * @category utils
 */
export const modalityOf = (ref: FileRef): Modality =>
  Sniff.isImage(ref.media_type) ? "image" : Sniff.isPdf(ref.media_type) ? "file" : "text"

/**
 * True for a text attachment (sent as text, starting with its name).
 *
 * @since 0.1.0
 * @category utils
 */
export const isText = (ref: FileRef): boolean => Sniff.isText(ref.media_type)

const kib = (
  size: number
): string => (size < 1024
  ? `${size} B`
  : size < 1024 * 1024
  ? `${Math.round(size / 1024)} KiB`
  : `${(size / 1024 / 1024).toFixed(1)} MiB`)

/**
 * How an attachment is named in notes: `"chart.png" (image/png, 800×600, 41 KiB)`.
 *
 * @since 0.1.0
 * @category utils
 */
export const describe = (ref: FileRef): string => {
  const details = [ref.media_type]
  if (ref.width !== undefined && ref.height !== undefined) details.push(`${ref.width}×${ref.height}`)
  if (ref.pages !== undefined) details.push(`${ref.pages} page${ref.pages === 1 ? "" : "s"}`)
  if (ref.size !== undefined) details.push(kib(ref.size))
  return `${JSON.stringify(ref.name)} (${details.join(", ")})`
}

/**
 * Every stored attachment a value refers to (file parts anywhere in it: a
 * request, an input, a tool outcome), each hash once, in order of appearance.
 *
 * @since 0.1.0
 * @category utils
 */
export const refsIn = (value: unknown): ReadonlyArray<FileRef> => {
  const found = new Map<string, FileRef>()
  const walk = (v: unknown, depth: number): void => {
    if (v === null || typeof v !== "object" || depth > 64) return
    if (Array.isArray(v)) {
      for (const item of v) walk(item, depth + 1)
      return
    }
    const o = v as Record<string, unknown>
    const file = o.file as FileRef | undefined
    if (o.type === "file" && file !== null && typeof file === "object" && typeof file.sha256 === "string") {
      if (!found.has(file.sha256)) found.set(file.sha256, file)
      return
    }
    for (const key in o) walk(o[key], depth + 1)
  }
  walk(value, 0)
  return [...found.values()]
}

/**
 * An attachment embedded in a cassette: its reference and its bytes (base64), once per hash.
 *
 * @since 0.1.0
 * @category models
 */
export const Embedded = Schema.Struct({
  sha256: Schema.String,
  name: Schema.String,
  media_type: Schema.String,
  data: Schema.String
})
/**
 * @since 0.1.0
 * @category models
 */
export type Embedded = typeof Embedded.Type

/**
 * The attachments a value refers to, with their bytes from `store` (an
 * attachment the store does not have is left out, with a warning).
 *
 * @since 0.1.0
 * @category utils
 */
export const embed = (store: AttachmentsService, value: unknown): Effect.Effect<ReadonlyArray<Embedded>> =>
  Effect.map(
    Effect.forEach(refsIn(value), (ref) =>
      store.get(ref.sha256 as string).pipe(
        Effect.map((row): Option.Option<Embedded> =>
          Option.some({
            sha256: row.ref.sha256 as string,
            name: row.ref.name,
            media_type: row.ref.media_type,
            data: Buffer.from(row.bytes).toString("base64")
          })
        ),
        Effect.catchAll((error) =>
          Effect.as(Effect.logWarning(`attachment ${ref.sha256} not embedded: ${error.message}`), Option.none())
        )
      )),
    Option.reduceCompact<Array<Embedded>, Embedded>([], (all, e) => [...all, e])
  )

/**
 * An in-memory store holding embedded attachments (a cassette's): what a run
 * replayed against a live model, or imported elsewhere, reads.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerFromEmbedded = (
  embedded: ReadonlyArray<Embedded>,
  options: { readonly maxBytes?: number } = {}
): Layer.Layer<Attachments, AttachmentError> =>
  Layer.effect(
    Attachments,
    Effect.gen(function*() {
      const store = makeMemoryUnsafe({
        maxBytes: Math.max(
          options.maxBytes ?? DEFAULT_MAX_BYTES,
          ...embedded.map((e) => Math.ceil(e.data.length * 3 / 4))
        )
      })
      for (const e of embedded) {
        const ref = yield* store.put(Buffer.from(e.data, "base64"), { mediaType: e.media_type, name: e.name })
        if (ref.sha256 !== e.sha256) {
          return yield* new AttachmentError({
            code: "invalid_attachment",
            message: `embedded attachment ${e.name}: its bytes do not hash to ${e.sha256}`
          })
        }
      }
      return store
    })
  )
