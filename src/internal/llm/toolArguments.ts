/**
 * A tool call's arguments as a reply carries them (JSON text), decoded.
 * Re-exported by `Llm` (the docs are there).
 *
 * @internal
 */
import * as Either from "effect/Either"

/** Decodes a tool call's raw argument text; empty text (or `null`) is no arguments. */
export const parseToolArguments = (raw: string): Either.Either<Record<string, unknown>, string> => {
  if (raw.trim() === "") return Either.right({})
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch (e) {
    return Either.left(`Invalid JSON in tool arguments: ${(e as Error).message}`)
  }
  if (value === null) return Either.right({})
  if (typeof value !== "object" || Array.isArray(value)) {
    return Either.left(`Tool arguments must be a JSON object, got ${Array.isArray(value) ? "an array" : typeof value}`)
  }
  return Either.right(value as Record<string, unknown>)
}
