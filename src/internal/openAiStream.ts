/**
 * Streamed `chat.completion.chunk`s → `ChatDelta`s, with `<think>…</think>` routing
 * that survives tags split across chunks.
 *
 * @internal
 */
import type { ChatCompletionChunk } from "openai/resources/chat/completions"
import type { ChatDelta } from "../Llm.js"
import { toUsage } from "./openAiRequest.js"

const OPEN = "<think>"
const CLOSE = "</think>"

/** Length of the longest suffix of `text` that is a proper prefix of `tag`. */
const partialTagSuffix = (text: string, tag: string): number => {
  const max = Math.min(text.length, tag.length - 1)
  for (let n = max; n > 0; n--) {
    if (tag.startsWith(text.slice(text.length - n))) return n
  }
  return 0
}

/**
 * A stateful splitter: feed it content pieces, get Content / Reasoning deltas.
 * Text inside `<think>…</think>` becomes reasoning; a tag cut across two chunks is
 * held back until the next chunk decides it; whitespace right after `</think>` is
 * dropped (as `splitThinking` trims it).
 */
export class ThinkSplitter {
  private inThink = false
  private held = ""
  private skipLeadingWs = false

  push(piece: string): Array<ChatDelta> {
    const out: Array<ChatDelta> = []
    let text = this.held + piece
    this.held = ""
    while (text.length > 0) {
      const tag = this.inThink ? CLOSE : OPEN
      const at = text.indexOf(tag)
      if (at >= 0) {
        this.emit(out, text.slice(0, at))
        text = text.slice(at + tag.length)
        this.inThink = !this.inThink
        if (!this.inThink) this.skipLeadingWs = true
        continue
      }
      const keep = partialTagSuffix(text, tag)
      this.emit(out, text.slice(0, text.length - keep))
      this.held = text.slice(text.length - keep)
      break
    }
    return out
  }

  /** Emits whatever is held back (a dangling partial tag is plain text). */
  flush(): Array<ChatDelta> {
    const out: Array<ChatDelta> = []
    const rest = this.held
    this.held = ""
    this.emit(out, rest)
    return out
  }

  private emit(out: Array<ChatDelta>, text: string): void {
    if (text === "") return
    if (this.inThink) {
      out.push({ _tag: "Reasoning", text })
      return
    }
    if (this.skipLeadingWs) {
      text = text.replace(/^\s+/, "")
      if (text === "") return
      this.skipLeadingWs = false
    }
    out.push({ _tag: "Content", text })
  }
}

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
