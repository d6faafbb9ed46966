/**
 * The deep-partial value of a JSON text still being written (`partial-json`:
 * unterminated strings, arrays and objects are closed where they stop).
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
    return parse(text.slice(start), Allow.ALL)
  } catch {
    return undefined
  }
}
