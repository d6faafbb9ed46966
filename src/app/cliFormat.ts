/**
 * The short texts the CLI's output is made of: a text flattened to one
 * shortened line, a tool call's arguments, durations, the prompt-cache share
 * of a run's tokens, and a budget's spending against its limits.
 *
 * @internal
 */

/** ", 83% cached" when part of the input was read from the provider's prompt cache. @internal */
export const cachedPart = (
  u: { readonly prompt_tokens: number; readonly cached_input_tokens?: number | undefined }
): string => {
  const read = u.cached_input_tokens ?? 0
  return read > 0 && u.prompt_tokens > 0 ? `, ${Math.round((100 * read) / u.prompt_tokens)}% cached` : ""
}

/** The text on one line (whitespace runs made one space), cut at `max` characters with "…". @internal */
export const oneLine = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length > max ? `${flat.slice(0, max)}…` : flat
}

/** A tool call's arguments on one line. @internal */
export const showArgs = (args: unknown): string => {
  if (args === undefined) return ""
  try {
    const text = typeof args === "string" ? args : JSON.stringify(args)
    return oneLine(text ?? "", 200)
  } catch {
    return String(args)
  }
}

/** A duration in seconds, e.g. `1.25s` or `12.5s`. @internal */
export const seconds = (s: number): string => `${s < 10 ? s.toFixed(2) : s.toFixed(1)}s`

/** A budget's spending against its limits, e.g. `1200 of 2000 tokens, $0.01 of $0.02`. @internal */
export const budgetText = (
  b: {
    readonly spent_tokens: number
    readonly limit_tokens?: number | undefined
    readonly spent_usd?: number | undefined
    readonly limit_usd?: number | undefined
  }
): string =>
  [
    `${b.spent_tokens}${b.limit_tokens !== undefined ? ` of ${b.limit_tokens}` : ""} tokens`,
    ...(b.spent_usd !== undefined ? [`$${b.spent_usd}${b.limit_usd !== undefined ? ` of $${b.limit_usd}` : ""}`] : [])
  ].join(", ")

/** "; the next step and the answer need ≈ 900 tokens" (BudgetExhausted's needed_*). @internal */
export const neededText = (
  b: { readonly needed_tokens?: number | undefined; readonly needed_usd?: number | undefined }
): string =>
  b.needed_tokens === undefined
    ? ""
    : `; the next step and the answer need ≈ ${b.needed_tokens} tokens${
      b.needed_usd !== undefined ? ` ($${b.needed_usd})` : ""
    }`
