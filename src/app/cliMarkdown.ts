/**
 * Markdown for a terminal, one line at a time (the answer streams in): bold,
 * italic, `code`, ~~strike~~ and links as ANSI styles (inline markup parsed by
 * markdown-it, HTML left as text); headings, lists, quotes, rules and fenced
 * code blocks by their line prefix.
 *
 * @internal
 */
import MarkdownIt from "markdown-it"

const md = new MarkdownIt({ html: false, linkify: true })

const BOLD = ["\x1b[1m", "\x1b[22m"] as const
const DIM = ["\x1b[2m", "\x1b[22m"] as const
const ITALIC = ["\x1b[3m", "\x1b[23m"] as const
const UNDERLINE = ["\x1b[4m", "\x1b[24m"] as const
const STRIKE = ["\x1b[9m", "\x1b[29m"] as const
const CYAN = ["\x1b[36m", "\x1b[39m"] as const

const wrap = ([on, off]: readonly [string, string], text: string) => `${on}${text}${off}`

/** Inline markdown of one line as ANSI-styled text. @internal */
export const inline = (text: string): string => {
  const children = md.parseInline(text, {})[0]?.children ?? []
  let out = ""
  const links: Array<string | undefined> = []
  for (const token of children) {
    switch (token.type) {
      case "text":
        out += token.content
        break
      case "strong_open":
        out += BOLD[0]
        break
      case "strong_close":
        out += BOLD[1]
        break
      case "em_open":
        out += ITALIC[0]
        break
      case "em_close":
        out += ITALIC[1]
        break
      case "s_open":
        out += STRIKE[0]
        break
      case "s_close":
        out += STRIKE[1]
        break
      case "code_inline":
        out += wrap(CYAN, token.content)
        break
      case "link_open": {
        const href = token.attrGet("href")
        links.push(token.markup === "linkify" || href === null ? undefined : String(href))
        out += UNDERLINE[0]
        break
      }
      case "link_close": {
        const href = links.pop()
        out += UNDERLINE[1] + (href ? wrap(DIM, ` (${href})`) : "")
        break
      }
      case "image":
        out += `[${token.content}]`
        break
      case "softbreak":
      case "hardbreak":
        out += "\n"
        break
      default:
        out += token.content
    }
  }
  return out
}

/**
 * A renderer of complete lines that remembers whether it is inside a fenced
 * code block.
 *
 * @internal
 */
export const makeLineRenderer = (): { readonly line: (text: string) => string } => {
  let fence: string | undefined
  return {
    line: (text) => {
      const fenceMark = /^\s*(`{3,}|~{3,})/.exec(text)?.[1]
      if (fence !== undefined) {
        if (fenceMark !== undefined && fenceMark[0] === fence[0] && fenceMark.length >= fence.length) fence = undefined
        return fence === undefined ? wrap(DIM, text) : wrap(CYAN, text)
      }
      if (fenceMark !== undefined) {
        fence = fenceMark
        return wrap(DIM, text)
      }
      const heading = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(text)
      if (heading) return wrap(BOLD, wrap(UNDERLINE, inline(heading[1])))
      if (/^\s*([-*_])(?:\s*\1){2,}\s*$/.test(text)) return wrap(DIM, "─".repeat(40))
      if (/^\s*\|?\s*:?-{3,}:?\s*(?:\|\s*:?-{3,}:?\s*)*\|?\s*$/.test(text) && text.includes("-")) {
        return wrap(DIM, text.replace(/-/g, "─"))
      }
      const quote = /^(\s*)>\s?(.*)$/.exec(text)
      if (quote) return `${quote[1]}${wrap(DIM, "│ ")}${wrap(DIM, inline(quote[2]))}`
      const bullet = /^(\s*)[-*+]\s+(.*)$/.exec(text)
      if (bullet) return `${bullet[1]}• ${inline(bullet[2])}`
      const numbered = /^(\s*)(\d+[.)])\s+(.*)$/.exec(text)
      if (numbered) return `${numbered[1]}${numbered[2]} ${inline(numbered[3])}`
      return inline(text)
    }
  }
}
