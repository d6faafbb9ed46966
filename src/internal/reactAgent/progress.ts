/**
 * Tool progress as a call emits it: `ToolProgress` events are live-only and
 * throttled per call — at most one per `PROGRESS_INTERVAL_MS` for each call
 * they describe (the call itself, or a call of a sub-agent forwarded through
 * it), a report of 1 (done) always passing. Every other event passes as is.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type { RunEvent } from "../../RunEvent.js"

/** 10 reports per second per call. */
export const PROGRESS_INTERVAL_MS = 100

/** The emit a tool call's handler gets (`Tool.CallContext.emit`): its progress throttled. */
export const throttledEmit = (
  emit: (event: RunEvent) => Effect.Effect<void>
): (event: RunEvent) => Effect.Effect<void> => {
  const last = new Map<string, number>()
  return (event) => {
    if (event._tag !== "ToolProgress") return emit(event)
    const key = `${event.agent?.run_id ?? ""}\u0000${event.tool_call_id ?? event.tool_name}\u0000${event.iteration}`
    return Effect.flatMap(Clock.currentTimeMillis, (now) => {
      const previous = last.get(key)
      if (previous !== undefined && now - previous < PROGRESS_INTERVAL_MS && event.progress !== 1) return Effect.void
      last.set(key, now)
      return emit(event)
    })
  }
}
