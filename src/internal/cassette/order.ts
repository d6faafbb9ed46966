/**
 * The order in which `Cassette.normalizeEvents` compares a parallel round's
 * `ToolDone` events.
 *
 * @internal
 */

/** The identity of a tool call's `ToolStart` / `ToolDone` (Schema-encoded), when it has a call id. */
const callOf = (event: Record<string, unknown>, status: "start" | "done"): string | undefined =>
  event._tag === (status === "start" ? "ToolStart" : "ToolDone") && typeof event.tool_call_id === "string"
    ? `${String(event.step_id ?? "")}/${String(event.iteration)}/${event.tool_call_id}`
    : undefined

/**
 * The calls of a round run concurrently and each announces its end as it
 * finishes, so the order of consecutive `ToolDone` events depends on
 * which tool was faster — by nature, not by behaviour. Each run of them is put
 * in the order the calls started (their `ToolStart` events), so two runs
 * of the same round compare equal.
 */
export const inRequestOrder = (events: Array<Record<string, unknown>>): Array<Record<string, unknown>> => {
  const started = new Map<string, number>()
  events.forEach((e, i) => {
    const call = callOf(e, "start")
    if (call !== undefined && !started.has(call)) started.set(call, i)
  })
  const rank = (e: Record<string, unknown>) => started.get(callOf(e, "done") ?? "") ?? -1
  for (let i = 0; i < events.length;) {
    if (callOf(events[i], "done") === undefined) {
      i++
      continue
    }
    let end = i
    while (end < events.length && callOf(events[end], "done") !== undefined) end++
    const block = events.slice(i, end).sort((a, b) => rank(a) - rank(b))
    events.splice(i, block.length, ...block)
    i = end
  }
  return events
}
