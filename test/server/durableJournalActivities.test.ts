/**
 * What the durable journal does around an activity, in process: a real
 * `@effect/workflow` memory engine runs the activities, the run log is a real
 * SQLite file, and "an earlier process" is simulated by writing its start row
 * or its claim in that log first (as the process that died would have). The
 * kill tests (`test/durable/*`) check the same behaviour across real process
 * restarts, but spawn servers; these run in the mutation set.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Workflow from "@effect/workflow/Workflow"
import * as WorkflowEngine from "@effect/workflow/WorkflowEngine"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { RunEvent } from "../../src/RunEvent.js"
import { makeIdempotencyKey } from "../../src/RunJournal.js"
import * as Database from "../../src/server/Database.js"
import * as DurableJournal from "../../src/server/internal/durableJournal.js"
import * as RunHost from "../../src/server/internal/runHost.js"
import * as RunLog from "../../src/server/RunLog.js"

type Body = (workflow: Context.Context<WorkflowEngine.WorkflowEngine | WorkflowEngine.WorkflowInstance>) => Effect.Effect<unknown>

/** One workflow whose body is the test's (looked up by the execution's id, one per test). */
const Probe = Workflow.make({
  name: "test/JournalProbe",
  payload: { id: Schema.String },
  success: Schema.Unknown,
  idempotencyKey: (p) => p.id
})
const bodies = new Map<string, Body>()
const engine = Probe.toLayer((payload) =>
  Effect.flatMap(Effect.context<WorkflowEngine.WorkflowEngine | WorkflowEngine.WorkflowInstance>(), (ctx) => bodies.get(payload.id)!(ctx))
).pipe(Layer.provideMerge(WorkflowEngine.layerMemory))

const openLog = (): Effect.Effect<RunLog.RunLogService, never, Scope.Scope> =>
  Effect.map(
    Layer.build(RunLog.layer.pipe(
      Layer.provide(Database.layer({ _tag: "Sqlite", filename: join(mkdtempSync(join(tmpdir(), "journal-acts-")), "runs.sqlite") })),
      Layer.orDie
    )),
    Context.get(RunLog.RunLog)
  )

/** The run's row (each test run has a conversation of its own: one active run per conversation). */
const begin = (log: RunLog.RunLogService, runId: string) =>
  Effect.orDie(log.start({ runId, conversationId: `c-${runId}`, query: "probe" }))

/** Runs `body` as run `runId`'s workflow in process `boot`, with a journal over `log`. */
const inRun = <A>(
  log: RunLog.RunLogService,
  runId: string,
  host: RunHost.RunHost,
  body: (journal: DurableJournal.DurableJournal) => Effect.Effect<A>,
  claims?: Parameters<typeof DurableJournal.make>[0]["claims"],
  beforeDone?: Parameters<typeof DurableJournal.make>[0]["beforeDone"]
): Effect.Effect<A> =>
  Effect.gen(function*() {
    const stored = yield* Effect.orDie(log.storedKeys(runId))
    const cancel = yield* Deferred.make<void>()
    bodies.set(runId, (workflow) =>
      Effect.scoped(Effect.flatMap(DurableJournal.make({
        runId,
        workflow,
        host,
        log,
        local: { runId, conversationId: `c-${runId}`, cancel },
        stored,
        ...(claims !== undefined ? { claims } : {}),
        ...(beforeDone !== undefined ? { beforeDone } : {})
      }), body)))
    return (yield* Probe.execute({ id: runId }).pipe(Effect.provide(engine), Effect.orDie)) as A
  })

const note = (text: string): RunEvent => ({ _tag: "AnswerDelta", content: text })

const done: RunEvent = {
  _tag: "Done",
  answer: "x",
  iterations: 1,
  usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15, llm_calls: 1, by_phase: {} },
  elapsed: 1,
  pending_injections: []
}

describe("durable journal: activities", () => {
  it.scopedLive("a plain activity sees restarted: false and records no start row", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      yield* begin(log, "r-plain")
      const seen = yield* inRun(log, "r-plain", yield* RunHost.make("boot-2"), (journal) =>
        journal.activity({ name: "llm/1", success: Schema.Unknown, execute: (ctx) => Effect.succeed(ctx.restarted) }))
      assert.strictEqual(seen, false)
      // nothing claimed the start: the next process to mark it is the first
      assert.strictEqual(yield* Effect.orDie(log.markStarted("r-plain", "llm/1", "probe")), "probe")
    }))

  it.scopedLive("a restart-aware activity started first by another process sees restarted: true; by this one, false", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      yield* begin(log, "r-aware")
      yield* Effect.orDie(log.markStarted("r-aware", "tool/a", "boot-1"))
      const seen = yield* inRun(log, "r-aware", yield* RunHost.make("boot-2"), (journal) =>
        Effect.all([
          journal.activity({ name: "tool/a", success: Schema.Unknown, restartAware: true, execute: (ctx) => Effect.succeed(ctx.restarted) }),
          journal.activity({ name: "tool/b", success: Schema.Unknown, restartAware: true, execute: (ctx) => Effect.succeed(ctx.restarted) })
        ]))
      assert.deepStrictEqual(seen, [true, false])
      // tool/b's start was recorded, by this process
      assert.strictEqual(yield* Effect.orDie(log.markStarted("r-aware", "tool/b", "probe")), "boot-2")
    }))

  it.scopedLive("an activity with onRestart runs onRestart when another process started it first, execute otherwise", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      yield* begin(log, "r-once")
      yield* Effect.orDie(log.markStarted("r-once", "tool/pay", "boot-1"))
      const seen = yield* inRun(log, "r-once", yield* RunHost.make("boot-2"), (journal) =>
        Effect.all(["tool/pay", "tool/fresh"].map((name) =>
          journal.activity({
            name,
            success: Schema.String,
            onRestart: () => Effect.succeed("onRestart"),
            execute: (ctx) => Effect.succeed(`execute ${ctx.restarted}`)
          })
        )))
      assert.deepStrictEqual(seen, ["onRestart", "execute false"])
    }))

  it.scopedLive("a call with onRestart or exclusive counts as in flight while it runs (a shutdown waits for it); a model call does not", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      const inFlight = (host: RunHost.RunHost) => Effect.map(host.drain(0), (d) => d.inFlight)
      const hosts = [yield* RunHost.make("boot-a"), yield* RunHost.make("boot-b"), yield* RunHost.make("boot-c")] as const
      yield* Effect.forEach(["r-fl1", "r-fl2", "r-fl3"], (id) => begin(log, id))
      const onRestart = yield* inRun(log, "r-fl1", hosts[0], (journal) =>
        journal.activity({ name: "tool/x", success: Schema.Number, onRestart: () => Effect.succeed(-1), execute: () => inFlight(hosts[0]) }))
      const exclusive = yield* inRun(log, "r-fl2", hosts[1], (journal) =>
        journal.activity({ name: "tool/y", success: Schema.Number, exclusive: true, execute: () => inFlight(hosts[1]) }))
      const plain = yield* inRun(log, "r-fl3", hosts[2], (journal) =>
        journal.activity({ name: "llm/1", success: Schema.Number, execute: () => inFlight(hosts[2]) }))
      assert.deepStrictEqual([onRestart, exclusive, plain], [1, 1, 0])
    }))

  it.scopedLive("an exclusive activity waits for another process's live claim, learns it was started first, and releases its own claim once done", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      yield* begin(log, "r-ex")
      // a process still holding the call (its lease runs 700 ms)
      const claimedAt = Date.now()
      assert.isTrue(Option.isSome(yield* Effect.orDie(log.claim("r-ex", "tool/ex", "boot-1", 700))))
      const [waited, restarted] = yield* inRun(
        log,
        "r-ex",
        yield* RunHost.make("boot-2"),
        (journal) =>
          journal.activity({
            name: "tool/ex",
            success: Schema.Tuple(Schema.Number, Schema.Boolean),
            exclusive: true,
            restartAware: true,
            execute: (ctx) => Effect.sync(() => [Date.now() - claimedAt, ctx.restarted] as const)
          }),
        { leaseMs: 600, renewMs: 100, maxWaitMs: 10_000 }
      )
      assert.isAtLeast(waited, 500, "ran only once the other process's lease had expired")
      assert.isTrue(restarted)
      // released: a third process takes the claim at once (a held one would answer none)
      assert.deepStrictEqual(Option.getOrNull(yield* Effect.orDie(log.claim("r-ex", "tool/ex", "boot-3", 10_000))), "boot-1")
    }))

  it.scopedLive("events are keyed by position in the body (b:n), by activity, process and position inside an activity, by their key when given", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      yield* begin(log, "r-keys")
      const journal = yield* inRun(log, "r-keys", yield* RunHost.make("boot-2"), (journal) =>
        Effect.gen(function*() {
          yield* journal.emit(note("one"))
          yield* journal.activity({
            name: "llm/1",
            success: Schema.Void,
            execute: () => Effect.zipRight(journal.emit(note("a")), journal.emit(note("b")))
          })
          yield* journal.emit(note("two"))
          yield* journal.emit(note("keyed"), { key: "x" })
          return journal
        }))
      const { keys } = yield* Effect.orDie(log.storedKeys("r-keys"))
      assert.deepStrictEqual([...keys].sort(), ["b:1", "b:2", "k:x", "llm/1@boot-2:1", "llm/1@boot-2:2"])
      const events = yield* Effect.orDie(log.eventsAfter("r-keys", 0))
      assert.deepStrictEqual(events.map((e) => e.event._tag === "AnswerDelta" ? e.event.content : e.event._tag), ["one", "a", "b", "two", "keyed"])
      assert.strictEqual(journal.idempotencyKey!("tool/x"), makeIdempotencyKey("r-keys", "tool/x"))
      assert.notStrictEqual(journal.idempotencyKey!("tool/x"), journal.idempotencyKey!("tool/y"))
    }))

  it.scopedLive("beforeDone runs once, for Done only, before it is stored; a journal without it stores Done as any event", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      yield* Effect.forEach(["r-done1", "r-done2"], (id) => begin(log, id))
      const seen: Array<string> = []
      yield* inRun(log, "r-done1", yield* RunHost.make("boot-2"), (journal) =>
        Effect.gen(function*() {
          yield* journal.emit(note("answer"))
          yield* journal.emit(done)
        }), undefined, (event) =>
        Effect.flatMap(Effect.orDie(log.eventsAfter("r-done1", 0)), (stored) =>
          Effect.sync(() => {
            seen.push(`${event._tag} after ${stored.length} stored`)
            return event
          })))
      assert.deepStrictEqual(seen, ["Done after 1 stored"])
      assert.strictEqual((yield* Effect.orDie(log.eventsAfter("r-done1", 0))).length, 2)
      yield* inRun(log, "r-done2", yield* RunHost.make("boot-2"), (journal) => journal.emit(done))
      assert.deepStrictEqual([...(yield* Effect.orDie(log.storedKeys("r-done2"))).keys], ["b:1"])
    }))
})
