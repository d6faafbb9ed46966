/**
 * Tool-name glob filters for hooks: `*` matches any run of characters, `?` exactly
 * one, everything else literally; the whole name must match.
 *
 * @internal
 */

/** A compiled filter: true when the hook applies to the tool. */
export type NameFilter = (toolName: string) => boolean

const all: NameFilter = () => true

const escape = (char: string): string => (/[\\^$.|+()[\]{}/-]/.test(char) ? `\\${char}` : char)

/** Translates one glob into an anchored RegExp. */
export const globToRegExp = (glob: string): RegExp => {
  let source = "^"
  for (const char of glob) {
    source += char === "*" ? ".*" : char === "?" ? "." : escape(char)
  }
  return new RegExp(`${source}$`, "s")
}

/**
 * Compiles a matcher (absent = every tool). Returns a string describing the problem
 * instead when the matcher is not a non-empty glob or list of them.
 */
export const compileMatcher = (matcher: unknown): NameFilter | string => {
  if (matcher === undefined) return all
  const globs: ReadonlyArray<unknown> = Array.isArray(matcher) ? matcher : [matcher]
  if (globs.length === 0) return "matcher must not be an empty list"
  const patterns: Array<RegExp> = []
  for (const glob of globs) {
    if (typeof glob !== "string" || glob.length === 0) {
      return `matcher must be a non-empty glob string or a list of them, got ${JSON.stringify(glob) ?? String(glob)}`
    }
    if (glob === "*") return all
    patterns.push(globToRegExp(glob))
  }
  if (patterns.length === 1) {
    const [only] = patterns
    return (toolName) => only.test(toolName)
  }
  return (toolName) => patterns.some((pattern) => pattern.test(toolName))
}
