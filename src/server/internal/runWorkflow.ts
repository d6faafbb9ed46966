/**
 * The body of a server run's workflow (`DurableRuns.layerWorkflow`), as named
 * steps: `begin` (its turn, its row, what it stored, its journal), `resume` (a
 * run found half done says so), `history` (the conversation so far, compacted in
 * an activity when it must be), `recordInput` (the cassette's input), `route`
 * (`auto` mode: an activity picks ReAct or DAG), `execute` (the agent's own code
 * path through the durable journal) and `end` (the stored step that ends the run:
 * its turn stored, the conversation free again, then its `Done`).
 *
 * What the stored turn says — the answer the user saw, whether the run failed —
 * is folded from the run's events into a `Summary` (a `Ref` updated by the pure
 * `observe`).
 *
 * @internal
 */
import * as Activity from "@effect/workflow/Activity"
import type { WorkflowEngine, WorkflowInstance } from "@effect/workflow/WorkflowEngine"
import * as Clock from "effect/Clock"
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import * as ContextGuard from "../../ContextGuard.js"
import * as DagAgent from "../../DagAgent.js"
import * as Memory from "../../Memory.js"
import * as Message from "../../Message.js"
import * as ReactAgent from "../../ReactAgent.js"
import * as Recorder from "../../Recorder.js"
import * as Replay from "../../Replay.js"
import { isOwn, type RunEvent } from "../../RunEvent.js"
import * as Telemetry from "../../Telemetry.js"
import * as ConversationBudget from "../ConversationBudget.js"
import * as ConversationStore from "../ConversationStore.js"
import type { RunRow } from "../RunLog.js"
import * as RunLog from "../RunLog.js"
import * as RunTrace from "../RunTrace.js"
import * as SqlAttachments from "../SqlAttachments.js"
import * as CallClaim from "./callClaim.js"
import * as DurableJournal from "./durableJournal.js"
import { endLine } from "./durableRuns.js"
import * as OutputSchema from "./outputSchema.js"
import * as RunAttachments from "./runAttachments.js"
import * as RunCassette from "./runCassette.js"
import type { LocalRun, RunHost } from "./runHost.js"
import * as Transcript from "./transcript.js"

/**
 * What starts a run (stored with the workflow execution; `DurableRuns.RunPayload`).
 */
export const RunPayload = Schema.Struct({
  runId: Schema.String,
  conversationId: Schema.String,
  query: Schema.String,
  mode: DagAgent.Mode,
  maxIterations: Schema.optional(Schema.Number),
  /** The span of the request that started the run (a replayed run joins its trace). */
  parent: Schema.optional(Telemetry.SpanParent),
  /** A fork's run: the original run's steps stored before event `at` are taken from storage (`Replay.withPrefix`). */
  fork: Schema.optional(RunCassette.ForkPoint),
  /**
   * The conversation's earlier turns, read when the run was started (its
   * conversation already held by it): stored with the run, so a replay reads
   * the same list without a stored step of its own. Absent in runs started by
   * earlier versions (the `history` activity reads them).
   */
  history: Schema.optional(Schema.Array(Message.ChatMessage)),
  /** The answer's JSON Schema (`output_schema`), checked when the run was started. */
  outputSchema: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  /** The query's attachments (their bytes stored before the run started: references only). */
  attachments: Schema.optional(Schema.Array(Message.FileRef)),
  /** The user whose memory the run reads and writes (docs/memory.md). */
  userId: Schema.optional(Schema.String)
})
export type RunPayload = typeof RunPayload.Type

const StoredHistory = Schema.Array(Message.ChatMessage)

/** The key of a run's `Queued` event, stored by the registry when it started the run (not a sign of a resume). */
export const QUEUED_KEY = "queued"

type Done = Extract<RunEvent, { _tag: "Done" }>

/** What the stored turn says, folded from the run's events. */
interface Summary {
  /** The answer as streamed so far (what the user saw). */
  readonly streamed: string
  readonly failure: string | undefined
  readonly retries: number
}

const observe = (summary: Summary, event: RunEvent): Summary => {
  // the stored turn is the run's own: a sub-agent's events (`agent` set) are not its answer
  if (!isOwn(event)) return summary
  switch (event._tag) {
    case "AnswerDelta":
      return { ...summary, streamed: summary.streamed + event.content }
    case "AnswerReset":
      return { ...summary, streamed: "" }
    case "RunFailed":
      return { ...summary, failure: event.message }
    case "LlmRetry":
      return { ...summary, retries: summary.retries + 1 }
    default:
      return summary
  }
}

/** A run that began: what every later step uses. */
interface Run {
  readonly payload: RunPayload
  readonly host: RunHost
  readonly log: RunLog.RunLogService
  readonly store: ConversationStore.ConversationStoreService
  readonly trace: RunTrace.RunTraceService
  readonly local: LocalRun
  readonly row: RunRow
  /** True when the run had stored events: it was cut by a crash (or moved here from a dead instance). */
  readonly resumed: boolean
  readonly workflow: Context.Context<WorkflowEngine | WorkflowInstance>
  readonly journal: DurableJournal.DurableJournal
}

/** An activity of the run's workflow that stores nothing but its completion. */
const step = (run: Pick<Run, "workflow">, name: string, execute: Effect.Effect<void>) =>
  Effect.provide(Activity.make({ name, execute }), run.workflow)

/** The run's turn (admission), its row, what it stored before, and its journal. */
const begin = (payload: RunPayload, host: RunHost) =>
  Effect.gen(function*() {
    const { conversationId, runId } = payload
    const log = yield* RunLog.RunLog
    const store = yield* ConversationStore.ConversationStore
    const trace = yield* RunTrace.RunTrace
    const calls = yield* CallClaim.ToolCalls
    const workflow = yield* Effect.context<WorkflowEngine | WorkflowInstance>()
    const local = yield* host.register(runId, conversationId)
    const row = yield* Effect.flatMap(
      log.run(runId),
      Option.match({
        onNone: () => Effect.dieMessage(`run ${runId} is not in the run log`),
        onSome: Effect.succeed
      })
    ).pipe(Effect.orDie)
    const stored = yield* Effect.orDie(log.storedKeys(runId))
    const summary = yield* Ref.make<Summary>({ streamed: "", failure: undefined, retries: 0 })
    const resumed = [...stored.keys].some((key) => key !== QUEUED_KEY)
    const started = { payload, host, log, store, trace, local, row, resumed, workflow }
    const journal = yield* DurableJournal.make({
      runId,
      workflow,
      host,
      calls,
      log,
      local,
      stored,
      observe: (event) => Ref.update(summary, (s) => observe(s, event)),
      beforeDone: (done) => end(started, Ref.get(summary), done)
    })
    return { ...started, journal } satisfies Run
  })

/**
 * The stored step that ends the run: its turn stored, the conversation free again
 * before its client reads `done` (each part idempotent: a re-run after a crash
 * stores the turn once); then the log line and the `Done` to store, with the
 * server's own fields.
 */
const end = (run: Omit<Run, "journal">, summary: Effect.Effect<Summary>, done: Done): Effect.Effect<Done> =>
  Effect.gen(function*() {
    const { conversationId, query, runId } = run.payload
    const cancelled = yield* Deferred.isDone(run.local.cancel)
    const { failure, retries, streamed } = yield* summary
    const answer = done.answer === "" ? streamed : done.answer
    yield* step(
      run,
      "end",
      run.store.appendTurn({
        conversationId,
        query,
        answer,
        messages: Transcript.loopMessages(done.messages ?? [], query),
        usage: done.usage,
        runId,
        status: cancelled ? "cancelled" : failure !== undefined ? "failed" : "completed"
      }).pipe(
        Effect.catchAll((error) => Effect.logError(`run ${runId}: ${error.message}`)),
        Effect.zipRight(Effect.orDie(run.log.finish(runId)))
      )
    )
    const elapsed = ((yield* Clock.currentTimeMillis) - run.row.startedAt) / 1000
    const status = cancelled ? "cancelled" : failure !== undefined ? "failed" : "done"
    const line = endLine(runId, conversationId, status, done, retries, elapsed)
    yield* status === "failed" ? Effect.logWarning(`${line}: ${failure}`) : Effect.logInfo(line)
    return {
      ...done,
      answer,
      elapsed,
      conversation_id: conversationId,
      run_id: runId,
      ...(cancelled ? { cancelled: true } : {})
    }
  })

/** A run found half done says so once, and its clients get a fresh detach grace (they are reconnecting). */
const resume = (run: Run) =>
  run.resumed
    ? Effect.zipRight(
      run.journal.emitOnce(`resumed@${run.host.bootId}`, { _tag: "Resumed" }),
      Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.orDie(run.log.touch(run.payload.runId, now)))
    )
    : Effect.void

/**
 * The conversation so far: the history that came with the run and fits as it is
 * needs no stored step; one the guard may compact (with a model call) is
 * compacted in the `history` activity.
 */
const history = (run: Run) =>
  Effect.gen(function*() {
    const guard = yield* ContextGuard.ContextGuard
    const started = run.payload.history
    const fits = started !== undefined && (started.length === 0 || guard.fits?.(started, { hint: "general" }) === true)
    if (fits) return started
    return yield* run.journal.activity({
      name: "history",
      success: StoredHistory,
      execute: () =>
        (started !== undefined ? Effect.succeed(started) : run.store.history(run.payload.conversationId)).pipe(
          Effect.flatMap((turns) =>
            turns.length === 0 ? Effect.succeed(turns) : guard.checkAndCompact(turns, { hint: "general" }).pipe(
              Effect.tap((checked) =>
                checked.compacted
                  ? run.journal.emit({
                    _tag: "Compact",
                    original_messages: checked.originalMessages,
                    kept_messages: checked.keptMessages
                  })
                  : Effect.void
              ),
              Effect.map((checked) => checked.messages)
            )
          ),
          Effect.catchAll((error) =>
            Effect.as(Effect.logError(`run ${run.payload.runId}: ${error.message}; continuing without history`), [])
          )
        )
    })
  })

/** Stores a failed trace write as a warning, never as the run's failure. */
const warned = (run: Run) => <E extends { readonly message: string }>(effect: Effect.Effect<void, E>) =>
  Effect.catchAll(effect, (error) => Effect.logWarning(`run ${run.payload.runId}: ${error.message}`))

/** What the run's cassette is built from begins with its input (once: not again on a replay). */
const recordInput = (run: Run, turns: ReadonlyArray<Message.ChatMessage>) => {
  const { maxIterations, query, runId, userId } = run.payload
  return run.resumed ? Effect.void : run.trace.append(runId, "input", {
    query: RunAttachments.query(query, run.payload.attachments),
    history: turns,
    ...(maxIterations !== undefined ? { max_iterations: maxIterations } : {}),
    ...(userId !== undefined ? { user_id: userId } : {})
  }).pipe(warned(run))
}

/** The mode the run executes in (`auto`: an activity asks the router). */
const route = (run: Run) =>
  run.payload.mode !== "auto" ?
    Effect.succeed(run.payload.mode) :
    Effect.flatMap(DagAgent.DagAgent, (dag) =>
      run.journal.activity({
        name: "route",
        success: Schema.Literal("react", "dag"),
        execute: () => Effect.map(dag.route(run.payload.query), (routed) => routed.mode)
      }))

/**
 * The agent's own code path through the durable journal, under the
 * conversation's budget (`REACT_CONVERSATION_BUDGET_USD`). ReAct mode records its
 * model calls, tool outcomes and drains for the cassette (each with the id of the
 * run's last event so far: a fork at an event takes the steps before it); a
 * fork's run takes the original's steps before the fork point from storage.
 * DAG mode: the plan, steps, analysis and synthesis are activities.
 */
const execute = (run: Run, turns: ReadonlyArray<Message.ChatMessage>, mode: "react" | "dag") =>
  Effect.gen(function*() {
    const { conversationId, fork, maxIterations, outputSchema, query, runId, userId } = run.payload
    const input: ReactAgent.RunInput = {
      // the query's text, then its attachments (their bytes read from the database when a request is built)
      query: RunAttachments.query(query, run.payload.attachments),
      conversationId,
      history: turns,
      ...(maxIterations !== undefined ? { maxIterations } : {}),
      ...(outputSchema !== undefined ? { output: OutputSchema.toSchema(outputSchema) } : {}),
      ...(userId !== undefined ? { userId } : {}),
      cancel: Deferred.await(run.local.cancel)
    }
    const governed = ConversationBudget.govern(
      yield* Effect.serviceOption(ConversationBudget.ConversationBudget),
      run.journal,
      run.store,
      conversationId
    )
    if (mode === "dag") {
      return yield* governed(Effect.flatMap(DagAgent.DagAgent, (dag) => dag.execute(input, run.journal)))
    }
    const agent = yield* ReactAgent.ReactAgent
    const recording = Recorder.makeRecording((entry) => {
      const { data, kind } = RunTrace.traceEntry(entry)
      return Effect.flatMap(run.journal.lastSeq, (seq) => run.trace.append(runId, kind, data, seq)).pipe(warned(run))
    })
    const prefix = fork === undefined ? undefined : RunCassette.forkPrefix(
      fork,
      yield* Effect.orDie(run.trace.entries(fork.runId)),
      yield* Effect.orDie(run.log.eventsAfter(fork.runId, 0)),
      query
    )
    // (and its stored recall when it asks the same: a fork embeds nothing for it)
    const fromStorage = prefix === undefined ?
      <A, E, R>(self: Effect.Effect<A, E, R>) => self :
      <A, E, R>(self: Effect.Effect<A, E, R>) =>
        Replay.withPrefix(prefix)(Memory.withRecorded(fork?.query === query ? prefix.memory : undefined)(self))
    return yield* governed(Recorder.withRecording(recording)(fromStorage(agent.execute(input, run.journal))))
  })

/** The workflow body of run `payload` on this process's host. */
export const body = (payload: RunPayload, host: RunHost) =>
  Effect.gen(function*() {
    const run = yield* begin(payload, host)
    // the run's attachments, recorded for its conversation (once: again on a replay changes nothing)
    if (payload.attachments !== undefined) yield* SqlAttachments.record(payload.runId, payload.attachments)
    yield* resume(run)
    const turns = yield* history(run)
    yield* recordInput(run, turns)
    return yield* execute(run, turns, yield* route(run))
  }).pipe(Effect.scoped)
