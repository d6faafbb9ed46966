/**
 * What the real chat-completions and Messages APIs accept of content parts and
 * tool-message order, for the local fakes (`fakeOpenAiServer`,
 * `fakeAnthropicServer`): a request the real API refuses is a 400 there too, so
 * a client that sends a part where the API does not take it fails its test.
 *
 * - OpenAI chat: `image_url` and `file` parts only in `user` messages (tool,
 *   system and assistant messages take text); an image is an `https` URL or a
 *   `data:image/(png|jpeg|gif|webp);base64,…` URL whose bytes are that image; a
 *   `file` part carries `file_data` as a `data:application/pdf;base64,…` URL of a
 *   PDF (or a `file_id`); an assistant message's `tool_calls` are answered by
 *   `tool` messages before any other message, and a `tool` message answers one.
 * - Anthropic: `image` blocks (base64 of a PNG/JPEG/GIF/WebP whose bytes match
 *   `media_type`, or a URL) and `document` blocks (a base64 PDF, text or a URL)
 *   only in user turns; in a user turn answering tool calls the `tool_result`
 *   blocks come first; a `tool_result`'s content is text or text/image blocks.
 */

const magic = (bytes: Buffer): string | undefined => {
  if (bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return "image/png"
  if (bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return "image/jpeg"
  if (bytes.subarray(0, 6).toString("latin1") === "GIF87a" || bytes.subarray(0, 6).toString("latin1") === "GIF89a") {
    return "image/gif"
  }
  if (bytes.subarray(0, 4).toString("latin1") === "RIFF" && bytes.subarray(8, 12).toString("latin1") === "WEBP") {
    return "image/webp"
  }
  if (bytes.subarray(0, 1024).toString("latin1").includes("%PDF-")) return "application/pdf"
  return undefined
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/

/** The bytes of base64 text, or undefined when it is not base64. */
const decode64 = (data: unknown): Buffer | undefined =>
  typeof data === "string" && data.length % 4 === 0 && BASE64.test(data) ? Buffer.from(data, "base64") : undefined

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s

const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"]

const imageUrlProblem = (url: unknown, at: string): string | undefined => {
  if (typeof url !== "string") return `${at}.image_url.url: expected a string`
  if (/^https:\/\//.test(url)) return undefined
  const m = DATA_URL.exec(url)
  if (m === null) return `${at}.image_url.url: Invalid image URL: expected a https URL or a base64 data URL`
  if (!IMAGE_TYPES.includes(m[1])) return `${at}: Invalid image media type ${m[1]}`
  const bytes = decode64(m[2])
  if (bytes === undefined) return `${at}: Invalid base64 image data`
  if (magic(bytes) !== m[1]) return `${at}: The image data does not match its media type ${m[1]}`
  return undefined
}

const filePartProblem = (file: any, at: string): string | undefined => {
  if (file === null || typeof file !== "object") return `${at}.file: expected an object`
  if (typeof file.file_id === "string") return undefined
  const m = typeof file.file_data === "string" ? DATA_URL.exec(file.file_data) : null
  if (m === null) return `${at}.file.file_data: Invalid file data: expected a base64-encoded data URL`
  if (m[1] !== "application/pdf") return `${at}: Invalid file format ${m[1]}. Supported formats: pdf`
  const bytes = decode64(m[2])
  if (bytes === undefined || magic(bytes) !== "application/pdf") return `${at}: The file data is not a valid PDF`
  return undefined
}

/** Why the real chat-completions API would refuse the request's messages (undefined: it would not). */
export const openAiProblem = (body: any): string | undefined => {
  const messages: Array<any> = Array.isArray(body?.messages) ? body.messages : []
  let waiting = new Set<string>()
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    const at = `messages[${i}]`
    if (m.role === "tool") {
      if (!waiting.has(m.tool_call_id)) {
        return `${at}: Messages with role 'tool' must be a response to a preceding message with 'tool_calls'`
      }
      waiting.delete(m.tool_call_id)
    } else if (waiting.size > 0) {
      return `${at}: An assistant message with 'tool_calls' must be followed by tool messages responding to each ` +
        `'tool_call_id'. The following tool_call_ids did not have response messages: ${[...waiting].join(", ")}`
    }
    if (m.role === "assistant") waiting = new Set((m.tool_calls ?? []).map((c: any) => c.id))
    if (!Array.isArray(m.content)) continue
    for (let j = 0; j < m.content.length; j++) {
      const part = m.content[j]
      const where = `${at}.content[${j}]`
      if (part?.type === "text") {
        if (typeof part.text !== "string") return `${where}.text: expected a string`
        continue
      }
      if (part?.type !== "image_url" && part?.type !== "file") {
        return `${where}.type: Invalid value: '${part?.type}'. Supported values are: 'text', 'image_url', 'input_audio', 'refusal', 'audio', and 'file'.`
      }
      if (m.role !== "user") {
        return `${where}: ${
          part.type === "image_url" ? "Image URLs" : "Files"
        } are only allowed for messages with role 'user', but this message with role '${m.role}' contains one.`
      }
      const problem = part.type === "image_url"
        ? imageUrlProblem(part.image_url?.url, where)
        : filePartProblem(part.file, where)
      if (problem !== undefined) return problem
    }
  }
  if (waiting.size > 0) {
    return `An assistant message with 'tool_calls' must be followed by tool messages (${[...waiting].join(", ")})`
  }
  return undefined
}

const sourceProblem = (block: any, at: string): string | undefined => {
  const source = block.source
  if (source?.type === "url") return typeof source.url === "string" ? undefined : `${at}.source.url: Field required`
  if (block.type === "document" && source?.type === "text") {
    return typeof source.data === "string" ? undefined : `${at}.source.data: Field required`
  }
  if (source?.type !== "base64") return `${at}.source.type: Input should be 'base64' or 'url'`
  const bytes = decode64(source.data)
  if (bytes === undefined) return `${at}.source.data: invalid base64 data`
  if (block.type === "image") {
    if (!IMAGE_TYPES.includes(source.media_type)) {
      return `${at}.source.media_type: Input should be one of ${IMAGE_TYPES.join(", ")}`
    }
    if (magic(bytes) !== source.media_type) {
      return `${at}: Image does not match the provided media type ${source.media_type}`
    }
    return undefined
  }
  if (source.media_type !== "application/pdf") return `${at}.source.media_type: Input should be 'application/pdf'`
  return magic(bytes) === "application/pdf" ? undefined : `${at}: The PDF specified was not valid`
}

/** Why the real Messages API would refuse the turn's blocks (undefined: it would not). */
export const anthropicBlocksProblem = (role: string, content: ReadonlyArray<any>, i: number): string | undefined => {
  let others = false
  for (let j = 0; j < content.length; j++) {
    const block = content[j]
    const at = `messages.${i}.content.${j}`
    if (block.type === "tool_result") {
      if (others) return `messages.${i}: tool_result blocks must come first in a user message, before any other content`
      if (Array.isArray(block.content)) {
        for (const inner of block.content) {
          if (inner.type !== "text" && inner.type !== "image") {
            return `${at}.content: tool_result takes text and image blocks`
          }
          if (inner.type === "image") {
            const problem = sourceProblem(inner, `${at}.content`)
            if (problem !== undefined) return problem
          }
        }
      }
      continue
    }
    others = true
    if (block.type === "image" || block.type === "document") {
      if (role !== "user") return `${at}: ${block.type} blocks are only allowed in user messages`
      const problem = sourceProblem(block, at)
      if (problem !== undefined) return problem
    }
  }
  return undefined
}
