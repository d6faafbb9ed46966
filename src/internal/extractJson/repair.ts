/**
 * Low-level helpers for `ExtractJson`: a string-aware balanced-brace scanner and
 * a repair pass for the JSON that language models typically get wrong (LaTeX
 * backslashes and raw control characters inside strings).
 *
 * All functions are pure, total and linear in the length of their input.
 *
 * @internal
 */

/**
 * LaTeX commands starting with `n`, `r` or `t`: the letters after the
 * backslash collide with the valid JSON escapes `\n`, `\r` and `\t`. In the
 * repair pass a backslash followed by exactly one of these words (the whole
 * run of ASCII letters) is read as LaTeX, any other `\n…`/`\r…`/`\t…` stays a
 * JSON escape (so `"line\nThen"` keeps its newline).
 */
const latexNrt: ReadonlySet<string> = new Set([
  // \n…
  "nabla",
  "natural",
  "ne",
  "nearrow",
  "neg",
  "neq",
  "newline",
  "nexists",
  "ngeq",
  "ni",
  "nleq",
  "nmid",
  "noindent",
  "nolimits",
  "not",
  "notin",
  "nparallel",
  "nsubseteq",
  "nu",
  "nwarrow",
  // \r…
  "rangle",
  "rbrace",
  "rbrack",
  "rceil",
  "rfloor",
  "rho",
  "right",
  "rightarrow",
  "rightharpoonup",
  "rightleftharpoons",
  "rm",
  "rmoustache",
  "rVert",
  "rvert",
  // \t…
  "tan",
  "tanh",
  "tau",
  "text",
  "textbf",
  "textit",
  "textrm",
  "textsf",
  "textstyle",
  "texttt",
  "tfrac",
  "therefore",
  "theta",
  "tilde",
  "times",
  "tiny",
  "to",
  "top",
  "triangle",
  "triangleq",
  "tt"
])

const isAsciiLetter = (code: number): boolean => (code >= 65 && code <= 90) || (code >= 97 && code <= 122)

const isHex = (code: number): boolean =>
  (code >= 48 && code <= 57) || (code >= 65 && code <= 70) || (code >= 97 && code <= 102)

const letterRun = (s: string, from: number): string => {
  let end = from
  while (end < s.length && isAsciiLetter(s.charCodeAt(end))) end++
  return s.slice(from, end)
}

const controlEscape = (code: number): string => {
  switch (code) {
    case 0x0a:
      return "\\n"
    case 0x0d:
      return "\\r"
    case 0x09:
      return "\\t"
    case 0x08:
      return "\\b"
    case 0x0c:
      return "\\f"
    default:
      return "\\u" + code.toString(16).padStart(4, "0")
  }
}

/**
 * Rewrites the inside of every double-quoted string so that it becomes valid
 * JSON:
 * - a backslash that does not start a valid escape (`\alpha`, `\(`, `\sqrt`,
 *   `\u` not followed by 4 hex digits, a trailing `\`) is itself escaped;
 * - `\b` / `\f` followed by an ASCII letter are read as LaTeX (`\frac`,
 *   `\beta`), `\n` / `\r` / `\t` only when the letter run is a known LaTeX
 *   command (`\theta`, `\nabla`, `\right`);
 * - raw control characters (newline, tab, …) are escaped.
 * Text outside strings is copied verbatim. Returns the input itself when
 * nothing had to change.
 *
 * @internal
 */
export const repairJson = (s: string): string => {
  const out: Array<string> = []
  let changed = false
  let inString = false
  let copyFrom = 0
  const n = s.length
  let i = 0
  const flush = (upTo: number) => {
    if (upTo > copyFrom) out.push(s.slice(copyFrom, upTo))
  }
  while (i < n) {
    const code = s.charCodeAt(i)
    if (!inString) {
      if (code === 34 /* " */) inString = true
      i++
      continue
    }
    if (code === 34) {
      inString = false
      i++
      continue
    }
    if (code < 0x20) {
      flush(i)
      out.push(controlEscape(code))
      changed = true
      i++
      copyFrom = i
      continue
    }
    if (code !== 92 /* \ */) {
      i++
      continue
    }
    const next = i + 1 < n ? s.charCodeAt(i + 1) : -1
    let valid: boolean
    switch (next) {
      case 34: // "
      case 92: // \
      case 47: // /
        valid = true
        break
      case 117: // u
        valid = i + 5 < n &&
          isHex(s.charCodeAt(i + 2)) && isHex(s.charCodeAt(i + 3)) &&
          isHex(s.charCodeAt(i + 4)) && isHex(s.charCodeAt(i + 5))
        break
      case 98: // b
      case 102: // f
        valid = !(i + 2 < n && isAsciiLetter(s.charCodeAt(i + 2)))
        break
      case 110: // n
      case 114: // r
      case 116: // t
        valid = !latexNrt.has(letterRun(s, i + 1))
        break
      default:
        valid = false
    }
    if (valid) {
      i += 2
      continue
    }
    // Escape the lone backslash; the following character is processed normally.
    flush(i)
    out.push("\\\\")
    changed = true
    i++
    copyFrom = i
  }
  if (!changed) return s
  flush(n)
  return out.join("")
}

/**
 * From the `{` at `start`, finds the index of its matching `}` honouring
 * double-quoted strings and backslash escapes inside them. Scans at most up to
 * `limit` (exclusive). Returns `-1` when no match was found before the limit.
 *
 * @internal
 */
export const matchBrace = (s: string, start: number, limit: number): number => {
  let depth = 0
  let inString = false
  for (let i = start; i < limit; i++) {
    const code = s.charCodeAt(i)
    if (inString) {
      if (code === 92) i++
      else if (code === 34) inString = false
    } else if (code === 34) {
      inString = true
    } else if (code === 123 /* { */) {
      depth++
    } else if (code === 125 /* } */) {
      depth--
      if (depth === 0) return i
    }
  }
  return -1
}

/**
 * A fenced code block: ``` + optional info word + content + ```.
 *
 * @internal
 */
export interface Fence {
  readonly lang: string
  readonly content: string
}

/**
 * Fenced code blocks in order of appearance (at most `max`), found with
 * `indexOf` so the scan stays linear. An unclosed fence ends the search.
 *
 * @internal
 */
export const fences = (s: string, max: number): Array<Fence> => {
  const result: Array<Fence> = []
  let from = 0
  while (result.length < max) {
    const open = s.indexOf("```", from)
    if (open < 0) break
    let bodyStart = open + 3
    while (bodyStart < s.length && s.charCodeAt(bodyStart) === 96) bodyStart++ // ````json
    const close = s.indexOf("```", bodyStart)
    if (close < 0) break
    let langEnd = bodyStart
    while (langEnd < close && /[A-Za-z0-9_+.-]/.test(s[langEnd]!)) langEnd++
    result.push({ lang: s.slice(bodyStart, langEnd).toLowerCase(), content: s.slice(langEnd, close) })
    from = close + 3
  }
  return result
}
