/**
 * How a durable run's journal keys its events, against the real run log on a
 * SQLite file: a process that stored some events dies, the next one replays
 * the run and emits them again — possibly in another order, where calls of a
 * round emit concurrently — and every event must end up stored exactly once.
 * And `lastSeq`, the id of the run's last stored event so far, which the server
 * stores with each step of a run's trace so that a fork at an event takes the
 * steps recorded before it (written from a mutation run: `lastSeq` could
 * answer `undefined` and every test of the mutation set passed).
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
import * as CallClaim from "../../src/server/internal/callClaim.js"
import * as DurableJournal from "../../src/server/internal/durableJournal.js"
import * as RunHost from "../../src/server/internal/runHost.js"
import * as RunLog from "../../src/server/RunLog.js"

/** As the loop emits it (`approval.ts`): keyed by its approval id. */
const ask = (journal: DurableJournal.DurableJournal, id: string, call: string) =>
  journal.emit(requested(id, call), { key: `approval/${id}/requested` })

const requested = (id: string, call: string): RunEvent => ({
  _tag: "ApprovalRequested",
  approval_id: id,
  tool_call_id: call,
  tool_name: "pay",
  tool_args: { call },
  args_hash: `h_${call}`,
  iteration: 1
})

const note = (text: string): RunEvent => ({ _tag: "AnswerDelta", content: text })

/** A journal of run `r1` as a (new) process would make it, continuing from what the log holds. */
const journalOf = (log: RunLog.RunLogService, boot: string) =>
  Effect.gen(function*() {
    const stored = yield* Effect.orDie(log.storedKeys("r1"))
    const cancel = yield* Deferred.make<void>()
    return yield* DurableJournal.make({
      runId: "r1",
      // emitting from the body touches no workflow activity
      workflow: Context.empty() as Context.Context<WorkflowEngine | WorkflowInstance>,
      host: yield* RunHost.make(boot),
      calls: yield* CallClaim.makeCalls(boot),
      log,
      local: { runId: "r1", conversationId: "c1", cancel },
      stored
    })
  })

describe("durable journal: event keys", () => {
  it.scoped("events emitted with a key (approval requests of concurrent calls) are stored once each, whatever order a replay emits them in", () =>
    Effect.gen(function*() {
      const filename = join(mkdtempSync(join(tmpdir(), "journal-keys-")), "runs.sqlite")
      const log = yield* Effect.map(
        Layer.build(RunLog.layer.pipe(Layer.provide(Database.layer({ _tag: "Sqlite", filename })), Layer.orDie)),
        Context.get(RunLog.RunLog)
      )
      yield* Effect.orDie(log.start({ runId: "r1", conversationId: "c1", query: "pay twice" }))
      // the first process: call A asked for its approval, then the process died before call C did
      const first = yield* journalOf(log, "boot-1")
      yield* ask(first, "ap_A", "call_A")
      // the replay: C's fiber happens to ask first this time
      const second = yield* journalOf(log, "boot-2")
      yield* ask(second, "ap_C", "call_C")
      yield* ask(second, "ap_A", "call_A")
      const events = yield* Effect.orDie(log.eventsAfter("r1", 0))
      const ids = events.map((e) => e.event._tag === "ApprovalRequested" ? e.event.approval_id : undefined)
      assert.deepStrictEqual(ids, ["ap_A", "ap_C"], "each approval request stored once, none lost")
      assert.deepStrictEqual(events.map((e) => e.seq), [1, 2])
      assert.strictEqual(yield* second.skipped, 1)
    }))
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
      assert.strictEqual(yield* first.lastSeq, 0)
      yield* first.emit(note("one"))
      assert.strictEqual(yield* first.lastSeq, 1)
      yield* first.emit(note("two"))
      assert.strictEqual(yield* first.lastSeq, 2)
      // the next process replays the first event (stored: skipped), then stores a new one
      const second = yield* journalOf(log, "boot-2")
      assert.strictEqual(yield* second.lastSeq, 2)
      yield* second.emit(note("one"))
      assert.strictEqual(yield* second.lastSeq, 2)
      yield* second.emit(note("keyed"), { key: "x" })
      assert.strictEqual(yield* second.lastSeq, 3)
      const events = yield* Effect.orDie(log.eventsAfter("r1", 0))
      assert.deepStrictEqual(events.map((e) => e.seq), [1, 2, 3])
      assert.strictEqual(events.at(-1)!.seq, yield* second.lastSeq)
    }))
})
