/**
 * JSON helpers with one implementation each: canonical JSON (sorted keys — the
 * identity of a tool call's arguments for cycle detection and approval) and a
 * `stringify` that never throws (BigInt, cycles and other non-JSON values
 * become text instead of failing a run).
 *
 * @since 0.1.0
 */

const replacer = () => {
  const seen = new WeakSet<object>()
  return (_key: string, value: unknown): unknown => {
    if (typeof value === "bigint") return value.toString()
    if (typeof value === "function" || typeof value === "symbol") return undefined
    if (typeof value === "object" && value !== null) {
      if (seen.has(value)) return "[Circular]"
      seen.add(value)
    }
    return value
  }
}

/**
 * `JSON.stringify` that never throws: BigInts become their decimal text,
 * circular references `"[Circular]"`, functions and symbols are dropped;
 * `undefined` (or a value with no JSON form) gives `fallback` (default `"null"`).
 *
 * @since 0.1.0
 * @category utils
 */
export const stringify = (value: unknown, fallback = "null"): string => {
  try {
    return JSON.stringify(value) ?? fallback
  } catch {
    try {
      return JSON.stringify(value, replacer()) ?? fallback
    } catch {
      return fallback
    }
  }
}

/**
 * Canonical JSON: object keys sorted, `undefined` members left out, the same
 * text for equal values whatever their key order. Never throws (see `stringify`).
 *
 * @since 0.1.0
 * @category utils
 */
export const canonical = (value: unknown): string => canonicalWith(value, new Set())

const canonicalWith = (value: unknown, path: Set<object>): string => {
  if (value === null || typeof value !== "object") return stringify(value)
  if (path.has(value)) return "\"[Circular]\""
  path.add(value)
  let out: string
  if (Array.isArray(value)) {
    out = `[${value.map((v) => canonicalWith(v, path)).join(",")}]`
  } else {
    const obj = value as Record<string, unknown>
    const keys = Object.keys(obj).filter((k) => obj[k] !== undefined && typeof obj[k] !== "function").sort()
    out = `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalWith(obj[k], path)}`).join(",")}}`
  }
  path.delete(value)
  return out
}
