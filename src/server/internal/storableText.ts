/**
 * Text a database cannot store as it is. PostgreSQL refuses U+0000 in a `TEXT`
 * value ("invalid byte sequence for encoding UTF8: 0x00"); an unpaired UTF-16
 * surrogate has no UTF-8 form, so both drivers store U+FFFD in its place. One
 * behaviour on both databases (docs/http-api.md, "Text the server cannot store"):
 *
 * - a request carrying such text is refused with a 400 naming the field, the
 *   character and where it is — before anything is stored or a model called;
 * - text the server does not choose (a model's answer, a tool's result) is never
 *   refused: JSON columns escape it (`\u0000`), and a plain text column keeps a
 *   readable copy (U+FFFD in its place) next to the exact text as JSON
 *   (`encodeColumn` / `decodeColumn`).
 */

/** The first character a database cannot store as sent, with its index in `text`. */
export const firstUnstorable = (text: string): { readonly index: number; readonly name: string } | undefined => {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === 0) return { index: i, name: "U+0000 (NUL)" }
    if (code >= 0xd800 && code <= 0xdbff) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++
        continue
      }
      return { index: i, name: `U+${code.toString(16).toUpperCase()} (an unpaired surrogate)` }
    }
    if (code >= 0xdc00 && code <= 0xdfff) {
      return { index: i, name: `U+${code.toString(16).toUpperCase()} (an unpaired surrogate)` }
    }
  }
  return undefined
}

/**
 * The first string (or object key) of a parsed JSON body holding text a database cannot
 * store: its dotted path and a message naming the character, or undefined.
 */
export const unstorableText = (root: unknown): { readonly path: string; readonly message: string } | undefined => {
  const stack: Array<readonly [unknown, string]> = [[root, ""]]
  while (stack.length > 0) {
    const [value, path] = stack.pop()!
    if (typeof value === "string") {
      const found = firstUnstorable(value)
      if (found !== undefined) {
        return {
          path,
          message: `contains ${found.name} at character ${found.index}, which cannot be stored; remove it from the text`
        }
      }
      continue
    }
    if (value === null || typeof value !== "object") continue
    const entries = Object.entries(value)
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i]!
      const at = path === "" ? key : `${path}.${key}`
      const found = firstUnstorable(key)
      if (found !== undefined) {
        return { path: at, message: `the key contains ${found.name}, which cannot be stored; remove it` }
      }
      stack.push([child, at])
    }
  }
  return undefined
}

// eslint-disable-next-line no-control-regex -- U+0000 (NUL) is what PostgreSQL refuses in a TEXT value
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/**
 * A text column's value: `text` as it is when every database stores it unchanged;
 * otherwise a readable copy (U+FFFD for each such character) and the exact text as JSON
 * (ASCII escapes: `\u0000`, `\ud800`), which `decodeColumn` prefers.
 */
export const encodeColumn = (text: string): { readonly text: string; readonly json: string | null } =>
  firstUnstorable(text) === undefined
    ? { text, json: null }
    : { text: text.replace(UNSTORABLE, "\ufffd"), json: JSON.stringify(text) }

/** The exact text of a column written by `encodeColumn`. */
export const decodeColumn = (text: string, json: string | null | undefined): string => {
  if (json === null || json === undefined) return text
  const parsed: unknown = JSON.parse(json)
  return typeof parsed === "string" ? parsed : text
}
