/**
 * The delay a rate-limited reply asks for, read from its headers the same way
 * for every provider layer: `retry-after-ms` (milliseconds), else `retry-after`
 * (seconds, or an HTTP date), capped at 60 s.
 *
 * @internal
 */

/** The longest wait a provider may ask for. */
export const MAX_RETRY_AFTER_MS = 60_000

/**
 * The delay in milliseconds, or undefined when the headers ask for none (or
 * say something unreadable). `header` reads one header by its lower-case name
 * (`null` / `undefined` when absent); `now`: the current time in milliseconds,
 * for the date form.
 */
export const parseRetryAfter = (
  header: (name: string) => string | null | undefined,
  now: number
): number | undefined => {
  const ms = header("retry-after-ms")
  if (ms != null && Number.isFinite(Number(ms)) && Number(ms) >= 0) {
    return Math.min(Number(ms), MAX_RETRY_AFTER_MS)
  }
  const raw = header("retry-after")
  if (raw == null) return undefined
  const seconds = Number(raw)
  if (Number.isFinite(seconds) && seconds >= 0) return Math.min(seconds * 1000, MAX_RETRY_AFTER_MS)
  const date = Date.parse(raw)
  return Number.isNaN(date) ? undefined : Math.min(Math.max(0, date - now), MAX_RETRY_AFTER_MS)
}
