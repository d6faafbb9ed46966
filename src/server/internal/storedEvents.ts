/**
 * How the run log stores a run's events: each `RunEvent` through its Schema,
 * in the `data` column, with its `_tag` in the `channel` column. The event is
 * encoded and decoded with the key order it was emitted with (`propertyOrder:
 * "original"`), so a stored event reads back exactly as it was emitted and an
 * edge encoder gives the same bytes for a replayed event as for a live one.
 *
 * Rows written by earlier versions hold the wire form instead (an SSE channel,
 * always lower case, and its JSON payload): they read back through
 * `EventWire.fromWire`. A row that is no known event reads back as nothing.
 *
 * @internal
 */
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { RunEvent } from "../../RunEvent.js"
import { fromWire } from "../EventWire.js"

const ordered = { propertyOrder: "original" } as const
const encode = Schema.encodeSync(RunEvent)
const decode = Schema.decodeUnknownEither(RunEvent)

/** The columns of a stored event. */
export const toRow = (event: RunEvent): { readonly channel: string; readonly data: string } => ({
  channel: event._tag,
  data: JSON.stringify(encode(event, ordered))
})

/** The event of a stored row (either form); `undefined` for a row that is no known event. */
export const fromRow = (channel: string, data: string): RunEvent | undefined => {
  const json = JSON.parse(data) as Record<string, unknown>
  if (channel.charAt(0) === channel.charAt(0).toLowerCase()) return fromWire(channel, json)
  return Either.getOrUndefined(decode(json, ordered))
}

/** A stored event and its id in the run (`RunLog.StoredEvent`). */
export interface StoredEvent {
  readonly seq: number
  readonly event: RunEvent
}

/** Stores events (ids assigned by the run's owner); a key already stored is skipped. */
export const append = (
  sql: SqlClient.SqlClient,
  runId: string,
  events: ReadonlyArray<{ readonly seq: number; readonly key: string; readonly event: RunEvent }>
): Effect.Effect<void, SqlError> => {
  if (events.length === 0) return Effect.void
  const insert = (e: (typeof events)[number]) => {
    const { channel, data } = toRow(e.event)
    return sql`INSERT INTO react_run_events (run_id, seq, event_key, channel, data)
      VALUES (${runId}, ${e.seq}, ${e.key}, ${channel}, ${data}) ON CONFLICT DO NOTHING`
  }
  // one event (the usual case): one statement, committed on its own — no BEGIN / COMMIT around it
  return Effect.asVoid(
    events.length === 1 ? insert(events[0]) : sql.withTransaction(Effect.forEach(events, insert, { discard: true }))
  )
}

/** The run's events after `after`, in order. */
export const after = (
  sql: SqlClient.SqlClient,
  runId: string,
  after: number
): Effect.Effect<Array<StoredEvent>, SqlError> =>
  Effect.map(
    sql<{ seq: number | string; channel: string; data: string }>`SELECT seq, channel, data FROM react_run_events
      WHERE run_id = ${runId} AND seq > ${after} ORDER BY seq`,
    (rows) =>
      rows.flatMap((r) => {
        const event = fromRow(r.channel, r.data)
        return event === undefined ? [] : [{ seq: Number(r.seq), event }]
      })
  )
