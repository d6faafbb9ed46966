/**
 * The deep-partial value of a JSON text still being written (`partial-json`:
 * unterminated strings, arrays and objects are closed where they stop; a number
 * the text ends in is left out until something follows it — `"celsius": 2` may
 * be the start of 21, and a partial value never shows what the value will not hold).
 *
 * @internal
 */
import { Allow, parse } from "partial-json"

/**
 * The value of `text` so far, from its first `{` or `[` (a reply may start with
 * prose or a Markdown fence); `undefined` when there is none yet or the text is
 * not JSON.
 */
export const partialValue = (text: string): unknown => {
  const start = text.search(/[{[]/)
  if (start < 0) return undefined
  try {
    return parse(text.slice(start), Allow.ALL & ~Allow.NUM)
  } catch {
    return undefined
  }
}
