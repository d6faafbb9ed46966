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
import * as Fiber from "effect/Fiber"
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
import * as CallClaim from "../../src/server/internal/callClaim.js"
import * as DurableJournal from "../../src/server/internal/durableJournal.js"
import * as RunHost from "../../src/server/internal/runHost.js"
import * as RunLog from "../../src/server/RunLog.js"

type Body = (
  workflow: Context.Context<WorkflowEngine.WorkflowEngine | WorkflowEngine.WorkflowInstance>
) => Effect.Effect<unknown>

/** One workflow whose body is the test's (looked up by the execution's id, one per test). */
const Probe = Workflow.make({
  name: "test/JournalProbe",
  payload: { id: Schema.String },
  success: Schema.Unknown,
  idempotencyKey: (p) => p.id
})
const bodies = new Map<string, Body>()
const engine = Probe.toLayer((payload) =>
  Effect.flatMap(
    Effect.context<WorkflowEngine.WorkflowEngine | WorkflowEngine.WorkflowInstance>(),
    (ctx) => bodies.get(payload.id)!(ctx)
  )
).pipe(Layer.provideMerge(WorkflowEngine.layerMemory))

const openLog = (): Effect.Effect<RunLog.RunLogService, never, Scope.Scope> =>
  Effect.map(
    Layer.build(RunLog.layer.pipe(
      Layer.provide(
        Database.layer({ _tag: "Sqlite", filename: join(mkdtempSync(join(tmpdir(), "journal-acts-")), "runs.sqlite") })
      ),
      Layer.orDie
    )),
    Context.get(RunLog.RunLog)
  )

/** The run's row (each test run has a conversation of its own: one active run per conversation). */
const begin = (log: RunLog.RunLogService, runId: string) =>
  Effect.orDie(log.start({ runId, conversationId: `c-${runId}`, query: "probe" }))

/** A process: its run host and the tool calls executing in it (stopped with the scope). */
interface Process {
  readonly host: RunHost.RunHost
  readonly calls: CallClaim.Calls
}
const processOf = (boot: string): Effect.Effect<Process, never, Scope.Scope> =>
  Effect.zipWith(RunHost.make(boot), CallClaim.makeCalls(boot), (host, calls) => ({ host, calls }))

/** Runs `body` as run `runId`'s workflow in process `process`, with a journal over `log`. */
const inRun = <A>(
  log: RunLog.RunLogService,
  runId: string,
  { calls, host }: Process,
  body: (journal: DurableJournal.DurableJournal) => Effect.Effect<A>,
  claims?: Parameters<typeof DurableJournal.make>[0]["claims"],
  beforeDone?: Parameters<typeof DurableJournal.make>[0]["beforeDone"]
): Effect.Effect<A> =>
  Effect.gen(function*() {
    const stored = yield* Effect.orDie(log.storedKeys(runId))
    const cancel = yield* Deferred.make<void>()
    bodies.set(runId, (workflow) =>
      Effect.scoped(Effect.flatMap(
        DurableJournal.make({
          runId,
          workflow,
          host,
          calls,
          log,
          local: { runId, conversationId: `c-${runId}`, cancel },
          stored,
          ...(claims !== undefined ? { claims } : {}),
          ...(beforeDone !== undefined ? { beforeDone } : {})
        }),
        body
      )))
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
      const seen = yield* inRun(log, "r-plain", yield* processOf("boot-2"), (journal) =>
        journal.activity({
          name: "llm/1",
          success: Schema.Unknown,
          execute: (ctx) => Effect.succeed(ctx.restarted)
        }))
      assert.strictEqual(seen, false)
      // nothing claimed the start: the next process to mark it is the first
      assert.strictEqual(yield* Effect.orDie(log.markStarted("r-plain", "llm/1", "probe")), "probe")
    }))

  it.scopedLive("a restart-aware activity started first by another process sees restarted: true; by this one, false", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      yield* begin(log, "r-aware")
      yield* Effect.orDie(log.markStarted("r-aware", "tool/a", "boot-1"))
      const seen = yield* inRun(log, "r-aware", yield* processOf("boot-2"), (journal) =>
        Effect.all([
          journal.activity({
            name: "tool/a",
            success: Schema.Unknown,
            restartAware: true,
            execute: (ctx) => Effect.succeed(ctx.restarted)
          }),
          journal.activity({
            name: "tool/b",
            success: Schema.Unknown,
            restartAware: true,
            execute: (ctx) => Effect.succeed(ctx.restarted)
          })
        ]))
      assert.deepStrictEqual(seen, [true, false])
      // tool/b's start was recorded, by an execution of this process
      assert.match(yield* Effect.orDie(log.markStarted("r-aware", "tool/b", "probe")), /^boot-2\/\d+$/)
    }))

  it.scopedLive("a restart-aware activity delivered again in the same process (its entity started again) sees restarted: true, and its events are stored again", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      yield* begin(log, "r-aware-again")
      const process = yield* processOf("boot-a")
      const started = yield* Deferred.make<void>()
      let attempts = 0
      const stream = (journal: DurableJournal.DurableJournal) =>
        journal.activity({
          name: "synthesis",
          success: Schema.Boolean,
          restartAware: true,
          execute: (ctx) =>
            Effect.gen(function*() {
              attempts++
              yield* journal.emit(note(ctx.restarted ? "reset, again" : "streaming"))
              yield* Deferred.succeed(started, undefined)
              if (attempts === 1) yield* Effect.never
              return ctx.restarted
            })
        })
      const first = yield* Effect.fork(inRun(log, "r-aware-again", process, stream))
      yield* Deferred.await(started)
      yield* Fiber.interrupt(first)
      assert.isTrue(yield* inRun(log, "r-aware-again", process, stream))
      const events = yield* Effect.orDie(log.eventsAfter("r-aware-again", 0))
      assert.deepStrictEqual(events.map((e) => (e.event._tag === "AnswerDelta" ? e.event.content : e.event._tag)), [
        "streaming",
        "reset, again"
      ])
    }))

  it.scopedLive("a restart-aware activity cut before its first event has shown nothing: shown is false; cut after one, true", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      const process = yield* processOf("boot-a")
      const attempt = (runId: string, emitFirst: boolean) =>
        Effect.gen(function*() {
          yield* begin(log, runId)
          const started = yield* Deferred.make<void>()
          let attempts = 0
          // the run's body stored an event before the activity: only the activity's own earlier events count as shown
          const stream = (journal: DurableJournal.DurableJournal) =>
            Effect.zipRight(
              journal.emit(note("before the call")),
              journal.activity({
                name: "llm/2",
                success: Schema.Array(Schema.Boolean),
                restartAware: true,
                execute: (ctx) =>
                  Effect.gen(function*() {
                    attempts++
                    if (attempts === 1 && emitFirst) yield* journal.emit(note("partial"))
                    yield* Deferred.succeed(started, undefined)
                    if (attempts === 1) yield* Effect.never
                    return [ctx.restarted, ctx.shown === true]
                  })
              })
            )
          const first = yield* Effect.fork(inRun(log, runId, process, stream))
          yield* Deferred.await(started)
          yield* Fiber.interrupt(first)
          return yield* inRun(log, runId, process, stream)
        })
      assert.deepStrictEqual(yield* attempt("r-cut-silent", false), [true, false])
      assert.deepStrictEqual(yield* attempt("r-cut-shown", true), [true, true])
    }))

  it.scopedLive("an activity with onRestart runs onRestart when another process started it first, execute otherwise", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      yield* begin(log, "r-once")
      yield* Effect.orDie(log.markStarted("r-once", "tool/pay", "boot-1"))
      const seen = yield* inRun(
        log,
        "r-once",
        yield* processOf("boot-2"),
        (journal) =>
          Effect.all(["tool/pay", "tool/fresh"].map((name) =>
            journal.activity({
              name,
              success: Schema.String,
              onRestart: () => Effect.succeed("onRestart"),
              execute: (ctx) => Effect.succeed(`execute ${ctx.restarted}`)
            })
          ))
      )
      assert.deepStrictEqual(seen, ["onRestart", "execute false"])
    }))

  it.scopedLive("a call with onRestart or exclusive counts as in flight while it runs (a shutdown waits for it); a model call does not", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      const inFlight = (host: RunHost.RunHost) => Effect.map(host.drain(0), (d) => d.inFlight)
      const procs = [yield* processOf("boot-a"), yield* processOf("boot-b"), yield* processOf("boot-c")] as const
      yield* Effect.forEach(["r-fl1", "r-fl2", "r-fl3"], (id) => begin(log, id))
      const onRestart = yield* inRun(
        log,
        "r-fl1",
        procs[0],
        (journal) =>
          journal.activity({
            name: "tool/x",
            success: Schema.Number,
            onRestart: () => Effect.succeed(-1),
            execute: () => inFlight(procs[0].host)
          })
      )
      const exclusive = yield* inRun(
        log,
        "r-fl2",
        procs[1],
        (journal) =>
          journal.activity({
            name: "tool/y",
            success: Schema.Number,
            exclusive: true,
            execute: () => inFlight(procs[1].host)
          })
      )
      const plain = yield* inRun(
        log,
        "r-fl3",
        procs[2],
        (journal) => journal.activity({ name: "llm/1", success: Schema.Number, execute: () => inFlight(procs[2].host) })
      )
      assert.deepStrictEqual([onRestart, exclusive, plain], [1, 1, 0])
    }))

  it.scopedLive("an exclusive activity waits for another process's live claim, learns it was started first, and stores its outcome once done", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      yield* begin(log, "r-ex")
      // a process still holding the call (its lease runs 700 ms)
      const claimedAt = Date.now()
      assert.isTrue(Option.isSome(yield* Effect.orDie(log.claim("r-ex", "tool/ex", "boot-1", 700))))
      const [waited, restarted] = yield* inRun(
        log,
        "r-ex",
        yield* processOf("boot-2"),
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
      // settled: its outcome is stored, and no later attempt claims the call again (it adopts the outcome)
      assert.isTrue(Option.isNone(yield* Effect.orDie(log.claim("r-ex", "tool/ex", "boot-3", 10_000))))
      assert.isTrue(Option.isSome(yield* Effect.orDie(log.callOutcome("r-ex", "tool/ex"))))
    }))

  it.scopedLive("events are keyed by position in the body (b:n), by activity, process and position inside an activity, by their key when given", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      yield* begin(log, "r-keys")
      const journal = yield* inRun(log, "r-keys", yield* processOf("boot-2"), (journal) =>
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
      assert.deepStrictEqual(events.map((e) => e.event._tag === "AnswerDelta" ? e.event.content : e.event._tag), [
        "one",
        "a",
        "b",
        "two",
        "keyed"
      ])
      assert.strictEqual(journal.idempotencyKey!("tool/x"), makeIdempotencyKey("r-keys", "tool/x"))
      assert.notStrictEqual(journal.idempotencyKey!("tool/x"), journal.idempotencyKey!("tool/y"))
    }))

  it.scopedLive("beforeDone runs once, for Done only, before it is stored; a journal without it stores Done as any event", () =>
    Effect.gen(function*() {
      const log = yield* openLog()
      yield* Effect.forEach(["r-done1", "r-done2"], (id) => begin(log, id))
      const seen: Array<string> = []
      yield* inRun(
        log,
        "r-done1",
        yield* processOf("boot-2"),
        (journal) =>
          Effect.gen(function*() {
            yield* journal.emit(note("answer"))
            yield* journal.emit(done)
          }),
        undefined,
        (event) =>
          Effect.flatMap(Effect.orDie(log.eventsAfter("r-done1", 0)), (stored) =>
            Effect.sync(() => {
              seen.push(`${event._tag} after ${stored.length} stored`)
              return event
            }))
      )
      assert.deepStrictEqual(seen, ["Done after 1 stored"])
      assert.strictEqual((yield* Effect.orDie(log.eventsAfter("r-done1", 0))).length, 2)
      yield* inRun(log, "r-done2", yield* processOf("boot-2"), (journal) => journal.emit(done))
      assert.deepStrictEqual([...(yield* Effect.orDie(log.storedKeys("r-done2"))).keys], ["b:1"])
    }))

  // a run's entity torn down mid-call and started again (a shard lock lost and got back, a shard moved),
  // as @effect/cluster does it: the workflow's body is interrupted, then executed again
  describe("a tool call delivered again while it runs (issue 46)", () => {
    /** A call that is not idempotent, recording each execution's start and end. */
    const payCall =
      (records: Array<string>, started: Deferred.Deferred<void>) => (journal: DurableJournal.DurableJournal) =>
        journal.activity({
          name: "tool/1/pay",
          success: Schema.String,
          onRestart: () => Effect.succeed("cut"),
          execute: () =>
            Effect.gen(function*() {
              records.push("start")
              yield* journal.emit(note("paying"))
              yield* Deferred.succeed(started, undefined)
              yield* Effect.sleep("400 millis")
              yield* journal.emit(note("paid"))
              records.push("end")
              return "paid"
            })
        })

    /** Runs `call` in a body that emits before and after it; the first run is interrupted once the call started. */
    const body =
      (call: (journal: DurableJournal.DurableJournal) => Effect.Effect<string>) =>
      (journal: DurableJournal.DurableJournal) =>
        Effect.gen(function*() {
          yield* journal.emit(note("before"))
          const paid = yield* call(journal)
          yield* journal.emit(note("after"))
          return paid
        })

    it.scopedLive("in the same process: the attempt joins the running execution — one execution, its outcome, its events stored once", () =>
      Effect.gen(function*() {
        const log = yield* openLog()
        yield* begin(log, "r-again")
        const process = yield* processOf("boot-a")
        const records: Array<string> = []
        const started = yield* Deferred.make<void>()
        const call = payCall(records, started)
        const first = yield* Effect.fork(inRun(log, "r-again", process, body(call)))
        yield* Deferred.await(started)
        yield* Fiber.interrupt(first)
        const again = yield* inRun(log, "r-again", process, body(call))
        assert.strictEqual(again, "paid")
        assert.deepStrictEqual(records, ["start", "end"], "one execution")
        // the call's events went to the body that waited for it: each once, ids in order, none lost
        const events = yield* Effect.orDie(log.eventsAfter("r-again", 0))
        assert.deepStrictEqual(
          events.map((e) => [e.seq, e.event._tag === "AnswerDelta" ? e.event.content : e.event._tag]),
          [[1, "before"], [2, "paying"], [3, "paid"], [4, "after"]]
        )
      }))

    it.scopedLive("on another instance: the attempt waits for the live holder's outcome and adopts it — never 'interrupted' while it runs", () =>
      Effect.gen(function*() {
        const log = yield* openLog()
        yield* begin(log, "r-moved")
        const [a, b] = [yield* processOf("boot-a"), yield* processOf("boot-b")]
        const records: Array<string> = []
        const started = yield* Deferred.make<void>()
        const call = payCall(records, started)
        const first = yield* Effect.fork(
          inRun(log, "r-moved", a, body(call), { leaseMs: 600, renewMs: 100, maxWaitMs: 10_000 })
        )
        yield* Deferred.await(started)
        yield* Fiber.interrupt(first)
        const adopted = yield* inRun(log, "r-moved", b, body(call), { leaseMs: 600, renewMs: 100, maxWaitMs: 10_000 })
        assert.strictEqual(adopted, "paid")
        assert.deepStrictEqual(records, ["start", "end"], "one execution, on A")
      }))

    it.scopedLive("a cancelled run stops the call's execution", () =>
      Effect.gen(function*() {
        const log = yield* openLog()
        yield* begin(log, "r-cancel")
        const process = yield* processOf("boot-a")
        const started = yield* Deferred.make<void>()
        const cancel = yield* Deferred.make<void>()
        const stopped = yield* Deferred.make<void>()
        bodies.set("r-cancel", (workflow) =>
          Effect.scoped(Effect.flatMap(
            DurableJournal.make({
              runId: "r-cancel",
              workflow,
              host: process.host,
              calls: process.calls,
              log,
              local: { runId: "r-cancel", conversationId: "c-r-cancel", cancel },
              stored: { keys: new Set(), lastSeq: 0 }
            }),
            (journal) =>
              journal.activity({
                name: "tool/1/pay",
                success: Schema.String,
                onRestart: () => Effect.succeed("cut"),
                execute: () =>
                  Effect.zipRight(Deferred.succeed(started, undefined), Effect.as(Effect.never, "never")).pipe(
                    Effect.onInterrupt(() => Deferred.succeed(stopped, undefined))
                  )
              })
          )))
        const run = yield* Effect.fork(Effect.exit(Probe.execute({ id: "r-cancel" }).pipe(Effect.provide(engine))))
        yield* Deferred.await(started)
        yield* Deferred.succeed(cancel, undefined)
        yield* Deferred.await(stopped)
        const exit = yield* Fiber.join(run)
        assert.isTrue(exit._tag === "Failure", "the run's activity dies (RunStopped)")
      }))
  })
})
