/**
 * The run log's one-statement writes (an event, an activity's start mark, an
 * empty drain), against a real SQLite file: what they store is what the
 * transactions they replaced stored.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Database from "../../src/server/Database.js"
import * as RunLog from "../../src/server/RunLog.js"

/** A run log on a new file. */
const openLog = () =>
  Effect.map(
    Layer.build(RunLog.layer.pipe(
      Layer.provide(
        Database.layer({ _tag: "Sqlite", filename: join(mkdtempSync(join(tmpdir(), "runlog-")), "runs.sqlite") })
      ),
      Layer.orDie
    )),
    Context.get(RunLog.RunLog)
  )

const event = (seq: number, key: string) => ({
  seq,
  key,
  event: { _tag: "AnswerDelta" as const, content: String(seq) }
})

describe("run log: one statement per write", () => {
  it.scoped("a run's last event id follows its stored events, one at a time or several together", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      yield* Effect.orDie(log.start({ runId: "r1", conversationId: "c1", query: "q" }))
      yield* Effect.orDie(log.start({ runId: "r2", conversationId: "c2", query: "q" }))
      const lastSeq = (runId: string) =>
        Effect.map(Effect.orDie(log.run(runId)), (row) => Option.getOrThrow(row).lastSeq)
      assert.strictEqual(yield* lastSeq("r1"), 0)
      yield* Effect.orDie(log.append("r1", [event(1, "b:1")]))
      yield* Effect.orDie(log.append("r2", [event(1, "b:1"), event(2, "b:2"), event(3, "b:3")]))
      assert.strictEqual(yield* lastSeq("r1"), 1)
      assert.strictEqual(yield* lastSeq("r2"), 3)
      yield* Effect.orDie(log.append("r1", [event(2, "b:2"), event(3, "b:3")]))
      // a replay's event already stored changes nothing
      yield* Effect.orDie(log.append("r1", [event(2, "b:2")]))
      assert.strictEqual(yield* lastSeq("r1"), 3)
      const latest = yield* Effect.orDie(log.latest("c1"))
      assert.strictEqual(Option.getOrThrow(latest).lastSeq, 3)
      assert.deepStrictEqual((yield* Effect.orDie(log.eventsAfter("r1", 0))).map((e) => e.seq), [1, 2, 3])
    }))

  it.scoped("an activity's start mark keeps the first process that started it", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      assert.strictEqual(yield* Effect.orDie(log.markStarted("r1", "tool/1/call_a", "boot-1")), "boot-1")
      assert.strictEqual(yield* Effect.orDie(log.markStarted("r1", "tool/1/call_a", "boot-2")), "boot-1")
      assert.strictEqual(yield* Effect.orDie(log.markStarted("r1", "tool/2/call_b", "boot-2")), "boot-2")
    }))

  it.scoped("a drain takes what is queued once, and an empty drain takes nothing", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      yield* Effect.orDie(log.start({ runId: "r1", conversationId: "c1", query: "q" }))
      assert.deepStrictEqual(yield* Effect.orDie(log.drain("c1")), [])
      const queued = Option.getOrThrow(yield* Effect.orDie(log.inject("c1", "also this")))
      assert.deepStrictEqual(yield* Effect.orDie(log.drain("c1")), [{ id: queued.id, content: "also this" }])
      assert.deepStrictEqual(yield* Effect.orDie(log.drain("c1")), [])
    }))

  it.scoped("a keyed drain returns again what it took under its key, beside what was queued since; other keys and recalled messages not", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      yield* Effect.orDie(log.start({ runId: "r1", conversationId: "c1", query: "q" }))
      const inject = (text: string) =>
        Effect.map(Effect.orDie(log.inject("c1", text)), (i) => ({ id: Option.getOrThrow(i).id, content: text }))
      const drain = (key?: string) => Effect.orDie(log.drain("c1", key))
      const a = yield* inject("a")
      const b = yield* inject("b")
      assert.deepStrictEqual(yield* drain("k1"), [a, b])
      // the step re-run: the same messages, nothing new queued meanwhile
      assert.deepStrictEqual(yield* drain("k1"), [a, b])
      const c = yield* inject("c")
      const d = yield* inject("d")
      assert.isTrue(yield* Effect.orDie(log.recall("c1", d.id)))
      // what it took first, then what was queued since (in order); the recalled one not
      assert.deepStrictEqual(yield* drain("k1"), [a, b, c])
      assert.deepStrictEqual(yield* drain("k2"), [])
      assert.deepStrictEqual(yield* drain(), [])
      // a message drained under a key cannot be recalled any more
      assert.isFalse(yield* Effect.orDie(log.recall("c1", c.id)))
      const e = yield* inject("e")
      assert.deepStrictEqual(yield* drain("k2"), [e])
      assert.deepStrictEqual(yield* drain("k1"), [a, b, c])
    }))

  it.scoped("a conversation's latest run is the one started last: in the same millisecond, or on a clock behind", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      const latest = (conversationId: string) =>
        Effect.map(Effect.orDie(log.latest(conversationId)), (row) => Option.getOrThrow(row).runId)
      // the test clock stands still: both runs start at the same millisecond (run ids sort against their order)
      yield* Effect.orDie(log.start({ runId: "run_b", conversationId: "c1", query: "first" }))
      yield* Effect.orDie(log.finish("run_b"))
      yield* Effect.orDie(log.start({ runId: "run_a", conversationId: "c1", query: "second" }))
      assert.strictEqual(yield* latest("c1"), "run_a")
      // an instance whose clock is 5 s behind starts the next one
      yield* TestClock.setTime(60_000)
      yield* Effect.orDie(log.start({ runId: "run_y", conversationId: "c2", query: "first" }))
      yield* Effect.orDie(log.finish("run_y"))
      yield* TestClock.setTime(55_000)
      yield* Effect.orDie(log.start({ runId: "run_x", conversationId: "c2", query: "second" }))
      assert.strictEqual(yield* latest("c2"), "run_x")
    }))
})
