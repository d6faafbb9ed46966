/**
 * `@effect/ai` replies, stream parts and errors in our terms: `ChatResponse`,
 * `ChatDelta`s, `Usage` (with cache reads and writes) and `LlmError` reasons.
 *
 * @internal
 */
import type * as AiError from "@effect/ai/AiError"
import type * as Response from "@effect/ai/Response"
import type { ChatDelta, ChatResponse, LlmErrorReason, ResponseToolCall } from "../../Llm.js"
import { LlmError, parseToolArguments } from "../../Llm.js"
import type { Usage } from "../../Usage.js"
import * as UsageM from "../../Usage.js"
import { isContextOverflowMessage } from "../llm/contextOverflow.js"
import { parseRetryAfter } from "../llm/retryAfter.js"

/** OpenAI-style finish reasons, as the agent reads them. */
export const finishReason = (reason: Response.FinishReason): string | null => {
  switch (reason) {
    case "tool-calls":
      return "tool_calls"
    case "content-filter":
      return "content_filter"
    case "unknown":
      return null
    default:
      return reason
  }
}

/** Raw provider usage from a finish part's metadata (Anthropic's shape), when present. */
const rawUsage = (finish: Response.FinishPart): Record<string, unknown> | undefined => {
  const metadata = finish.metadata as Record<string, { readonly usage?: unknown } | undefined> | undefined
  const usage = metadata?.anthropic?.usage
  return usage !== null && typeof usage === "object" ? usage as Record<string, unknown> : undefined
}

const num = (v: unknown): number => (typeof v === "number" && Number.isFinite(v) ? v : 0)

/**
 * Usage of one call. `prompt_tokens` counts every input token, cached or not (the
 * OpenAI convention): Anthropic reports the uncached remainder as `input_tokens`
 * and the cache reads and writes beside it, so they are added back.
 */
export const toUsage = (finish: Response.FinishPart | undefined): Usage => {
  if (finish === undefined) return UsageM.make(0, 0)
  const raw = rawUsage(finish)
  const output = num(finish.usage.outputTokens)
  if (raw !== undefined) {
    const read = num(raw.cache_read_input_tokens)
    const write = num(raw.cache_creation_input_tokens)
    return UsageM.make(num(raw.input_tokens) + read + write, output, { cached: read, cacheWrite: write })
  }
  const cached = finish.usage.cachedInputTokens
  return UsageM.make(num(finish.usage.inputTokens), output, cached !== undefined ? { cached } : undefined)
}

const toolCall = (id: string, name: string, params: unknown): ResponseToolCall => {
  const args = params === undefined ? "" : JSON.stringify(params)
  return { id, name, arguments: args, parsed: parseToolArguments(args) }
}

/** A whole reply (`generateText`'s parts). */
export const toChatResponse = (parts: ReadonlyArray<Response.AnyPart>): ChatResponse | LlmError => {
  let content = ""
  let reasoning = ""
  const toolCalls: Array<ResponseToolCall> = []
  let finish: Response.FinishPart | undefined
  for (const part of parts) {
    switch (part.type) {
      case "text":
        content += part.text
        break
      case "reasoning":
        reasoning += part.text
        break
      case "tool-call":
        if (!part.providerExecuted) toolCalls.push(toolCall(part.id, part.name, part.params))
        break
      case "finish":
        finish = part
        break
      case "error":
        return errorPart(part.error)
    }
  }
  return {
    content,
    ...(reasoning !== "" ? { reasoning } : {}),
    toolCalls,
    finishReason: finish ? finishReason(finish.reason) : null,
    usage: toUsage(finish)
  }
}

/** Per-stream state: tool calls by the provider's id, numbered in order of arrival. */
export interface StreamState {
  readonly calls: Map<string, number>
}

export const streamState = (): StreamState => ({ calls: new Map() })

/** One stream part as deltas (an `error` part fails the stream). */
export const partToDeltas = (part: Response.AnyPart, state: StreamState): ReadonlyArray<ChatDelta> | LlmError => {
  switch (part.type) {
    case "text-delta":
      return part.delta === "" ? [] : [{ _tag: "Content", text: part.delta }]
    case "reasoning-delta":
      return part.delta === "" ? [] : [{ _tag: "Reasoning", text: part.delta }]
    case "tool-params-start": {
      if (part.providerExecuted) return []
      const index = state.calls.size
      state.calls.set(part.id, index)
      return [{ _tag: "ToolCall", index, id: part.id, name: part.name }]
    }
    case "tool-params-delta": {
      const index = state.calls.get(part.id)
      return index === undefined || part.delta === "" ? [] : [{ _tag: "ToolCall", index, arguments: part.delta }]
    }
    case "tool-call": {
      // a provider that sends whole calls (no params deltas): the call in one delta
      if (part.providerExecuted || state.calls.has(part.id)) return []
      const index = state.calls.size
      state.calls.set(part.id, index)
      return [{ _tag: "ToolCall", index, id: part.id, name: part.name, arguments: JSON.stringify(part.params) }]
    }
    case "finish":
      return [{ _tag: "Finish", reason: finishReason(part.reason) }, { _tag: "Usage", usage: toUsage(part) }]
    case "error":
      return errorPart(part.error)
    default:
      return []
  }
}

/** An error the provider reported inside a reply or a stream (Anthropic: an `error` event). */
const errorPart = (error: unknown): LlmError => {
  const e = error as { readonly type?: unknown; readonly message?: unknown } | undefined
  const type = typeof e?.type === "string" ? e.type : "error"
  const message = typeof e?.message === "string" ? e.message : type
  const reason: LlmErrorReason = type === "overloaded_error" || type === "api_error"
    ? "Server"
    : type === "rate_limit_error"
    ? "RateLimited"
    : isContextOverflowMessage(message)
    ? "ContextOverflow"
    : "Server"
  return new LlmError({ reason, message: `LLM stream error (${type}): ${message}` })
}

/** The provider's own error text from a body (`{error:{type,message}}`), never the request (it holds the key). */
const bodyDetail = (body: string | undefined): { readonly type?: string; readonly message: string } => {
  if (body === undefined || body === "") return { message: "no details" }
  try {
    const parsed = JSON.parse(body) as { error?: { type?: unknown; message?: unknown; code?: unknown } | string }
    const err = parsed.error
    if (typeof err === "string") return { message: err }
    if (err && typeof err === "object") {
      return {
        ...(typeof err.type === "string" ? { type: err.type } : typeof err.code === "string" ? { type: err.code } : {}),
        message: typeof err.message === "string" ? err.message : body.slice(0, 300)
      }
    }
  } catch {
    // not JSON
  }
  return { message: body.slice(0, 300) }
}

/**
 * Classifies an `AiError` into an `LlmError` reason. The message carries the
 * status and the provider's error text, never the request (its headers hold the
 * API key).
 */
export const toLlmError = (error: AiError.AiError): LlmError => {
  switch (error._tag) {
    case "HttpResponseError": {
      const status = error.response.status
      if (error.reason !== "StatusCode") {
        // a 200 whose body could not be read or decoded: a stream cut mid-way
        return new LlmError({ reason: "Connection", message: `The LLM reply was cut or unreadable (${error.reason})` })
      }
      const detail = bodyDetail(error.body)
      const text = `${detail.type ? `${detail.type}: ` : ""}${detail.message}`
      const make = (reason: LlmErrorReason, prefix: string, retryAfter?: number) =>
        new LlmError({
          reason,
          message: `${prefix} (HTTP ${status}): ${text}`,
          status,
          ...(retryAfter !== undefined ? { retryAfterMs: retryAfter } : {})
        })
      if ((status === 400 || status === 413 || status === 422) && isContextOverflowMessage(detail.message)) {
        return make("ContextOverflow", "The request exceeds the model's context window")
      }
      if (status === 429) {
        // a plain function (the error mapping), not an effect: the date form reads the wall clock here
        return make(
          "RateLimited",
          "LLM rate limit",
          parseRetryAfter((name) => error.response.headers[name], Date.now())
        )
      }
      if (status === 408) return make("Timeout", "LLM request timed out")
      if (status >= 500) return make("Server", "LLM server error")
      if (status === 401 || status === 403) return make("Auth", "LLM authentication failed")
      if (status >= 400) return make("BadRequest", "LLM rejected the request")
      return make("Unknown", "Unexpected LLM response")
    }
    case "HttpRequestError":
      return error.reason === "Transport"
        ? new LlmError({
          reason: "Connection",
          message: `Could not reach the LLM endpoint: ${error.description ?? "transport error"}`
        })
        : new LlmError({ reason: "BadRequest", message: `LLM request could not be sent (${error.reason})` })
    case "MalformedOutput":
      return new LlmError({
        reason: "Decode",
        message: `Malformed LLM reply: ${error.description ?? "schema mismatch"}`
      })
    case "MalformedInput":
      return new LlmError({
        reason: "BadRequest",
        message: `LLM request rejected before sending: ${error.description ?? "malformed input"}`
      })
    case "UnknownError":
      return new LlmError({ reason: "Unknown", message: `LLM call failed: ${error.description ?? "unknown error"}` })
  }
}
