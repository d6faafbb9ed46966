/**
 * Our requests in `@effect/ai` terms: messages → `Prompt`, tool definitions → a
 * toolkit whose parameters ARE our JSON Schemas, tool choice, and the prompt-cache
 * breakpoints.
 *
 * @internal
 */
import * as Prompt from "@effect/ai/Prompt"
import * as Tool from "@effect/ai/Tool"
import type * as Toolkit from "@effect/ai/Toolkit"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import type { ChatRequest, ToolChoice as OurToolChoice, ToolDefinition } from "../../Llm.js"
import type { LlmError } from "../../Llm.js"
import { parseToolArguments } from "../../Llm.js"
import type { ChatMessage, ContentPart, ImagePart, TextPart } from "../../Message.js"
import * as Attached from "../llm/attachments.js"

/** Where cache breakpoints go (`"anthropic"`: `cache_control` options; `"none"`: none). */
export type CacheBreakpoints = "anthropic" | "none"

const anthropicBreakpoint = { anthropic: { cacheControl: { type: "ephemeral" } } } as const

/**
 * A tool of the toolkit: its parameters are any value (the model's arguments are
 * decoded by the agent, not here) whose JSON Schema is the definition's own, so the
 * provider sends exactly our schema.
 */
const toTool = (definition: ToolDefinition) =>
  Tool.make(definition.function.name, { description: definition.function.description }).setParameters(
    Schema.Unknown.annotations({ jsonSchema: definition.function.parameters }) as unknown as Schema.Struct<{}>
  )

/** A toolkit that advertises the tools and never runs them (calls are returned to the agent). */
export const toToolkit = (tools: ReadonlyArray<ToolDefinition>): Toolkit.WithHandler<Record<string, Tool.Any>> => {
  const record: Record<string, Tool.Any> = {}
  for (const t of tools) record[t.function.name] = toTool(t)
  return {
    tools: record,
    handle: (name) => Effect.dieMessage(`EffectAiLlm never runs tools (asked to run ${String(name)})`)
  } as Toolkit.WithHandler<Record<string, Tool.Any>>
}

export const toToolChoice = (
  choice: OurToolChoice | undefined
): "auto" | "none" | "required" | { readonly tool: string } =>
  choice === undefined ? "auto" : typeof choice === "string" ? choice : { tool: choice.function.name }

const DATA_URL = /^data:([^;,]+);base64,(.*)$/s

// bytes, not base64 text: @effect/ai-openai sends a file part only from bytes (a string is a file id)
const imageUrlPart = (url: string): Prompt.UserMessagePartEncoded => {
  const match = DATA_URL.exec(url)
  return match
    ? { type: "file", mediaType: match[1], data: Uint8Array.from(Buffer.from(match[2], "base64")) }
    : { type: "file", mediaType: "image/*", data: new URL(url) }
}

const toPart = (part: Attached.Part | TextPart | ImagePart): Prompt.UserMessagePartEncoded => {
  if (!("_tag" in part)) {
    return part.type === "text"
      ? { type: "text", text: part.text }
      : imageUrlPart(part.image_url.url)
  }
  switch (part._tag) {
    case "Text":
      return { type: "text", text: part.text }
    case "Image":
      return { type: "file", mediaType: part.mediaType, data: part.data, fileName: part.name }
    case "ImageUrl":
      return imageUrlPart(part.url)
    case "Pdf":
      return { type: "file", mediaType: "application/pdf", data: part.data, fileName: part.name }
  }
}

const userParts = (
  content: string | ReadonlyArray<Attached.Part | ContentPart>
): Array<Prompt.UserMessagePartEncoded> =>
  typeof content === "string"
    ? [{ type: "text", text: content }]
    // a file part reaching here unprepared is a note (`prepare` resolves them)
    : content.map((part) =>
      toPart(
        !("_tag" in part) && part.type === "file" ? { _tag: "Text", text: Attached.note(part.file) } : part as never
      )
    )

/** Tool-call arguments as the object the provider sends back (invalid JSON: `{}`). */
const argumentsObject = (raw: string): Record<string, unknown> => Either.getOrElse(parseToolArguments(raw), () => ({}))

/**
 * The prompt: leading system messages are the system prompt; a system message
 * later in the conversation (a compaction summary, a nudge) becomes a user
 * message, since providers such as Anthropic take one system prompt only. Tool
 * results carry their tool's name (from the message, else from the call).
 * With `"anthropic"` breakpoints: `cache_control` on the last system message
 * (the tools come before it, so it caches tools + system) and on the newest
 * message.
 */
export const toPrompt = (
  messages: ReadonlyArray<ChatMessage | Attached.Prepared>,
  breakpoints: CacheBreakpoints
): Prompt.Prompt => {
  const names = new Map<string, string>()
  const out: Array<Prompt.MessageEncoded> = []
  let leading = true
  let lastSystem = -1
  for (const m of messages) {
    if (m.role === "system") {
      if (leading) {
        lastSystem = out.length
        out.push({ role: "system", content: m.content })
      } else out.push({ role: "user", content: [{ type: "text", text: m.content }] })
      continue
    }
    leading = false
    switch (m.role) {
      case "user":
        out.push({ role: "user", content: userParts(m.content as string | ReadonlyArray<Attached.Part | ContentPart>) })
        break
      case "assistant": {
        const parts: Array<Prompt.AssistantMessagePartEncoded> = []
        if (m.content !== null && m.content !== "") parts.push({ type: "text", text: m.content })
        for (const c of m.tool_calls ?? []) {
          names.set(c.id, c.function.name)
          parts.push({
            type: "tool-call",
            id: c.id,
            name: c.function.name,
            params: argumentsObject(c.function.arguments)
          })
        }
        // an assistant turn with nothing in it is left out (providers reject empty content)
        if (parts.length > 0) out.push({ role: "assistant", content: parts })
        break
      }
      case "tool":
        out.push({
          role: "tool",
          content: [{
            type: "tool-result",
            id: m.tool_call_id,
            name: m.name ?? names.get(m.tool_call_id) ?? "tool",
            result: m.content,
            isFailure: false,
            providerExecuted: false
          }]
        })
        break
    }
  }
  if (breakpoints === "anthropic") {
    if (lastSystem >= 0) out[lastSystem] = { ...out[lastSystem], options: anthropicBreakpoint } as Prompt.MessageEncoded
    const last = out.length - 1
    if (last > lastSystem && out[last].role !== "assistant") {
      out[last] = { ...out[last], options: anthropicBreakpoint } as Prompt.MessageEncoded
    }
  }
  return Prompt.make(out)
}

/**
 * The prompt of a request with its attachments: read from the store now (a
 * request without any maps at once), each one the model does not take a note.
 */
export const promptOf = (
  request: ChatRequest,
  breakpoints: CacheBreakpoints,
  attachments: Attached.Context
): Effect.Effect<Prompt.Prompt, LlmError> =>
  Attached.isPlain(request)
    ? Effect.sync(() => toPrompt(request.messages, breakpoints))
    : Effect.map(Attached.prepare(request.messages, attachments), (prepared) => toPrompt(prepared, breakpoints))

/** The request's tools, or none. */
export const hasTools = (
  request: ChatRequest
): request is ChatRequest & { readonly tools: ReadonlyArray<ToolDefinition> } =>
  request.tools !== undefined && request.tools.length > 0
