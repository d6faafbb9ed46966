/**
 * Finding the JSON object in a language model's reply.
 *
 * Models wrap JSON in prose, put it in Markdown fences, write LaTeX backslashes
 * that are not valid JSON escapes and break lines inside strings. `extractJson`
 * copes with all of these, is pure and never throws.
 *
 * @since 0.1.0
 */
import * as Option from "effect/Option"
import { fences, matchBrace, repairJson } from "./internal/extractJson/repair.js"

/**
 * How many `{` positions the balanced-brace stage tries at most before giving
 * up.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_BRACE_STARTS = 100

/**
 * How many fenced code blocks are tried at most.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_FENCES = 20

/**
 * Work budget (characters scanned, parsed or repaired) of the balanced-brace
 * stage, as a function of the input length: `4 * length + 1_000_000`. It keeps
 * the whole function linear in the input even for adversarial text such as a
 * megabyte of unmatched `{`.
 *
 * @since 0.1.0
 * @category constants
 */
export const braceScanBudget = (length: number): number => 4 * length + 1_000_000

type Parsed =
  | { readonly _tag: "Object"; readonly value: Record<string, unknown> }
  | { readonly _tag: "NotObject" }
  | { readonly _tag: "Invalid" }

const invalid: Parsed = { _tag: "Invalid" }
const notObject: Parsed = { _tag: "NotObject" }

const parse = (s: string): Parsed => {
  let value: unknown
  try {
    value = JSON.parse(s)
  } catch {
    return invalid
  }
  return typeof value === "object" && value !== null && !Array.isArray(value)
    ? { _tag: "Object", value: value as Record<string, unknown> }
    : notObject
}

/** Plain parse first; the repair pass only when the plain parse failed. */
const parseWithRepair = (s: string): Parsed => {
  const plain = parse(s)
  if (plain._tag !== "Invalid") return plain
  const repaired = repairJson(s)
  return repaired === s ? plain : parse(repaired)
}

const isJsonFence = (lang: string): boolean => lang === "" || lang === "json" || lang === "jsonc" || lang === "json5"

/**
 * Returns the first JSON object found in `text`, or `Option.none()`.
 *
 * Stages, in order (each candidate is parsed as is and, only when that fails,
 * once more after {@link repairJson}-style repair of invalid escapes such as
 * LaTeX `\frac` / `\alpha` / `\(` and of raw newlines, tabs and other control
 * characters inside strings):
 *
 * 1. the whole (trimmed) text — if it is valid JSON but not an object (array,
 *    number, string, `null`) the answer is `none`, nothing inside is searched;
 * 2. fenced code blocks tagged `json` (or bare ```), in order;
 * 3. the first balanced `{…}`: a string-aware scan from each `{` in order
 *    until a candidate parses to an object (at most {@link MAX_BRACE_STARTS}
 *    starts, within {@link braceScanBudget}).
 *
 * Pure and total: any input, however large or malformed, returns.
 *
 * @example
 * ```ts
 * import { extractJson } from "./ExtractJson.js"
 * extractJson('Sure! ```json\n{"tools": ["search"]}\n```') // Option.some({ tools: ["search"] })
 * extractJson("[1, 2]") // Option.none()
 * ```
 *
 * @since 0.1.0
 * @category parsing
 */
export const extractJson = (text: string): Option.Option<Record<string, unknown>> => {
  try {
    return extract(text)
  } catch {
    // Defensive: every stage is total, but this function must never throw
    // (e.g. a RangeError from a pathological input).
    return Option.none()
  }
}

const extract = (text: string): Option.Option<Record<string, unknown>> => {
  if (typeof text !== "string" || text.indexOf("{") < 0) return Option.none()

  // 1. whole text
  const trimmed = text.trim()
  const first = trimmed.charCodeAt(0)
  // prose fails JSON.parse at its first character; only JSON-looking text is worth repairing
  const whole = first === 123 /* { */ || first === 91 /* [ */ ? parseWithRepair(trimmed) : parse(trimmed)
  if (whole._tag === "Object") return Option.some(whole.value)
  if (whole._tag === "NotObject") return Option.none()

  // 2. fenced blocks
  if (text.indexOf("```") >= 0) {
    for (const fence of fences(text, MAX_FENCES)) {
      if (!isJsonFence(fence.lang)) continue
      const parsed = parseWithRepair(fence.content.trim())
      if (parsed._tag === "Object") return Option.some(parsed.value)
    }
  }

  // 3. first balanced {…}
  let budget = braceScanBudget(text.length)
  let starts = 0
  let start = text.indexOf("{")
  while (start >= 0 && starts < MAX_BRACE_STARTS && budget > 0) {
    starts++
    const limit = Math.min(text.length, start + budget)
    const end = matchBrace(text, start, limit)
    if (end < 0) {
      budget -= limit - start
    } else {
      const candidate = text.slice(start, end + 1)
      // scan + plain parse + repair + repaired parse
      budget -= 4 * candidate.length
      const parsed = parseWithRepair(candidate)
      if (parsed._tag === "Object") return Option.some(parsed.value)
    }
    start = text.indexOf("{", start + 1)
  }
  return Option.none()
}
