/**
 * The first difference between a recorded and an actual JSON value, shown as
 * a readable diff (`Replay`'s divergences).
 */
import type * as Cassette from "../../Cassette.js"

/** Where two JSON values first differ, and what each has there. */
export interface Difference {
  /** A JSON path, e.g. `messages[0].content`. */
  readonly path: string
  readonly recorded: unknown
  readonly actual: unknown
}

const MISSING = Symbol("missing")

/** Changed lines shown on each side of a text diff. */
const MAX_LINES = 12

const isObject = (u: unknown): u is Record<string, unknown> => typeof u === "object" && u !== null && !Array.isArray(u)

const child = (path: string, key: string | number) =>
  typeof key === "number"
    ? `${path}[${key}]`
    : /^[A-Za-z_$][\w$]*$/.test(key)
    ? (path === "" ? key : `${path}.${key}`)
    : `${path}[${JSON.stringify(key)}]`

/** The first place where `recorded` and `actual` differ (depth first, in the recorded value's key order); `undefined` when equal. */
export const firstDifference = (recorded: unknown, actual: unknown, path = ""): Difference | undefined => {
  if (Array.isArray(recorded) && Array.isArray(actual)) {
    const n = Math.max(recorded.length, actual.length)
    for (let i = 0; i < n; i++) {
      const d = firstDifference(
        i < recorded.length ? recorded[i] : MISSING,
        i < actual.length ? actual[i] : MISSING,
        child(path, i)
      )
      if (d) return d
    }
    return undefined
  }
  if (isObject(recorded) && isObject(actual)) {
    const keys = [...Object.keys(recorded), ...Object.keys(actual).filter((k) => !(k in recorded))]
    for (const key of keys) {
      const d = firstDifference(
        key in recorded ? recorded[key] : MISSING,
        key in actual ? actual[key] : MISSING,
        child(path, key)
      )
      if (d) return d
    }
    return undefined
  }
  if (recorded === actual) return undefined
  return { path: path === "" ? "(root)" : path, recorded, actual }
}

const show = (value: unknown): string => {
  if (value === MISSING) return "(absent)"
  const text = JSON.stringify(value) ?? String(value)
  return text.length > 400 ? `${text.slice(0, 400)}… (${text.length} chars)` : text
}

/**
 * The difference as text: for two strings, the first differing line with a
 * line of context on each side (`-` recorded, `+` actual); otherwise both values.
 */
export const render = (d: Difference): string => {
  if (typeof d.recorded === "string" && typeof d.actual === "string") {
    const a = d.recorded.split("\n")
    const b = d.actual.split("\n")
    let i = 0
    while (i < a.length && i < b.length && a[i] === b[i]) i++
    // the common tail, not overlapping the common head
    let j = 0
    while (j < a.length - i && j < b.length - i && a[a.length - 1 - j] === b[b.length - 1 - j]) j++
    const cap = (lines: ReadonlyArray<string>, sign: string) =>
      lines.length > MAX_LINES
        ? [
          ...lines.slice(0, MAX_LINES).map((l) => `${sign} ${l}`),
          `${sign} … (${lines.length - MAX_LINES} more lines)`
        ]
        : lines.map((l) => `${sign} ${l}`)
    const out: Array<string> = [`@@ ${d.path}, line ${i + 1} @@`]
    if (i > 0) out.push(`  ${a[i - 1]}`)
    for (const line of cap(a.slice(i, a.length - j), "-")) out.push(line)
    for (const line of cap(b.slice(i, b.length - j), "+")) out.push(line)
    if (j > 0) out.push(`  ${a[a.length - j]}`)
    return out.join("\n")
  }
  return [`@@ ${d.path} @@`, `- ${show(d.recorded)}`, `+ ${show(d.actual)}`].join("\n")
}

/** A request without the fields `lenient` mode ignores (`Replay.ignorableFields`). */
export const lenientView = (request: Cassette.ModelCall["request"]): unknown => {
  const { maxTokens: _m, temperature: _t, ...rest } = request
  return {
    ...rest,
    messages: rest.messages.map((m) => {
      const { pinned: _p, ...kept } = m as typeof m & { pinned?: boolean }
      return kept
    }),
    ...(rest.tools !== undefined
      ? {
        tools: rest.tools.map((t) => {
          if (typeof t !== "object" || t === null) return t
          const def = t as { function?: Record<string, unknown> }
          if (def.function === undefined) return t
          const { description: _d, ...fn } = def.function
          return { ...def, function: fn }
        })
      }
      : {})
  }
}
