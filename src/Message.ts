/**
 * Chat messages in the OpenAI chat-completions shape, the lingua franca of every
 * OpenAI-compatible provider. Messages are plain immutable objects (cheap to build
 * in the loop's hot path); the Schemas decode them from the wire or the database.
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"

/**
 * @since 0.1.0
 * @category models
 */
export const TextPart = Schema.Struct({ type: Schema.Literal("text"), text: Schema.String })
/**
 * @since 0.1.0
 * @category models
 */
export type TextPart = typeof TextPart.Type

/**
 * @since 0.1.0
 * @category models
 */
export const ImagePart = Schema.Struct({
  type: Schema.Literal("image_url"),
  image_url: Schema.Struct({ url: Schema.String, detail: Schema.optional(Schema.Literal("auto", "low", "high")) })
})
/**
 * @since 0.1.0
 * @category models
 */
export type ImagePart = typeof ImagePart.Type

/**
 * What a message says of an attachment: never its bytes. A stored attachment
 * is named by the SHA-256 of its bytes (the `Attachments` store holds them; the
 * LLM layer reads them when it builds a provider request); an image the caller
 * gave as an `https` URL keeps its `url` instead and is sent as it is. Images
 * carry their dimensions and PDFs their page count when known (token estimates).
 *
 * @since 0.1.0
 * @category models
 */
export const FileRef = Schema.Struct({
  name: Schema.String,
  media_type: Schema.String,
  size: Schema.optional(Schema.Number),
  sha256: Schema.optional(Schema.String),
  url: Schema.optional(Schema.String),
  width: Schema.optional(Schema.Number),
  height: Schema.optional(Schema.Number),
  pages: Schema.optional(Schema.Number)
})
/**
 * @since 0.1.0
 * @category models
 */
export type FileRef = typeof FileRef.Type

/**
 * An attachment (an image, a PDF, a text file) in a message's content.
 *
 * @since 0.1.0
 * @category models
 */
export const FilePart = Schema.Struct({ type: Schema.Literal("file"), file: FileRef })
/**
 * @since 0.1.0
 * @category models
 */
export type FilePart = typeof FilePart.Type

/**
 * @since 0.1.0
 * @category models
 */
export const ContentPart = Schema.Union(TextPart, ImagePart, FilePart)
/**
 * @since 0.1.0
 * @category models
 */
export type ContentPart = typeof ContentPart.Type

/**
 * Text or multimodal content.
 *
 * @since 0.1.0
 * @category models
 */
export const Content = Schema.Union(Schema.String, Schema.Array(ContentPart))
/**
 * @since 0.1.0
 * @category models
 */
export type Content = typeof Content.Type

/**
 * A tool call as it travels in an assistant message. `arguments` is the raw JSON
 * text the model produced (it may be invalid JSON: the loop answers such a call with
 * an error observation, it never crashes).
 *
 * @since 0.1.0
 * @category models
 */
export const ToolCall = Schema.Struct({
  id: Schema.String,
  type: Schema.Literal("function"),
  function: Schema.Struct({ name: Schema.String, arguments: Schema.String })
})
/**
 * @since 0.1.0
 * @category models
 */
export type ToolCall = typeof ToolCall.Type

const pinned = Schema.optional(Schema.Boolean)

/**
 * @since 0.1.0
 * @category models
 */
export const SystemMessage = Schema.Struct({ role: Schema.Literal("system"), content: Schema.String, pinned })
/**
 * @since 0.1.0
 * @category models
 */
export type SystemMessage = typeof SystemMessage.Type

/**
 * @since 0.1.0
 * @category models
 */
export const UserMessage = Schema.Struct({ role: Schema.Literal("user"), content: Content, pinned })
/**
 * @since 0.1.0
 * @category models
 */
export type UserMessage = typeof UserMessage.Type

/**
 * @since 0.1.0
 * @category models
 */
export const AssistantMessage = Schema.Struct({
  role: Schema.Literal("assistant"),
  content: Schema.NullOr(Schema.String),
  tool_calls: Schema.optional(Schema.Array(ToolCall)),
  reasoning_content: Schema.optional(Schema.String),
  pinned
})
/**
 * @since 0.1.0
 * @category models
 */
export type AssistantMessage = typeof AssistantMessage.Type

/**
 * @since 0.1.0
 * @category models
 */
export const ToolMessage = Schema.Struct({
  role: Schema.Literal("tool"),
  content: Schema.String,
  tool_call_id: Schema.String,
  name: Schema.optional(Schema.String),
  /** Files the tool returned (an image, a screenshot): each provider gets them where it takes them. */
  files: Schema.optional(Schema.Array(FilePart)),
  pinned
})
/**
 * @since 0.1.0
 * @category models
 */
export type ToolMessage = typeof ToolMessage.Type

/**
 * @since 0.1.0
 * @category models
 */
export const ChatMessage = Schema.Union(SystemMessage, UserMessage, AssistantMessage, ToolMessage)
/**
 * @since 0.1.0
 * @category models
 */
export type ChatMessage = typeof ChatMessage.Type

/**
 * @since 0.1.0
 * @category constructors
 */
export const system = (content: string): SystemMessage => ({ role: "system", content })

/**
 * @since 0.1.0
 * @category constructors
 */
export const user = (content: Content, options?: { readonly pinned?: boolean }): UserMessage =>
  options?.pinned ? { role: "user", content, pinned: true } : { role: "user", content }

/**
 * @since 0.1.0
 * @category constructors
 */
export const assistant = (
  content: string | null,
  options?: { readonly toolCalls?: ReadonlyArray<ToolCall>; readonly reasoning?: string }
): AssistantMessage => {
  const message: { -readonly [K in keyof AssistantMessage]: AssistantMessage[K] } = { role: "assistant", content }
  if (options?.toolCalls && options.toolCalls.length > 0) message.tool_calls = options.toolCalls
  if (options?.reasoning) message.reasoning_content = options.reasoning
  return message
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const tool = (
  toolCallId: string,
  content: string,
  name?: string,
  files?: ReadonlyArray<FilePart>
): ToolMessage => {
  const message: ToolMessage = name === undefined
    ? { role: "tool", tool_call_id: toolCallId, content }
    : { role: "tool", tool_call_id: toolCallId, content, name }
  return files !== undefined && files.length > 0 ? { ...message, files } : message
}

/**
 * A file part of an attachment.
 *
 * @since 0.1.0
 * @category constructors
 */
export const file = (ref: FileRef): FilePart => ({ type: "file", file: ref })

/**
 * The file parts of a message's content (none for text).
 *
 * @since 0.1.0
 * @category utils
 */
export const filesOf = (content: Content | null | undefined): ReadonlyArray<FilePart> =>
  content == null || typeof content === "string" ? [] : content.filter((p): p is FilePart => p.type === "file")

/**
 * @since 0.1.0
 * @category constructors
 */
export const toolCall = (id: string, name: string, args: string): ToolCall => ({
  id,
  type: "function",
  function: { name, arguments: args }
})

/**
 * The text of a message's content (image and file parts are skipped).
 *
 * @since 0.1.0
 * @category utils
 */
export const textOf = (content: Content | null | undefined): string => {
  if (content == null) return ""
  if (typeof content === "string") return content
  let out = ""
  for (const part of content) if (part.type === "text") out += part.text
  return out
}
