/**
 * `lastSeq` of the durable journal: the id of the run's last stored event so
 * far. The server stores each step of a run's trace with it (`DurableRuns`),
 * so that a fork at an event takes the steps recorded before that event.
 * Against the real run log on a SQLite file; a second journal plays the next
 * process, continuing from what the log holds.
 *
 * Written from a mutation run (docs/testing.md#mutation-testing): `lastSeq`
 * could answer `undefined` and every test of the mutation set passed.
 */
import { assert, describe, it } from "@effect/vitest"
import type { WorkflowEngine, WorkflowInstance } from "@effect/workflow/WorkflowEngine"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { RunEvent } from "../../src/RunEvent.js"
import * as Database from "../../src/server/Database.js"
import * as DurableJournal from "../../src/server/internal/durableJournal.js"
import * as RunHost from "../../src/server/internal/runHost.js"
import * as RunLog from "../../src/server/RunLog.js"

const note = (text: string): RunEvent => ({ _tag: "AnswerDelta", content: text })

/** A journal of run `r1` as a (new) process would make it, continuing from what the log holds. */
const journalOf = (log: RunLog.RunLogService, boot: string) =>
  Effect.gen(function*() {
    const stored = yield* Effect.orDie(log.storedKeys("r1"))
    const cancel = yield* Deferred.make<void>()
    return DurableJournal.make({
      runId: "r1",
      // emitting from the body touches no workflow activity
      workflow: Context.empty() as Context.Context<WorkflowEngine | WorkflowInstance>,
      host: RunHost.make(boot),
      log,
      local: { runId: "r1", conversationId: "c1", cancel },
      stored
    })
  })

describe("durable journal: lastSeq", () => {
  it.scoped("is the id of the last stored event: 0 before any, advanced by each stored event, continued by the next process, not by a skipped one", () =>
    Effect.gen(function*() {
      const filename = join(mkdtempSync(join(tmpdir(), "journal-seq-")), "runs.sqlite")
      const log = yield* Effect.map(
        Layer.build(RunLog.layer.pipe(Layer.provide(Database.layer({ _tag: "Sqlite", filename })), Layer.orDie)),
        Context.get(RunLog.RunLog)
      )
      yield* Effect.orDie(log.start({ runId: "r1", conversationId: "c1", query: "count" }))
      const first = yield* journalOf(log, "boot-1")
      assert.strictEqual(first.lastSeq(), 0)
      yield* first.emit(note("one"))
      assert.strictEqual(first.lastSeq(), 1)
      yield* first.emit(note("two"))
      assert.strictEqual(first.lastSeq(), 2)
      // the next process replays the first event (stored: skipped), then stores a new one
      const second = yield* journalOf(log, "boot-2")
      assert.strictEqual(second.lastSeq(), 2)
      yield* second.emit(note("one"))
      assert.strictEqual(second.lastSeq(), 2)
      yield* second.emit(note("keyed"), { key: "x" })
      assert.strictEqual(second.lastSeq(), 3)
      const events = yield* Effect.orDie(log.eventsAfter("r1", 0))
      assert.deepStrictEqual(events.map((e) => e.seq), [1, 2, 3])
      assert.strictEqual(events.at(-1)!.seq, second.lastSeq())
    }))
})
