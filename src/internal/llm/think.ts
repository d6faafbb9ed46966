/**
 * `<think>…</think>` blocks (models such as Qwen/QwQ and DeepSeek-R1 distills
 * inline their reasoning that way): one scanner decides what is inside a
 * block, for a whole reply (`splitThinking`) and for a streamed one, whose tags
 * may be cut across chunks (`ThinkSplitter`). No SDK dependency (the scripted
 * LLM uses it too).
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

/** Where the scanner reports what it read. */
interface Sink {
  /** Text outside a block (`inThink` false) or inside one. */
  readonly text: (inThink: boolean, text: string) => void
  /** A block was closed by `</think>`. */
  readonly closed: () => void
}

/**
 * The scanner: text in, text outside and inside blocks out, in order. A tag cut
 * at the end of a piece is held back until the next piece (or `end`) decides
 * it; a block never closed runs to the end of the text.
 */
class Scanner {
  inThink = false
  private held = ""

  feed(piece: string, sink: Sink): void {
    let text = this.held + piece
    this.held = ""
    while (text.length > 0) {
      const tag = this.inThink ? CLOSE : OPEN
      const at = text.indexOf(tag)
      if (at >= 0) {
        if (at > 0) sink.text(this.inThink, text.slice(0, at))
        text = text.slice(at + tag.length)
        if (this.inThink) sink.closed()
        this.inThink = !this.inThink
        continue
      }
      const keep = partialTagSuffix(text, tag)
      if (keep < text.length) sink.text(this.inThink, text.slice(0, text.length - keep))
      this.held = text.slice(text.length - keep)
      break
    }
  }

  /** What is held back, as text of the current side (a dangling partial tag is plain text). */
  end(sink: Sink): void {
    const rest = this.held
    this.held = ""
    if (rest !== "") sink.text(this.inThink, rest)
  }
}

/**
 * Moves `<think>…</think>` blocks out of a whole reply's text: the rest
 * trimmed, each block's text trimmed and the blocks joined by a blank line.
 */
export const splitThinking = (content: string): { readonly content: string; readonly reasoning: string } => {
  if (!content.includes(OPEN)) return { content, reasoning: "" }
  let rest = ""
  let block = ""
  const blocks: Array<string> = []
  const sink: Sink = {
    text: (inThink, text) => {
      if (inThink) block += text
      else rest += text
    },
    closed: () => {
      blocks.push(block.trim())
      block = ""
    }
  }
  const scanner = new Scanner()
  scanner.feed(content, sink)
  scanner.end(sink)
  if (scanner.inThink) blocks.push(block.trim())
  return { content: rest.trim(), reasoning: blocks.join("\n\n") }
}

/**
 * A streamed reply's splitter: feed it content pieces, get Content / Reasoning
 * deltas. Text inside `<think>…</think>` becomes reasoning; whitespace right
 * after `</think>` is dropped (as `splitThinking` trims it).
 */
export class ThinkSplitter {
  private readonly scanner = new Scanner()
  private skipLeadingWs = false

  push(piece: string): Array<ChatDelta> {
    const out: Array<ChatDelta> = []
    this.scanner.feed(piece, this.sinkInto(out))
    return out
  }

  /** Emits whatever is held back (a dangling partial tag is plain text). */
  flush(): Array<ChatDelta> {
    const out: Array<ChatDelta> = []
    this.scanner.end(this.sinkInto(out))
    return out
  }

  private sinkInto(out: Array<ChatDelta>): Sink {
    return {
      text: (inThink, text) => {
        if (inThink) {
          out.push({ _tag: "Reasoning", text })
          return
        }
        if (this.skipLeadingWs) {
          text = text.replace(/^\s+/, "")
          if (text === "") return
          this.skipLeadingWs = false
        }
        out.push({ _tag: "Content", text })
      },
      closed: () => {
        this.skipLeadingWs = true
      }
    }
  }
}
