/**
 * Routing of streamed text inside `<think>…</think>` to reasoning, surviving tags
 * split across chunks. No SDK dependency (the scripted LLM uses it too).
 *
 * @internal
 */
import type { ChatDelta } from "../../Llm.js"

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

