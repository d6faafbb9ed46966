/**
 * Message content in the shape of the GenAI conventions (`gen_ai.system_instructions`,
 * `gen_ai.input.messages`, `gen_ai.output.messages`: JSON arrays of messages made of
 * typed parts). Only built when content capture is on.
 *
 * @internal
 */
import * as Json from "../../Json.js"
import type { ResponseToolCall } from "../../Llm.js"
import type { ChatMessage, Content, FileRef } from "../../Message.js"

type Part =
  | { readonly type: "text"; readonly content: string }
  | { readonly type: "uri"; readonly modality: "image"; readonly uri: string }
  | { readonly type: "file"; readonly modality: string; readonly mime_type: string; readonly file_id: string }
  | { readonly type: "tool_call"; readonly id: string; readonly name: string; readonly arguments: unknown }
  | { readonly type: "tool_call_response"; readonly id: string; readonly response: string }

/** Inline images (data URLs) are not copied into spans. */
const imageUri = (url: string): string => (url.startsWith("data:") ? `${url.slice(0, url.indexOf(",") + 1)}…` : url)

/** An attachment by its hash (or its caller's URL): never its bytes. */
const filePart = (file: FileRef): Part =>
  file.url !== undefined && file.sha256 === undefined
    ? { type: "uri", modality: "image", uri: file.url }
    : {
      type: "file",
      modality: file.media_type.startsWith("image/") ? "image" : "document",
      mime_type: file.media_type,
      file_id: file.sha256 ?? file.name
    }

const contentParts = (content: Content): Array<Part> =>
  typeof content === "string"
    ? [{ type: "text", content }]
    : content.map((p): Part =>
      p.type === "text"
        ? { type: "text", content: p.text }
        : p.type === "file"
        ? filePart(p.file)
        : { type: "uri", modality: "image", uri: imageUri(p.image_url.url) }
    )

const parsedArguments = (raw: string): unknown => {
  try {
    return JSON.parse(raw)
  } catch {
    return raw
  }
}

const toolCallPart = (id: string, name: string, args: string): Part => ({
  type: "tool_call",
  id,
  name,
  arguments: parsedArguments(args)
})

/** The system messages, as `gen_ai.system_instructions` (undefined when there are none). */
export const systemInstructions = (messages: ReadonlyArray<ChatMessage>): string | undefined => {
  const parts: Array<Part> = []
  for (const m of messages) if (m.role === "system") parts.push({ type: "text", content: m.content })
  return parts.length > 0 ? Json.stringify(parts) : undefined
}

/** The other messages, as `gen_ai.input.messages`. */
export const inputMessages = (messages: ReadonlyArray<ChatMessage>): string => {
  const out: Array<{ readonly role: string; readonly parts: ReadonlyArray<Part> }> = []
  for (const m of messages) {
    switch (m.role) {
      case "system":
        break
      case "user":
        out.push({ role: "user", parts: contentParts(m.content) })
        break
      case "assistant": {
        const parts: Array<Part> = m.content ? [{ type: "text", content: m.content }] : []
        for (const c of m.tool_calls ?? []) parts.push(toolCallPart(c.id, c.function.name, c.function.arguments))
        out.push({ role: "assistant", parts })
        break
      }
      case "tool":
        out.push({ role: "tool", parts: [{ type: "tool_call_response", id: m.tool_call_id, response: m.content }] })
        break
    }
  }
  return Json.stringify(out)
}

/** A reply, as `gen_ai.output.messages`. */
export const outputMessages = (
  content: string,
  toolCalls: ReadonlyArray<ResponseToolCall>,
  finishReason: string | null
): string => {
  const parts: Array<Part> = content !== "" ? [{ type: "text", content }] : []
  for (const c of toolCalls) parts.push(toolCallPart(c.id, c.name, c.arguments))
  return Json.stringify([{ role: "assistant", parts, finish_reason: finishReason ?? "stop" }])
}

/** A query as `gen_ai.input.messages` (the run's input). */
export const queryMessages = (query: Content): string => Json.stringify([{ role: "user", parts: contentParts(query) }])
