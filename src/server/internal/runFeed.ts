/**
 * The live feed of a run, and a client following a run as one `Stream`.
 *
 * A run's feed is a `PubSub` of this process, held in an `RcMap` by the run id
 * while anything uses it: the run executing here (its journal publishes every
 * event once it is stored, and every ephemeral event, which has no sequence
 * number and is never stored) and each client following the run. The registry
 * adds what the run cannot: a `Heartbeat` now and then, and — while the run does
 * not execute here (another instance runs it, it waits to resume, or it is
 * over) — a `Poll` telling followers that the run log may hold events nobody
 * published here.
 *
 * A follower (`follow`) subscribes to the feed first, then reads what is stored
 * after its cursor (the replay), then takes the feed: every event after the
 * replay exactly once and in order — an event both stored and published is
 * skipped by its sequence number, a gap is read from the run log — until `Done`.
 * A run whose row says it is over with no `Done` stored yet is followed until its
 * `Done` comes (an instance stores it a moment after the row, or takes the run over
 * and stores it), at most `DONE_GRACE_MS`.
 *
 * @internal
 */
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as PubSub from "effect/PubSub"
import * as Queue from "effect/Queue"
import * as RcMap from "effect/RcMap"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { RunEvent } from "../../RunEvent.js"
import type { RunLogService, RunRow, StoredEvent } from "../RunLog.js"

/**
 * One event of a run: `seq` is its id in the run (absent on an ephemeral event,
 * which is only live).
 */
export interface FeedItem {
  readonly seq?: number
  readonly event: RunEvent
}

/** Time for a keep-alive (an SSE `: ping`): nothing else is meant by it. */
export interface Heartbeat {
  readonly _tag: "Heartbeat"
}

export const heartbeat: Heartbeat = { _tag: "Heartbeat" }

/** What a follower receives: the run's events and, now and then, a heartbeat. */
export type Followed = FeedItem | Heartbeat

/** The run log may hold events of the run that were not published here (at `at`, ms). */
interface Poll {
  readonly _tag: "Poll"
  readonly at: number
}

/** The server is shutting down: every follower's stream ends (the run goes on; clients resume elsewhere). */
interface Stop {
  readonly _tag: "Stop"
}
const stop: Stop = { _tag: "Stop" }

type Message = FeedItem | Heartbeat | Poll | Stop

export const isItem = (message: Followed | Message): message is FeedItem => "event" in message

const isDone = (item: FeedItem): boolean => item.event._tag === "Done"

/** How long a follower waits for the `Done` of a run whose row says it is over. */
export const DONE_GRACE_MS = 60_000

/** The feeds of the runs that something of this process executes or follows. */
export interface Feeds {
  /** The run's feed for the lifetime of the scope. */
  readonly feed: (runId: string) => Effect.Effect<PubSub.PubSub<Message>, never, Scope.Scope>
  /** The runs that have a feed now. */
  readonly runIds: Effect.Effect<ReadonlyArray<string>>
}

export const makeFeeds: Effect.Effect<Feeds, never, Scope.Scope> = Effect.map(
  RcMap.make({ lookup: (_runId: string) => Effect.acquireRelease(PubSub.unbounded<Message>(), PubSub.shutdown) }),
  (map) => ({ feed: (runId) => RcMap.get(map, runId), runIds: RcMap.keys(map) })
)

/** Publishes an event of a run to its followers in this process (none: nothing happens). */
export const publish = (feed: PubSub.PubSub<Message>, item: FeedItem): Effect.Effect<void> =>
  Effect.asVoid(PubSub.publish(feed, item))

/** Tells the followers of `runIds` to read the run log (their runs do not execute here). */
export const poll = (feeds: Feeds, runIds: ReadonlyArray<string>): Effect.Effect<void> =>
  Effect.flatMap(
    Clock.currentTimeMillis,
    (at) =>
      Effect.forEach(runIds, (runId) =>
        Effect.scoped(Effect.flatMap(feeds.feed(runId), (feed) => PubSub.publish(feed, { _tag: "Poll", at }))), {
        discard: true
      })
  )

const toAll = (feeds: Feeds, message: Message): Effect.Effect<void> =>
  Effect.flatMap(
    feeds.runIds,
    (runIds) =>
      Effect.forEach(runIds, (runId) =>
        Effect.scoped(Effect.flatMap(feeds.feed(runId), (feed) => PubSub.publish(feed, message))), {
        discard: true
      })
  )

/** A heartbeat to every follower. */
export const beat = (feeds: Feeds): Effect.Effect<void> => toAll(feeds, heartbeat)

/** Ends every follower's stream (the server is shutting down). */
export const stopAll = (feeds: Feeds): Effect.Effect<void> => toAll(feeds, stop)

/**
 * Where a follower stands: the last sequence number it delivered, since when its
 * run's row says it is over without a `Done`, and whether its stream is over.
 */
interface Cursor {
  readonly last: number
  readonly overSince: number | undefined
  readonly finished: boolean
}

/** A follower's next step: where it stands after it, and what it emits. */
type Step = readonly [Cursor, ReadonlyArray<Followed>]

const items = (stored: ReadonlyArray<StoredEvent>): ReadonlyArray<FeedItem> =>
  stored.map(({ event, seq }) => ({ seq, event }))

/** A follower of a run: what the run log holds after the cursor, then the live feed. */
export interface Following {
  /** The stored events after the cursor (up to `Done`, if stored). */
  readonly replay: ReadonlyArray<FeedItem>
  /** Everything after the replay, in order, once each, with heartbeats, ending after `Done`. */
  readonly live: Stream.Stream<Followed>
}

/**
 * Follows run `run` from cursor `after` (see the module comment), subscribed to
 * its feed for the lifetime of the scope.
 */
export const follow = (
  log: RunLogService,
  feeds: Feeds,
  run: RunRow,
  after: number
): Effect.Effect<Following, never, Scope.Scope> =>
  Effect.gen(function*() {
    const runId = run.runId
    const subscription = yield* Effect.flatMap(feeds.feed(runId), PubSub.subscribe)
    const stored = items(yield* Effect.orDie(log.eventsAfter(runId, after)))
    const done = stored.findIndex(isDone)
    if (done >= 0) return { replay: stored.slice(0, done + 1), live: Stream.empty }
    const last = stored.length === 0 ? after : stored[stored.length - 1].seq!
    // a run that is over ends here when its `Done` was stored before the cursor (or it is gone)
    if (yield* over(log, runId)) return { replay: stored, live: Stream.empty }

    const read = (cursor: Cursor, upTo: number): Effect.Effect<ReadonlyArray<FeedItem>> =>
      Effect.map(Effect.orDie(log.eventsAfter(runId, cursor.last)), (rows) => items(rows.filter((r) => r.seq < upTo)))

    /** What a message makes of the cursor: what to emit, and whether the stream ends after it. */
    const next = (cursor: Cursor, message: Message): Effect.Effect<Step> => {
      if (!isItem(message)) {
        if (message._tag === "Heartbeat") return Effect.succeed([cursor, [message]])
        if (message._tag === "Stop") return Effect.succeed([{ ...cursor, finished: true }, []])
        return polled(cursor, message.at)
      }
      const seq = message.seq
      if (seq === undefined) return Effect.succeed([cursor, [message]])
      if (seq <= cursor.last) return Effect.succeed([cursor, []])
      const after = { ...cursor, last: seq, finished: isDone(message) }
      if (seq === cursor.last + 1) return Effect.succeed([after, [message]])
      // stored and published before this follower subscribed, or published by another instance: from the log
      return Effect.map(read(cursor, seq), (gap): Step => [after, [...gap, message]])
    }

    // the run executes elsewhere (or nowhere yet): what it stored; its end when it is over
    const polled = (cursor: Cursor, at: number): Effect.Effect<Step> =>
      Effect.flatMap(read(cursor, Infinity), (rows): Effect.Effect<Step> => {
        const moved = { ...cursor, last: rows.length === 0 ? cursor.last : rows[rows.length - 1].seq! }
        const done = rows.findIndex(isDone)
        if (done >= 0) return Effect.succeed([{ ...moved, finished: true }, rows.slice(0, done + 1)])
        return Effect.map(Effect.orDie(log.run(runId)), (row): Step => {
          // gone (pruned): nothing more will come
          if (Option.isNone(row)) return [{ ...moved, finished: true }, rows]
          if (row.value.status !== "done") return [{ ...moved, overSince: undefined }, rows]
          const since = moved.overSince ?? at
          return [{ ...moved, overSince: since, finished: at - since >= DONE_GRACE_MS }, rows]
        })
      })

    // one stage: each message taken from the subscription is one step of the cursor
    const live = Stream.unfoldChunkEffect({ last, overSince: undefined, finished: false } as Cursor, (cursor) =>
      cursor.finished ? Effect.succeed(Option.none()) : Effect.map(
        Effect.flatMap(Queue.take(subscription), (message) =>
          next(cursor, message)),
        ([after, emitted]) => Option.some([Chunk.unsafeFromArray(emitted as Array<Followed>), after] as const)
      ))
    return { replay: stored, live }
  })

/** The run is gone, or its row says it is over and its `Done` is stored (the follower has nothing to wait for). */
const over = (log: RunLogService, runId: string): Effect.Effect<boolean> =>
  Effect.flatMap(Effect.orDie(log.run(runId)), (row) => {
    if (Option.isNone(row)) return Effect.succeed(true)
    if (row.value.status !== "done") return Effect.succeed(false)
    return Effect.map(
      Effect.orDie(log.eventsAfter(runId, Math.max(0, row.value.lastSeq - 1))),
      (rows) => rows.some((r) => r.event._tag === "Done")
    )
  })

/** The replay, then the live feed: one stream. */
export const stream = (following: Following): Stream.Stream<Followed> =>
  Stream.concat(Stream.fromIterable(following.replay), following.live)
