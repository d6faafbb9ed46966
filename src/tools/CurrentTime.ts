/**
 * The `current_time` built-in tool: the current date and time in an IANA time
 * zone (default UTC), read from Effect's `Clock` (so tests drive it with
 * `TestClock`).
 *
 * @since 0.1.0
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { Tool } from "../Tool.js"
import * as ToolModule from "../Tool.js"
import { ToolError } from "../Tool.js"

/**
 * @since 0.1.0
 * @category models
 */
export interface TimeInfo {
  /** The canonical zone name (`Europe/Paris`, `UTC`). */
  readonly timeZone: string
  /** Local time with its UTC offset, e.g. `2026-12-02T12:30:00+01:00`. */
  readonly iso: string
  /** The same instant in UTC (`…Z`). */
  readonly utc: string
  /** e.g. `Wednesday, December 2, 2026 at 12:30:00 PM GMT+1`. */
  readonly human: string
  readonly weekday: string
  /** Offset from UTC in minutes. */
  readonly offsetMinutes: number
}

const ALIASES: Record<string, string> = { utc: "UTC", gmt: "UTC", z: "UTC", zulu: "UTC" }

/**
 * Resolves a zone name to its canonical IANA name, or `undefined` when unknown.
 * Case-insensitive (`europe/paris` → `Europe/Paris`).
 *
 * @since 0.1.0
 * @category utils
 */
export const resolveTimeZone = (zone: string): string | undefined => {
  const trimmed = zone.trim()
  if (trimmed === "") return "UTC"
  const alias = ALIASES[trimmed.toLowerCase()]
  if (alias) return alias
  try {
    return new Intl.DateTimeFormat("en-US", { timeZone: trimmed }).resolvedOptions().timeZone
  } catch {
    return undefined
  }
}

const pad = (n: number, width = 2) => String(Math.abs(n)).padStart(width, "0")

/**
 * Describes an instant (epoch millis) in a canonical time zone.
 *
 * @since 0.1.0
 * @category utils
 */
export const describeInstant = (millis: number, timeZone: string): TimeInfo => {
  const parts: Record<string, string> = {}
  const fmt = new Intl.DateTimeFormat("en-US", {
    timeZone,
    hourCycle: "h23",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    weekday: "long"
  })
  for (const p of fmt.formatToParts(new Date(millis))) parts[p.type] = p.value
  const year = Number(parts.year)
  const month = Number(parts.month)
  const day = Number(parts.day)
  const hour = Number(parts.hour) % 24
  const minute = Number(parts.minute)
  const second = Number(parts.second)
  const localAsUtc = Date.UTC(year, month - 1, day, hour, minute, second)
  const offsetMinutes = Math.round((localAsUtc - Math.floor(millis / 1000) * 1000) / 60000)
  const sign = offsetMinutes < 0 ? "-" : "+"
  const offset = offsetMinutes === 0 ? "Z" : `${sign}${pad(Math.trunc(offsetMinutes / 60))}:${pad(offsetMinutes % 60)}`
  const iso = `${pad(year, 4)}-${pad(month)}-${pad(day)}T${pad(hour)}:${pad(minute)}:${pad(second)}${offset}`
  const human = new Intl.DateTimeFormat("en-US", { timeZone, dateStyle: "full", timeStyle: "long" }).format(
    new Date(millis)
  )
  return { timeZone, iso, utc: new Date(millis).toISOString(), human, weekday: parts.weekday, offsetMinutes }
}

/**
 * @since 0.1.0
 * @category models
 */
export const Parameters = Schema.Struct({
  timezone: Schema.optional(Schema.String.annotations({
    description: "IANA time zone name, e.g. \"Europe/Paris\", \"America/New_York\", \"Asia/Shanghai\". Default: UTC."
  }))
})

/**
 * The tool: the current time now, per `Clock`.
 *
 * @since 0.1.0
 * @category tools
 */
export const tool: Tool = ToolModule.make({
  name: "current_time",
  description: "Get the current date and time (ISO 8601, human-readable, weekday) in an IANA time zone (default UTC).",
  parameters: Parameters,
  readOnly: true,
  handler: ({ timezone }) =>
    Effect.gen(function*() {
      const zone = resolveTimeZone(timezone ?? "UTC")
      if (zone === undefined) {
        return yield* new ToolError({
          message: `Unknown time zone "${timezone}". Use an IANA time zone name such as "Europe/Paris", ` +
            `"America/New_York", "Asia/Tokyo" or "UTC".`
        })
      }
      const info = describeInstant(yield* Clock.currentTimeMillis, zone)
      return [
        `Time zone: ${info.timeZone}`,
        `Local time: ${info.iso}`,
        `Human-readable: ${info.human}`,
        `Weekday: ${info.weekday}`,
        `UTC: ${info.utc}`
      ].join("\n")
    })
})
