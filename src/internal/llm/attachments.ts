/**
 * Attachments on their way to a provider: what every `Llm` over a provider
 * does before mapping a request to its wire shape.
 *
 * - A part the model does not take (`inputModalities`) is never sent: a text
 *   note naming the file takes its place.
 * - A stored attachment's bytes are read from the `Attachments` store now, at
 *   the moment the request is built (messages carry only references); a text
 *   file becomes a text part that starts with its name.
 * - A tool message's files: notes for what the model cannot take are appended
 *   to its text; what it can take goes into ONE user message right after the
 *   round's tool messages, each call named (chat APIs take text only in tool
 *   results; Anthropic takes the user turn after its `tool_result` blocks).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { AttachmentsService, Modality } from "../../Attachments.js"
import * as Attachments from "../../Attachments.js"
import type { ChatRequest } from "../../Llm.js"
import { LlmError } from "../../Llm.js"
import type { ChatMessage, Content, FilePart, FileRef, ToolMessage } from "../../Message.js"

/** A content part ready for a provider's wire shape. */
export type Part =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Image"; readonly name: string; readonly mediaType: string; readonly data: Uint8Array }
  | { readonly _tag: "ImageUrl"; readonly url: string; readonly detail?: "auto" | "low" | "high" | undefined }
  | { readonly _tag: "Pdf"; readonly name: string; readonly data: Uint8Array }

/** A message ready for a provider: user content in `Part`s, tool messages without files. */
export type Prepared =
  | Exclude<ChatMessage, { readonly role: "user" } | { readonly role: "tool" }>
  | { readonly role: "user"; readonly content: string | ReadonlyArray<Part> }
  | Omit<ToolMessage, "files">

/** How a service sends attachments: what its model takes, where the bytes are. */
export interface Context {
  readonly modalities: ReadonlySet<Modality>
  readonly store: Option.Option<AttachmentsService>
}

/** A context from a service's options. */
export const context = (
  modalities: ReadonlyArray<Modality> | undefined,
  store: AttachmentsService | undefined
): Context => ({
  modalities: new Set(["text", ...(modalities ?? Attachments.ALL_MODALITIES)]),
  store: Option.fromNullable(store)
})

const CANNOT: Readonly<Record<Modality, string>> = { text: "text", image: "images", file: "PDF documents" }

/** The note a model gets instead of a file it cannot take. */
export const note = (ref: FileRef): string =>
  `[Attachment ${Attachments.describe(ref)} not shown: this model cannot read ${CANNOT[Attachments.modalityOf(ref)]}.]`

const IMAGE_NOTE = "[An image not shown: this model cannot read images.]"

/** True when the request has no file or image part anywhere (nothing to prepare). */
export const isPlain = (request: ChatRequest): boolean => {
  for (const m of request.messages) {
    if (m.role === "tool" && m.files !== undefined && m.files.length > 0) return false
    if (m.role === "user" && typeof m.content !== "string") {
      for (const p of m.content) if (p.type !== "text") return false
    }
  }
  return true
}

const utf8 = new TextDecoder("utf-8")

const unavailable = (ref: FileRef, why: string) =>
  new LlmError({ reason: "BadRequest", message: `Attachment ${Attachments.describe(ref)} cannot be sent: ${why}` })

const bytesOf = (ref: FileRef, ctx: Context): Effect.Effect<Uint8Array, LlmError> => {
  if (Option.isNone(ctx.store)) {
    return Effect.fail(
      unavailable(
        ref,
        "this model was built without an attachment store (Attachments.Attachments in its layer's context)"
      )
    )
  }
  return ctx.store.value.get(ref.sha256 as string).pipe(
    Effect.map((row) => row.bytes),
    Effect.mapError((e) => unavailable(ref, e.message))
  )
}

/** One file as the parts a provider gets (a note when the model does not take it). */
const filePart = (ref: FileRef, ctx: Context): Effect.Effect<Part, LlmError> => {
  const modality = Attachments.modalityOf(ref)
  if (!ctx.modalities.has(modality)) return Effect.succeed({ _tag: "Text", text: note(ref) })
  if (ref.sha256 === undefined) {
    // a caller's URL, sent as given (only images come as URLs)
    return Effect.succeed(
      ref.url !== undefined && modality === "image"
        ? { _tag: "ImageUrl", url: ref.url }
        : { _tag: "Text", text: note(ref) }
    )
  }
  return Effect.map(bytesOf(ref, ctx), (data): Part =>
    modality === "image"
      ? { _tag: "Image", name: ref.name, mediaType: ref.media_type, data }
      : modality === "file"
      ? { _tag: "Pdf", name: ref.name, data }
      : { _tag: "Text", text: `Attachment ${Attachments.describe(ref)}:\n\n${utf8.decode(data)}` })
}

const contentParts = (content: Content, ctx: Context): Effect.Effect<string | ReadonlyArray<Part>, LlmError> =>
  typeof content === "string" ?
    Effect.succeed(content) :
    Effect.forEach(content, (p): Effect.Effect<Part, LlmError> => {
      if (p.type === "text") return Effect.succeed({ _tag: "Text", text: p.text })
      if (p.type === "file") return filePart(p.file, ctx)
      return Effect.succeed(
        ctx.modalities.has("image")
          ? { _tag: "ImageUrl", url: p.image_url.url, detail: p.image_url.detail }
          : { _tag: "Text", text: IMAGE_NOTE }
      )
    })

/** A tool message's files: the notes appended to its text, the parts the model takes. */
const toolFiles = (files: ReadonlyArray<FilePart>, ctx: Context) =>
  Effect.map(
    Effect.forEach(files, (f) => Effect.map(filePart(f.file, ctx), (part) => ({ ref: f.file, part }))),
    (all) => ({
      notes: all.flatMap(({ part }) => (part._tag === "Text" ? [part.text] : [])),
      parts: all.flatMap(({ part }) => (part._tag === "Text" ? [] : [part]))
    })
  )

/** The files a tool returned, as the user message that follows the round's tool messages. */
const announce = (
  calls: ReadonlyArray<{ readonly message: ToolMessage; readonly parts: ReadonlyArray<Part> }>
): Prepared => ({
  role: "user",
  content: calls.flatMap(({ message, parts }): Array<Part> => [
    {
      _tag: "Text",
      text: `The tool call ${message.tool_call_id}${message.name !== undefined ? ` (${message.name})` : ""} returned:`
    },
    ...parts
  ])
})

/**
 * The request's messages ready for a provider: file parts resolved (bytes read
 * now) or replaced by notes, tool files after their round's tool messages.
 */
export const prepare = (
  messages: ReadonlyArray<ChatMessage>,
  ctx: Context
): Effect.Effect<ReadonlyArray<Prepared>, LlmError> =>
  Effect.gen(function*() {
    const out: Array<Prepared> = []
    let pending: Array<{ readonly message: ToolMessage; readonly parts: ReadonlyArray<Part> }> = []
    const flush = () => {
      if (pending.length > 0) out.push(announce(pending))
      pending = []
    }
    for (const m of messages) {
      if (m.role !== "tool") flush()
      if (m.role === "user") {
        out.push({ role: "user", content: yield* contentParts(m.content, ctx) })
      } else if (m.role === "tool") {
        const { files, ...message } = m
        if (files === undefined || files.length === 0) {
          out.push(message)
          continue
        }
        const { notes, parts } = yield* toolFiles(files, ctx)
        out.push(notes.length === 0 ? message : { ...message, content: [message.content, ...notes].join("\n") })
        if (parts.length > 0) pending.push({ message: m, parts })
      } else out.push(m)
    }
    flush()
    return out
  })

/** Base64 of bytes. */
export const base64 = (data: Uint8Array): string =>
  Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("base64")

/** A `data:` URL of bytes. */
export const dataUrl = (mediaType: string, data: Uint8Array): string => `data:${mediaType};base64,${base64(data)}`
