/**
 * What `ApiError` checks requests with: the failing fields of a
 * decoding error, the depth check run before any decoding, and the API
 * token comparison.
 *
 * @internal
 */
import * as ParseResult from "effect/ParseResult"
import { timingSafeEqual } from "node:crypto"
import { unstorableText } from "./storableText.js"

/** One invalid field (`ApiError.Issue`). */
interface Issue {
  readonly path: string
  readonly message: string
}

/** The failing fields of a decoding error, with dotted paths (`ApiError.formatIssues`). */
export const formatIssues = (error: ParseResult.ParseError): Array<Issue> => {
  const byPath = new Map<string, Array<string>>()
  for (const issue of ParseResult.ArrayFormatter.formatErrorSync(error)) {
    const path = issue.path.map(String).join(".")
    const messages = byPath.get(path) ?? []
    if (!messages.includes(issue.message)) messages.push(issue.message)
    byPath.set(path, messages)
  }
  return [...byPath].map(([path, messages]) => {
    // `Schema.optional` adds "Expected undefined" next to the real complaint
    const useful = messages.filter((m) => !m.startsWith("Expected undefined"))
    return { path, message: (useful.length > 0 ? useful : messages).join("; ") }
  })
}

/** The path of the first value nested deeper than `max` levels, if any (iterative: no stack overflow). */
export const tooDeep = (root: unknown, max: number): string | undefined => {
  const stack: Array<readonly [unknown, number, string]> = [[root, 1, ""]]
  while (stack.length > 0) {
    const [value, depth, path] = stack.pop()!
    if (value === null || typeof value !== "object") continue
    if (depth > max) return path
    for (const [key, child] of Object.entries(value)) stack.push([child, depth + 1, path === "" ? key : `${path}.${key}`])
  }
  return undefined
}

/** The first problem of a parsed JSON body that no schema should see: nested too deep, or text no database can store. */
export const bodyIssue = (root: unknown, max: number): { readonly path: string; readonly message: string } | undefined => {
  const deep = tooDeep(root, max)
  return deep !== undefined ? { path: deep, message: `JSON nested deeper than ${max} levels` } : unstorableText(root)
}

/** Whether a token given by a caller is the configured one, compared in constant time (`ApiError.authorize`). */
export const sameSecret = (given: string, expected: string): boolean => {
  const a = Buffer.from(given)
  const b = Buffer.from(expected)
  return a.length === b.length && timingSafeEqual(a, b)
}
