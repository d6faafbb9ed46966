/**
 * Token estimation without a tokenizer: ASCII ≈ 4 characters per token,
 * any other character ≈ 1.5 per token, 765 tokens per `image_url` part, an
 * attachment by its dimensions, pages or size (`estimateFile`), +4 per message
 * for the chat framing; tool-call names, ids and arguments are counted.
 *
 * Messages are immutable, so each message's estimate is computed once and cached
 * (a `WeakMap` keyed by the message object): estimating a growing history computes
 * only the new messages' estimates, and a cached message costs one map lookup
 * (`ContextGuard`'s check skips even those for the part of a list it has seen).
 *
 * `reasoning_content` is not counted: providers do not take it back as input.
 *
 * @since 0.1.0
 */
import type { ChatMessage, Content, FileRef } from "./Message.js"

/**
 * Tokens added per message for the role and framing.
 *
 * @since 0.1.0
 * @category constants
 */
export const PER_MESSAGE = 4
/**
 * Tokens per image part (a high-detail tile budget).
 *
 * @since 0.1.0
 * @category constants
 */
export const PER_IMAGE = 765
/**
 * ASCII characters per token.
 *
 * @since 0.1.0
 * @category constants
 */
export const ASCII_CHARS_PER_TOKEN = 4
/**
 * Non-ASCII characters (CJK, accents, emoji…) per token.
 *
 * @since 0.1.0
 * @category constants
 */
export const OTHER_CHARS_PER_TOKEN = 1.5

const NON_ASCII = /[\x80-\uffff]/

/**
 * Estimated tokens of a text. A surrogate pair (emoji, rare CJK) counts as one
 * character.
 *
 * @since 0.1.0
 * @category estimation
 */
export const estimateText = (text: string): number => {
  const length = text.length
  if (length === 0) return 0
  // fast path: the regex engine finds the first non-ASCII character much faster than a JS loop
  const first = text.search(NON_ASCII)
  if (first === -1) return Math.ceil(length / ASCII_CHARS_PER_TOKEN)
  let ascii = first
  let other = 0
  let previous = 0
  for (let i = first; i < length; i++) {
    const code = text.charCodeAt(i)
    if (code < 128) ascii++
    // the low half of a surrogate pair was counted with its high half
    else if (!((code & 0xfc00) === 0xdc00 && (previous & 0xfc00) === 0xd800)) other++
    previous = code
  }
  return Math.ceil(ascii / ASCII_CHARS_PER_TOKEN + other / OTHER_CHARS_PER_TOKEN)
}

/**
 * Tokens of an image on OpenAI (high detail): fitted into 2048×2048, its
 * shorter side scaled to 768, then 170 per 512-pixel tile plus 85.
 *
 * @since 0.1.0
 * @category estimation
 */
export const imageTokensOpenAi = (width: number, height: number): number => {
  let w = width
  let h = height
  const fit = Math.min(1, 2048 / Math.max(w, h))
  w *= fit
  h *= fit
  const shorter = Math.min(w, h)
  if (shorter > 768) {
    w *= 768 / shorter
    h *= 768 / shorter
  }
  return 170 * Math.ceil(w / 512) * Math.ceil(h / 512) + 85
}

/**
 * Tokens of an image on Anthropic: width × height / 750, after the API's
 * downscaling (long edge at most 1568 pixels, about 1.15 megapixels).
 *
 * @since 0.1.0
 * @category estimation
 */
export const imageTokensAnthropic = (width: number, height: number): number => {
  const scale = Math.min(1, 1568 / Math.max(width, height), Math.sqrt(1_150_000 / (width * height)))
  return Math.ceil((width * scale) * (height * scale) / 750)
}

/**
 * Tokens of an image whose size is unknown (a caller's URL): the most either provider counts.
 *
 * @since 0.1.0
 * @category constants
 */
export const UNKNOWN_IMAGE = 1600

/**
 * Tokens per PDF page (its text and its page image, the upper end of what providers count).
 *
 * @since 0.1.0
 * @category constants
 */
export const PER_PDF_PAGE = 3000

/**
 * Estimated tokens of an attachment: an image by its dimensions (the larger
 * of OpenAI's tile count and Anthropic's w×h/750: the estimator knows no
 * provider, and overcounting only compacts sooner), a PDF by its pages (else
 * one page per 60 KB), a text file by its size.
 *
 * @since 0.1.0
 * @category estimation
 */
export const estimateFile = (file: FileRef): number => {
  if (file.media_type.startsWith("image/")) {
    return file.width !== undefined && file.height !== undefined && file.width > 0 && file.height > 0
      ? Math.max(imageTokensOpenAi(file.width, file.height), imageTokensAnthropic(file.width, file.height))
      : UNKNOWN_IMAGE
  }
  if (file.media_type === "application/pdf") {
    return PER_PDF_PAGE * (file.pages ?? Math.max(1, Math.ceil((file.size ?? 0) / 60_000)))
  }
  return estimateText(file.name) + 16 + Math.ceil((file.size ?? 0) / ASCII_CHARS_PER_TOKEN)
}

const estimateContent = (content: Content | null): number => {
  if (content === null) return 0
  if (typeof content === "string") return estimateText(content)
  let tokens = 0
  for (const part of content) {
    tokens += part.type === "text"
      ? estimateText(part.text)
      : part.type === "file"
      ? estimateFile(part.file)
      : PER_IMAGE
  }
  return tokens
}

const compute = (message: ChatMessage): number => {
  let tokens = PER_MESSAGE + estimateContent(message.content)
  if (message.role === "assistant" && message.tool_calls) {
    for (const call of message.tool_calls) {
      tokens += estimateText(call.id) + estimateText(call.function.name) + estimateText(call.function.arguments) + 3
    }
  } else if (message.role === "tool") {
    tokens += estimateText(message.tool_call_id)
    if (message.name !== undefined) tokens += estimateText(message.name)
    if (message.files !== undefined) { for (const f of message.files) tokens += estimateFile(f.file) }
  }
  return tokens
}

const cache = new WeakMap<ChatMessage, number>()

/**
 * Estimated tokens of one message (cached per message object).
 *
 * @since 0.1.0
 * @category estimation
 */
export const estimateMessage = (message: ChatMessage): number => {
  let tokens = cache.get(message)
  if (tokens === undefined) {
    tokens = compute(message)
    cache.set(message, tokens)
  }
  return tokens
}

/**
 * Estimated tokens of a message list (the sum of the cached per-message estimates).
 *
 * @since 0.1.0
 * @category estimation
 */
export const estimateMessages = (messages: ReadonlyArray<ChatMessage>): number => {
  let total = 0
  for (let i = 0; i < messages.length; i++) total += estimateMessage(messages[i])
  return total
}
