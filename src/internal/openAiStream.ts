/**
 * Streamed `chat.completion.chunk`s → `ChatDelta`s (content routed through a
 * `ThinkSplitter`).
 *
 * @internal
 */
import type { ChatCompletionChunk } from "openai/resources/chat/completions"
import type { ChatDelta } from "../Llm.js"
import { toUsage } from "./openAiRequest.js"
import type { ThinkSplitter } from "./openAiThink.js"

/** Maps one chunk to deltas (content routed through `splitter`). */
export const chunkToDeltas = (chunk: ChatCompletionChunk, splitter: ThinkSplitter): Array<ChatDelta> => {
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
  if (chunk.usage) out.push({ _tag: "Usage", usage: toUsage(chunk.usage) })
  return out
}
