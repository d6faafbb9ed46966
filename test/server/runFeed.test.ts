/**
 * The typed event stream of a run (`internal/runFeed.ts`, `RunLog`'s typed
 * events), against the real run log on a SQLite file and a real feed:
 *
 * - the run log stores events through their Schema and reads them back as they
 *   were emitted — the same key order, so an edge encoder gives a replayed
 *   event the live one's bytes — and reads rows an earlier version stored in
 *   the wire form;
 * - a follower gets each event once and in order: an event published that it
 *   already read from the log is skipped, a gap (events stored but published
 *   before it subscribed, or by another instance) is read from the log;
 * - an ephemeral event (no sequence number) reaches the live follower only, and
 *   moves nobody's cursor;
 * - a run executing elsewhere is followed through polls of the log; a run
 *   whose row says it is over without a `Done` ends its followers after the
 *   grace; the server's shutdown ends every follower.
 */
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { RunEvent } from "../../src/RunEvent.js"
import * as Database from "../../src/server/Database.js"
import * as RunFeed from "../../src/server/internal/runFeed.js"
import * as RunLog from "../../src/server/RunLog.js"
import * as Sse from "../../src/server/Sse.js"

const storage = Effect.gen(function*() {
  const filename = join(mkdtempSync(join(tmpdir(), "run-feed-")), "runs.sqlite")
  const context = yield* Layer.build(
    RunLog.layer.pipe(Layer.provideMerge(Database.layer({ _tag: "Sqlite", filename })), Layer.orDie)
  )
  return { log: Context.get(context, RunLog.RunLog), sql: Context.get(context, SqlClient.SqlClient) }
})

const delta = (content: string): RunEvent => ({ _tag: "AnswerDelta", content })
const done: RunEvent = {
  _tag: "Done",
  answer: "ab",
  iterations: 1,
  usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2, llm_calls: 1, by_phase: {} },
  elapsed: 0.5,
  pending_injections: []
}

const begin = (log: RunLog.RunLogService, runId: string) =>
  Effect.gen(function*() {
    yield* Effect.orDie(log.start({ runId, conversationId: `c-${runId}`, query: "q" }))
    return Option.getOrThrow(yield* Effect.orDie(log.run(runId)))
  })

/** Stores events 1…n of a run (as its journal would, without publishing them). */
const store = (log: RunLog.RunLogService, runId: string, from: number, events: ReadonlyArray<RunEvent>) =>
  Effect.orDie(log.append(runId, events.map((event, i) => ({ seq: from + i, key: `b:${from + i}`, event }))))

const labels = (items: ReadonlyArray<RunFeed.Followed>) =>
  items.map((
    item
  ) => (RunFeed.isItem(item)
    ? `${item.seq ?? "-"}:${item.event._tag === "AnswerDelta" ? item.event.content : item.event._tag}`
    : "ping")
  )

describe("the run log stores typed events", () => {
  it.scoped("an event reads back as it was emitted, its keys in the order they were emitted in", () =>
    Effect.gen(function*() {
      const { log } = yield* storage
      yield* begin(log, "r1")
      // the library builds events field by field in its own order, not the Schema's
      const start: RunEvent = {
        _tag: "ToolStart",
        tool_call_id: "call_1",
        iteration: 1,
        tool_name: "calc",
        tool_args: { b: 1, a: 2 },
        idempotency_key: "ik"
      }
      yield* store(log, "r1", 1, [start])
      const [stored] = yield* Effect.orDie(log.eventsAfter("r1", 0))
      assert.deepStrictEqual(stored.event, start)
      assert.strictEqual(JSON.stringify(stored.event), JSON.stringify(start), "the same keys in the same order")
      assert.strictEqual(
        new TextDecoder().decode(Sse.encode({ seq: 1, event: stored.event })),
        new TextDecoder().decode(Sse.encode({ seq: 1, event: start }))
      )
    }))

  it.scoped("a row an earlier version stored in the wire form (channel and payload) reads back as the event", () =>
    Effect.gen(function*() {
      const { log, sql } = yield* storage
      yield* begin(log, "r1")
      yield* Effect.orDie(sql`INSERT INTO react_run_events (run_id, seq, event_key, channel, data)
        VALUES ('r1', 1, 'b:1', 'answer', ${JSON.stringify({ status: "delta", content: "old" })})`)
      yield* store(log, "r1", 2, [delta("new")])
      assert.deepStrictEqual((yield* Effect.orDie(log.eventsAfter("r1", 0))).map((e) => e.event), [
        delta("old"),
        delta("new")
      ])
    }))
})

describe("a follower of a run", () => {
  it.scoped("gets each event once and in order: a repeated id is skipped, a gap is read from the log; an ephemeral event passes", () =>
    Effect.gen(function*() {
      const { log } = yield* storage
      const feeds = yield* RunFeed.makeFeeds
      const run = yield* begin(log, "r1")
      yield* store(log, "r1", 1, [delta("a"), delta("b")])
      const following = yield* RunFeed.follow(log, feeds, run, 1)
      assert.deepStrictEqual(labels(following.replay), ["2:b"])
      const feed = yield* feeds.feed("r1")
      const got = yield* Effect.fork(Stream.runCollect(following.live))
      // 2 again (stored and published while the follower read it), then 5 whose 3 and 4 it never saw published
      yield* store(log, "r1", 3, [delta("c"), delta("d"), delta("e"), done])
      yield* RunFeed.publish(feed, { seq: 2, event: delta("b") })
      yield* RunFeed.publish(feed, { event: delta("~") })
      yield* RunFeed.publish(feed, { seq: 5, event: delta("e") })
      yield* RunFeed.publish(feed, { seq: 6, event: done })
      yield* RunFeed.publish(feed, { seq: 7, event: delta("after done") })
      assert.deepStrictEqual(labels(Chunk.toArray(yield* Fiber.join(got))), ["-:~", "3:c", "4:d", "5:e", "6:Done"])
    }))

  it.scoped("a run that executes elsewhere is read on each poll, to its Done", () =>
    Effect.gen(function*() {
      const { log } = yield* storage
      const feeds = yield* RunFeed.makeFeeds
      const run = yield* begin(log, "r1")
      const following = yield* RunFeed.follow(log, feeds, run, 0)
      const got = yield* Effect.fork(Stream.runCollect(following.live))
      yield* store(log, "r1", 1, [delta("a")])
      yield* RunFeed.poll(feeds, ["r1"])
      yield* store(log, "r1", 2, [delta("b"), done])
      yield* RunFeed.poll(feeds, ["r1"])
      assert.deepStrictEqual(labels(Chunk.toArray(yield* Fiber.join(got))), ["1:a", "2:b", "3:Done"])
    }))

  it.scoped("a run whose row says it is over waits for its Done, at most the grace; a shutdown ends every follower", () =>
    Effect.gen(function*() {
      const { log } = yield* storage
      const feeds = yield* RunFeed.makeFeeds
      const run = yield* begin(log, "r1")
      yield* store(log, "r1", 1, [delta("a")])
      yield* Effect.orDie(log.finish("r1"))
      const following = yield* RunFeed.follow(log, feeds, run, 0)
      const waiting = yield* Effect.fork(Stream.runCollect(following.live))
      yield* RunFeed.poll(feeds, ["r1"])
      yield* TestClock.adjust(RunFeed.DONE_GRACE_MS - 1)
      yield* RunFeed.poll(feeds, ["r1"])
      assert.isTrue((yield* Fiber.poll(waiting))._tag === "None", "still waiting within the grace")
      yield* TestClock.adjust(1)
      yield* RunFeed.poll(feeds, ["r1"])
      assert.deepStrictEqual(labels(Chunk.toArray(yield* Fiber.join(waiting))), [], "ended without a Done")

      const run2 = yield* begin(log, "r2")
      const other = yield* RunFeed.follow(log, feeds, run2, 0)
      const stopped = yield* Effect.fork(Stream.runCollect(other.live))
      yield* RunFeed.beat(feeds)
      yield* RunFeed.stopAll(feeds)
      assert.deepStrictEqual(labels(Chunk.toArray(yield* Fiber.join(stopped))), ["ping"])
    }))
})
