/**
 * Streamed `chat.completion.chunk`s → `ChatDelta`s (content routed through a
 * `ThinkSplitter`).
 *
 * @internal
 */
import type { ChatCompletionChunk } from "openai/resources/chat/completions"
import type { ChatDelta } from "../../Llm.js"
import type { ThinkSplitter } from "../llm/think.js"
import { toUsage } from "./request.js"

/** Per-stream state: the think splitter and the latest usage seen. */
export interface StreamState {
  readonly splitter: ThinkSplitter
  usage: ChatCompletionChunk["usage"] | undefined
}

/**
 * Maps one chunk to deltas (content routed through the splitter). Usage is only
 * remembered: some providers repeat cumulative usage on every chunk, so `endDeltas`
 * emits the last one, once.
 */
export const chunkToDeltas = (chunk: ChatCompletionChunk, state: StreamState): Array<ChatDelta> => {
  const splitter = state.splitter
  const out: Array<ChatDelta> = []
  const choices = Array.isArray(chunk.choices) ? chunk.choices : []
  for (const choice of choices) {
    if ((choice.index ?? 0) !== 0) continue
    const delta = (choice.delta ?? {}) as ChatCompletionChunk.Choice["delta"] & {
      reasoning_content?: unknown
      reasoning?: unknown
    }
    const reasoning = typeof delta.reasoning_content === "string"
      ? delta.reasoning_content
      : typeof delta.reasoning === "string"
      ? delta.reasoning
      : ""
    if (reasoning !== "") out.push({ _tag: "Reasoning", text: reasoning })
    if (typeof delta.content === "string" && delta.content !== "") {
      for (const d of splitter.push(delta.content)) out.push(d)
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const call of delta.tool_calls) {
        const d: { -readonly [K in keyof Extract<ChatDelta, { _tag: "ToolCall" }>]: any } = {
          _tag: "ToolCall",
          index: typeof call.index === "number" ? call.index : 0
        }
        if (typeof call.id === "string" && call.id !== "") d.id = call.id
        if (typeof call.function?.name === "string" && call.function.name !== "") d.name = call.function.name
        if (typeof call.function?.arguments === "string" && call.function.arguments !== "") {
          d.arguments = call.function.arguments
        }
        out.push(d as ChatDelta)
      }
    }
    if (choice.finish_reason) {
      for (const d of splitter.flush()) out.push(d)
      out.push({ _tag: "Finish", reason: choice.finish_reason })
    }
  }
  if (chunk.usage) state.usage = chunk.usage
  return out
}

/** What is left when the stream ends: held-back text, then the usage (if any). */
export const endDeltas = (state: StreamState): Array<ChatDelta> => {
  const out = state.splitter.flush()
  if (state.usage) out.push({ _tag: "Usage", usage: toUsage(state.usage) })
  return out
}
