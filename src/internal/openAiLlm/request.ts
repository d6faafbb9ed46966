/**
 * Mapping between the engine's LLM contract (`Llm.ts`) and the OpenAI
 * chat-completions wire shapes: request parameters, replies, usage, errors.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import OpenAI from "openai"
import type { APIError } from "openai/error"
import type {
  ChatCompletion,
  ChatCompletionCreateParamsBase,
  ChatCompletionMessageParam
} from "openai/resources/chat/completions"
import type { Abilities, ChatRequest, ChatResponse, ResponseToolCall } from "../../Llm.js"
import { LlmError, parseToolArguments, splitThinking } from "../../Llm.js"
import type { ChatMessage, ContentPart } from "../../Message.js"
import type { Usage } from "../../Usage.js"
import * as UsageM from "../../Usage.js"
import * as Attached from "../llm/attachments.js"
import { isContextOverflowMessage } from "../llm/contextOverflow.js"
import { promptCacheKey } from "../llm/promptCacheKey.js"
import { parseRetryAfter } from "../llm/retryAfter.js"

/** What the request mapping needs to know about the model. */
export interface RequestSettings {
  readonly model: string
  readonly abilities: Abilities
  readonly temperature?: number | undefined
  /** Send assistant `reasoning_content` back to the provider (default: strip it). */
  readonly sendReasoningContent?: boolean | undefined
  /** Extra body fields merged into every request (provider-specific knobs). */
  readonly extraBody?: Record<string, unknown> | undefined
  /** Send `prompt_cache_key` (one per conversation: see `promptCacheKey`). */
  readonly promptCacheKey?: boolean | undefined
  /** What the model takes and where attachments' bytes are. */
  readonly attachments: Attached.Context
}

/** A content part on the wire: text, `image_url` (a data URL or the caller's URL), `file` (a PDF as a data URL). */
const toPart = (p: Attached.Part | ContentPart): Record<string, unknown> => {
  if (!("_tag" in p)) return p
  switch (p._tag) {
    case "Text":
      return { type: "text", text: p.text }
    case "Image":
      return { type: "image_url", image_url: { url: Attached.dataUrl(p.mediaType, p.data) } }
    case "ImageUrl":
      return {
        type: "image_url",
        image_url: p.detail !== undefined ? { url: p.url, detail: p.detail } : { url: p.url }
      }
    case "Pdf":
      return { type: "file", file: { filename: p.name, file_data: Attached.dataUrl("application/pdf", p.data) } }
  }
}

const toMessage = (m: ChatMessage | Attached.Prepared, sendReasoning: boolean): ChatCompletionMessageParam => {
  switch (m.role) {
    case "system":
      return { role: "system", content: m.content }
    case "user":
      return {
        role: "user",
        content: typeof m.content === "string"
          ? m.content
          : (m.content as ReadonlyArray<Attached.Part | ContentPart>).map(toPart) as any
      }
    case "tool":
      return { role: "tool", tool_call_id: m.tool_call_id, content: m.content }
    case "assistant": {
      const out: Record<string, unknown> = { role: "assistant", content: m.content }
      if (m.tool_calls && m.tool_calls.length > 0) {
        out.tool_calls = m.tool_calls.map((c) => ({
          id: c.id,
          type: "function",
          function: { name: c.function.name, arguments: c.function.arguments }
        }))
      }
      if (sendReasoning && m.reasoning_content) out.reasoning_content = m.reasoning_content
      return out as unknown as ChatCompletionMessageParam
    }
  }
}

/**
 * The request body (without `stream`). Tools and `tool_choice` are omitted when no
 * tools are advertised; `tool_choice` is omitted for models without tool-choice
 * support, `response_format: json_object` for models without JSON mode.
 */
export const toParams = (
  request: ChatRequest,
  settings: RequestSettings,
  prepared?: ReadonlyArray<Attached.Prepared>
): ChatCompletionCreateParamsBase => {
  const sendReasoning = settings.sendReasoningContent ?? false
  const params: Record<string, unknown> = {
    ...settings.extraBody,
    model: settings.model,
    messages: (prepared ?? request.messages).map((m) => toMessage(m, sendReasoning))
  }
  if (request.tools && request.tools.length > 0) {
    params.tools = request.tools.map((t) => ({
      type: "function",
      function: {
        name: t.function.name,
        description: t.function.description,
        parameters: t.function.parameters,
        ...(t.function.strict !== undefined ? { strict: t.function.strict } : {})
      }
    }))
    if (settings.abilities.toolChoice) params.tool_choice = request.toolChoice ?? "auto"
  }
  const format = request.responseFormat?.type
  const abilities = settings.abilities
  const sent = format === "json_object"
    ? abilities.jsonMode
    : format === "json_schema"
    ? abilities.jsonSchema === true
    : format !== undefined
  if (sent) {
    params.response_format = request.responseFormat
  }
  const temperature = request.temperature ?? settings.temperature
  if (temperature !== undefined) params.temperature = temperature
  if (request.maxTokens !== undefined) params.max_tokens = request.maxTokens
  if (settings.promptCacheKey) params.prompt_cache_key = promptCacheKey(request)
  return params as unknown as ChatCompletionCreateParamsBase
}

/**
 * The request body with its attachments: read from the store now (a request
 * without any maps at once), each one the model does not take a note.
 */
export const paramsOf = (
  request: ChatRequest,
  settings: RequestSettings
): Effect.Effect<ChatCompletionCreateParamsBase, LlmError> =>
  Attached.isPlain(request)
    ? Effect.sync(() => toParams(request, settings))
    : Effect.map(Attached.prepare(request.messages, settings.attachments), (prepared) =>
      toParams(request, settings, prepared))

/** Usage from the wire (missing usage counts the call with zero tokens). */
export const toUsage = (usage: ChatCompletion["usage"] | null | undefined): Usage => {
  if (!usage) return UsageM.make(0, 0)
  const cached = usage.prompt_tokens_details?.cached_tokens
  const prompt = usage.prompt_tokens ?? 0
  const completion = usage.completion_tokens ?? 0
  return UsageM.make(prompt, completion, typeof cached === "number" ? { cached } : undefined)
}

const decodeError = (message: string) => new LlmError({ reason: "Decode", message: `Malformed LLM reply: ${message}` })

// A string, or (some providers) an array of parts whose text parts are joined.
const contentText = (content: unknown): string => {
  if (typeof content === "string") return content
  if (!Array.isArray(content)) return ""
  let out = ""
  for (const part of content) {
    if (part && typeof part === "object" && typeof (part as { text?: unknown }).text === "string") {
      out += (part as { text: string }).text
    }
  }
  return out
}

/** Maps a `chat.completion` body; fails with a `Decode` error when it has no usable choice. */
export const toChatResponse = (body: ChatCompletion): ChatResponse | LlmError => {
  if (body === null || typeof body !== "object") return decodeError("the body is not an object")
  const embedded = (body as { error?: unknown }).error
  if (embedded !== null && typeof embedded === "object") {
    // some gateways answer 200 with an error body
    return toLlmError(new OpenAI.APIError(undefined, embedded, undefined, undefined))
  }
  const choice = Array.isArray(body.choices) ? body.choices[0] : undefined
  if (!choice || typeof choice !== "object" || !choice.message || typeof choice.message !== "object") {
    return decodeError("no choices in the reply")
  }
  const message = choice.message as ChatCompletion.Choice["message"] & {
    reasoning_content?: unknown
    reasoning?: unknown
  }
  const rawContent = contentText(message.content)
  const split = splitThinking(rawContent)
  const providerReasoning = typeof message.reasoning_content === "string"
    ? message.reasoning_content
    : typeof message.reasoning === "string"
    ? message.reasoning
    : ""
  const reasoning = [providerReasoning.trim(), split.reasoning].filter((s) => s !== "").join("\n\n")
  const toolCalls: Array<ResponseToolCall> = []
  const rawCalls = Array.isArray(message.tool_calls) ? message.tool_calls : []
  for (let i = 0; i < rawCalls.length; i++) {
    const call = rawCalls[i] as { id?: unknown; function?: { name?: unknown; arguments?: unknown } }
    const name = call?.function?.name
    if (typeof name !== "string") return decodeError(`tool call ${i} has no function name`)
    const args = typeof call.function?.arguments === "string" ? call.function.arguments : ""
    toolCalls.push({
      id: typeof call.id === "string" && call.id !== "" ? call.id : `call_${i}`,
      name,
      arguments: args,
      parsed: parseToolArguments(args)
    })
  }
  return {
    content: split.content,
    ...(reasoning !== "" ? { reasoning } : {}),
    toolCalls,
    finishReason: typeof choice.finish_reason === "string" ? choice.finish_reason : null,
    usage: toUsage(body.usage)
  }
}

const describe = (e: APIError): string => {
  const err = e.error as { message?: unknown } | undefined
  const detail = typeof err?.message === "string" ? err.message : e.message
  return detail
}

/** The delay the provider asked for (`retryAfter.ts`), from the SDK's `Headers`. */
const retryAfterOf = (headers: unknown): number | undefined => {
  if (!headers || typeof (headers as Headers).get !== "function") return undefined
  const h = headers as Headers
  // a plain function (the SDK's error mapping), not an effect: the date form reads the wall clock here
  return parseRetryAfter((name) => h.get(name), Date.now())
}

/** Classifies anything the SDK throws into an `LlmError` with a reason. */
export const toLlmError = (cause: unknown): LlmError => {
  if (cause instanceof LlmError) return cause
  if (cause instanceof OpenAI.APIConnectionTimeoutError) {
    return new LlmError({ reason: "Timeout", message: "LLM request timed out" })
  }
  if (cause instanceof OpenAI.APIUserAbortError) {
    return new LlmError({ reason: "Connection", message: "LLM request aborted" })
  }
  if (cause instanceof OpenAI.APIConnectionError) {
    // fetch wraps the socket error: APIConnectionError → TypeError("fetch failed") → Error("connect ECONNREFUSED …")
    const messages: Array<string> = []
    let inner = (cause as { cause?: unknown }).cause
    for (let depth = 0; inner instanceof Error && depth < 4; depth++) {
      messages.push(inner.message)
      inner = (inner as { cause?: unknown }).cause
    }
    const detail = messages.length > 0 ? `: ${messages[messages.length - 1]}` : ""
    return new LlmError({ reason: "Connection", message: `Could not reach the LLM endpoint${detail}` })
  }
  if (cause instanceof OpenAI.APIError) {
    const status = cause.status
    const detail = describe(cause)
    const code = (cause.error as { code?: unknown } | undefined)?.code
    const withStatus = (reason: LlmError["reason"], prefix: string, retryAfterMs?: number) =>
      new LlmError({
        reason,
        message: `${prefix}${status !== undefined ? ` (HTTP ${status})` : ""}: ${detail}`,
        ...(status !== undefined ? { status } : {}),
        ...(retryAfterMs !== undefined ? { retryAfterMs } : {})
      })
    if (
      code === "context_length_exceeded" ||
      ((status === undefined || status === 400 || status === 413 || status === 422) && isContextOverflowMessage(detail))
    ) {
      return withStatus("ContextOverflow", "The request exceeds the model's context window")
    }
    if (status === undefined) {
      if (code === "rate_limit_exceeded") return withStatus("RateLimited", "LLM rate limit")
      return withStatus("Server", "LLM stream error")
    }
    if (status === 429) return withStatus("RateLimited", "LLM rate limit", retryAfterOf(cause.headers))
    if (status === 408) return withStatus("Timeout", "LLM request timed out")
    if (status >= 500) return withStatus("Server", "LLM server error")
    if (status === 401 || status === 403) return withStatus("Auth", "LLM authentication failed")
    if (status >= 400) return withStatus("BadRequest", "LLM rejected the request")
    return withStatus("Unknown", "Unexpected LLM response")
  }
  if (cause instanceof SyntaxError) {
    return decodeError(cause.message)
  }
  const message = cause instanceof Error ? cause.message : String(cause)
  return new LlmError({ reason: "Unknown", message: `LLM call failed: ${message}` })
}
