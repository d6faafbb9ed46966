/**
 * Every server run is a durable workflow (`@effect/workflow` on
 * `@effect/cluster`) keyed by its run id. The run is the agent's own code path
 * (`ReactAgent.execute`, or `DagAgent.execute` in DAG mode) through a journal
 * whose activities are workflow activities: each loop LLM reply, tool outcome,
 * tool selection, guard check, interrupt drain and the synthesized answer (in
 * DAG mode also the plan, each step's run and result, each dispatch point and
 * the analysis) is stored as it happens, so a run
 * whose process died continues — on the same file after a restart, or on
 * another instance sharing PostgreSQL — without calling the model or a
 * completed tool again. Its events are stored in the run log with their ids.
 *
 * The engine runs embedded (one runner, `SingleRunner`, on the SQLite file of
 * the conversations) or as a socket runner of a cluster (`DATABASE_URL` set:
 * PostgreSQL holds the messages, the runners and the shard locks;
 * `CLUSTER_HOST` / `CLUSTER_PORT` is this instance's runner address).
 *
 * @since 0.1.0
 */
import * as ClusterWorkflowEngine from "@effect/cluster/ClusterWorkflowEngine"
import * as RunnerAddress from "@effect/cluster/RunnerAddress"
import * as SingleRunner from "@effect/cluster/SingleRunner"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import type * as SqlClient from "@effect/sql/SqlClient"
import type { SqlError } from "@effect/sql/SqlError"
import * as Activity from "@effect/workflow/Activity"
import * as Workflow from "@effect/workflow/Workflow"
import type { WorkflowEngine, WorkflowInstance } from "@effect/workflow/WorkflowEngine"
import * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as ContextGuard from "../ContextGuard.js"
import * as DagAgent from "../DagAgent.js"
import * as Message from "../Message.js"
import * as Telemetry from "../Telemetry.js"
import * as ReactAgent from "../ReactAgent.js"
import * as Recorder from "../Recorder.js"
import * as Replay from "../Replay.js"
import type { RunEvent } from "../RunEvent.js"
import type { EmitOptions } from "../RunJournal.js"
import * as CassetteRoutes from "./CassetteRoutes.js"
import * as ConversationBudget from "./ConversationBudget.js"
import * as ConversationStore from "./ConversationStore.js"
import * as CallClaim from "./internal/callClaim.js"
import * as DurableJournal from "./internal/durableJournal.js"
import * as Embedded from "./internal/durableRuns.js"
import { endLine, shutdownLine } from "./internal/durableRuns.js"
import * as RunHostModule from "./internal/runHost.js"
import * as Transcript from "./internal/transcript.js"
import * as RunLog from "./RunLog.js"
import * as RunTrace from "./RunTrace.js"
import * as ServerConfig from "./ServerConfig.js"

/**
 * What starts a run (stored with the workflow execution).
 *
 * @since 0.1.0
 * @category models
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
  fork: Schema.optional(CassetteRoutes.ForkPoint),
  /**
   * The conversation's earlier turns, read when the run was started (its
   * conversation already held by it): stored with the run, so a replay reads
   * the same list without a stored step of its own. Absent in runs started by
   * earlier versions (the `history` activity reads them).
   */
  history: Schema.optional(Schema.Array(Message.ChatMessage))
})
/**
 * @since 0.1.0
 * @category models
 */
export type RunPayload = typeof RunPayload.Type

/**
 * The workflow of one server run.
 *
 * @since 0.1.0
 * @category workflows
 */
export const AgentRun = Workflow.make({
  name: "effect-react-engine/AgentRun",
  payload: RunPayload,
  idempotencyKey: (payload) => payload.runId
})

/**
 * This process's runs and live listeners (see `internal/runHost`).
 *
 * @since 0.1.0
 * @category Context
 */
export class RunHost extends Context.Tag("effect-react-engine/RunHost")<RunHost, RunHostModule.RunHost>() {}

/**
 * A fresh host with a new boot id (one per process), admitting at most
 * `ServerConfig.maxActiveRuns` runs at once with `runQueue` more waiting, and
 * the tool calls executing in this process (`internal/callClaim`; stopped when
 * the layer is released).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerHost: Layer.Layer<RunHost | CallClaim.ToolCalls, never, ServerConfig.ServerConfig> = Layer.unwrapEffect(
  Effect.map(ServerConfig.ServerConfig, (settings) => {
    const host = RunHostModule.make(crypto.randomUUID(), { maxActive: settings.maxActiveRuns, queue: settings.runQueue })
    return Layer.merge(Layer.succeed(RunHost, host), CallClaim.layer(host.bootId))
  })
)

/**
 * The shutdown grace: when its scope closes (SIGTERM), no activity of a run
 * starts any more in this process and the tool calls in flight get
 * `ServerConfig.shutdownGraceMs` to finish and store their outcomes, so that
 * after the restart the model is told what they did. A call still running
 * once the grace is over is cut by the shutdown: after the restart it is
 * answered `interrupted by a server restart; not retried` (or run again, if
 * the tool is idempotent), as after a crash. The server mounts it between the
 * routes and the run registry: no request is taken meanwhile, open SSE
 * streams stay open.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerShutdownGrace: Layer.Layer<never, never, RunHost | CallClaim.ToolCalls | ServerConfig.ServerConfig> = Layer.scopedDiscard(
  Effect.gen(function*() {
    const host = yield* RunHost
    const calls = yield* CallClaim.ToolCalls
    const { shutdownGraceMs } = yield* ServerConfig.ServerConfig
    // the calls still running at the end of the grace are cut here, before the services they use stop
    yield* Effect.addFinalizer(() =>
      Effect.flatMap(host.drain(shutdownGraceMs), ({ inFlight, left, waitedMs }) =>
        Effect.zipRight(calls.stopAll, inFlight === 0 ? Effect.void : Effect.logInfo(shutdownLine(inFlight, left, waitedMs, shutdownGraceMs))))
    )
  })
)

const StoredHistory = Schema.Array(Message.ChatMessage)

const body = (payload: RunPayload) =>
  Effect.gen(function*() {
    const { conversationId, query, runId } = payload
    const host = yield* RunHost
    const calls = yield* CallClaim.ToolCalls
    const log = yield* RunLog.RunLog
    const store = yield* ConversationStore.ConversationStore
    const guard = yield* ContextGuard.ContextGuard
    const agent = yield* ReactAgent.ReactAgent
    const dag = yield* DagAgent.DagAgent
    const workflow = yield* Effect.context<WorkflowEngine | WorkflowInstance>()
    const local = yield* host.register(runId, conversationId)
    const row = yield* Effect.flatMap(log.run(runId), Option.match({
      onNone: () => Effect.dieMessage(`run ${runId} is not in the run log`),
      onSome: Effect.succeed
    })).pipe(Effect.orDie)
    const stored = yield* Effect.orDie(log.storedKeys(runId))
    // what the run's cassette is built from (GET …/runs/:run_id/cassette): its model calls, tool
    // outcomes and drains, stored as they happen; a failure to store one is logged, never fatal
    const trace = yield* RunTrace.RunTrace
    const traced = (kind: string, data: unknown) =>
      trace.append(runId, kind, data).pipe(Effect.catchAll((error) => Effect.logWarning(`run ${runId}: ${error.message}`)))
    // each step is stored with the id of the run's last event so far: a fork at an event takes the steps before it
    const recording = Recorder.makeRecording((entry) => {
      const { data, kind } = RunTrace.traceEntry(entry)
      return trace.append(runId, kind, data, durable.lastSeq()).pipe(
        Effect.catchAll((error) => Effect.logWarning(`run ${runId}: ${error.message}`))
      )
    })

    // what the stored turn says: the answer the user saw, whether the run failed
    let streamed = ""
    let failure: string | undefined
    let retries = 0
    const observe = (event: RunEvent) => {
      if (event._tag === "AnswerDelta") streamed += event.content
      else if (event._tag === "AnswerReset") streamed = ""
      else if (event._tag === "RunFailed") failure = event.message
      else if (event._tag === "LlmRetry") retries++
    }
    let cancelled = false

    // one stored step ends the run: its turn stored, the conversation free again before its client
    // reads `done` (each part idempotent: a re-run after a crash stores the turn once)
    const persist = (done: Extract<RunEvent, { _tag: "Done" }>) =>
      Effect.zipRight(
        Effect.map(Deferred.isDone(local.cancel), (isDone) => {
          cancelled = isDone
        }),
        journalActivity("end", () =>
          store.appendTurn({
            conversationId,
            query,
            answer: done.answer === "" ? streamed : done.answer,
            messages: Transcript.loopMessages(done.messages ?? [], query),
            usage: done.usage,
            runId,
            status: cancelled ? "cancelled" : failure !== undefined ? "failed" : "completed"
          }).pipe(
            Effect.catchAll((error) => Effect.logError(`run ${runId}: ${error.message}`)),
            Effect.zipRight(Effect.orDie(log.finish(runId)))
          ))
      ).pipe(
        Effect.zipRight(Effect.suspend(() => {
          const status = cancelled ? "cancelled" : failure !== undefined ? "failed" : "done"
          const line = endLine(runId, conversationId, status, done, retries, (Date.now() - row.startedAt) / 1000)
          return status === "failed" ? Effect.logWarning(`${line}: ${failure}`) : Effect.logInfo(line)
        }))
      )

    const journalActivity = (name: string, execute: () => Effect.Effect<void>) =>
      Effect.provide(Activity.make({ name, execute: Effect.suspend(execute) }), workflow)

    const durable = DurableJournal.make({
      runId,
      workflow,
      host,
      calls,
      log,
      local,
      stored,
      rewrite: (event, data) =>
        event._tag === "Done"
          ? {
            ...data,
            answer: event.answer === "" ? streamed : event.answer,
            elapsed: (Date.now() - row.startedAt) / 1000,
            conversation_id: conversationId,
            run_id: runId,
            ...(cancelled ? { cancelled: true } : {})
          }
          : data,
      beforeDone: persist
    })
    const journal = {
      ...durable,
      emit: (event: RunEvent, options?: EmitOptions) => Effect.zipRight(Effect.sync(() => observe(event)), durable.emit(event, options))
    }

    // a run found half done was cut by a crash (or moved here from a dead instance)
    if (stored.keys.size > 0) {
      yield* durable.emitOnce(`resumed@${host.bootId}`, { _tag: "Resumed" })
      // a fresh detach grace: its clients are reconnecting
      yield* Effect.orDie(log.touch(runId, Date.now()))
    }

    // the history that came with the run and fits as it is needs no stored step; one the guard may
    // compact (with a model call) is compacted in the `history` activity
    const started = payload.history
    const fits = started !== undefined && (started.length === 0 || guard.fits?.(started, { hint: "general" }) === true)
    const history = fits ? started : yield* journal.activity({
      name: "history",
      success: StoredHistory,
      execute: () =>
        (started !== undefined ? Effect.succeed(started) : store.history(conversationId)).pipe(
          Effect.flatMap((turns) =>
            turns.length === 0 ? Effect.succeed(turns) : guard.checkAndCompact(turns, { hint: "general" }).pipe(
              Effect.tap((checked) =>
                checked.compacted
                  ? journal.emit({ _tag: "Compact", original_messages: checked.originalMessages, kept_messages: checked.keptMessages })
                  : Effect.void
              ),
              Effect.map((checked) => checked.messages)
            )
          ),
          Effect.catchAll((error) =>
            Effect.as(Effect.logError(`run ${runId}: ${error.message}; continuing without history`), [])
          )
        )
    })
    if (stored.keys.size === 0) {
      yield* traced("input", { query, history, ...(payload.maxIterations !== undefined ? { max_iterations: payload.maxIterations } : {}) })
    }
    const input: ReactAgent.RunInput = {
      query,
      conversationId,
      history,
      ...(payload.maxIterations !== undefined ? { maxIterations: payload.maxIterations } : {}),
      cancel: Deferred.await(local.cancel)
    }
    const mode = payload.mode === "auto"
      ? yield* journal.activity({
        name: "route",
        success: Schema.Literal("react", "dag"),
        execute: () => Effect.map(dag.route(query), (routed) => routed.mode)
      })
      : payload.mode
    // REACT_CONVERSATION_BUDGET_USD: the run may spend what the conversation's earlier runs left
    const governed = ConversationBudget.govern(yield* Effect.serviceOption(ConversationBudget.ConversationBudget), journal, store, conversationId)
    // a fork: the original run's steps before the fork point come from storage, the rest runs live
    const fromStorage = payload.fork === undefined ? <A, E, R>(self: Effect.Effect<A, E, R>) => self : Replay.withPrefix(
      CassetteRoutes.forkPrefix(payload.fork, yield* Effect.orDie(trace.entries(payload.fork.runId)),
        yield* Effect.orDie(log.eventsAfter(payload.fork.runId, 0)), query)
    )
    if (mode === "react") return yield* governed(Recorder.withRecording(recording)(fromStorage(agent.execute(input, journal))))
    // DAG mode: the plan, steps, analysis and synthesis are activities; step events are keyed by step
    return yield* governed(dag.execute(input, {
      ...journal,
      emitOnce: (key, event) => Effect.zipRight(Effect.sync(() => observe(event)), durable.emitOnce(key, event))
    }))
  }).pipe(Effect.scoped)

/**
 * Registers the run workflow (every instance registers it: which runner
 * executes a run depends on its shard, not on who started it).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWorkflow = AgentRun.toLayer(body)

/**
 * The cluster's settings for several instances.
 *
 * @since 0.1.0
 * @category models
 */
export interface ClusterSettings {
  /** This instance's runner address (other instances connect to it). */
  readonly host: string
  readonly port: number
  /** A dead instance's shards are taken over after this long. */
  readonly shardLockExpiration: Duration.Duration
  readonly shardLockRefresh: Duration.Duration
}

/**
 * `CLUSTER_HOST` (127.0.0.1), `CLUSTER_PORT` (34431),
 * `CLUSTER_SHARD_LOCK_EXPIRATION_MS` (10000), `CLUSTER_SHARD_LOCK_REFRESH_MS`
 * (3000; below the expiration).
 *
 * @since 0.1.0
 * @category config
 */
export const clusterConfig: Config.Config<ClusterSettings> = Embedded.clusterConfig

/**
 * The workflow engine embedded in this process: one runner over the
 * `SqlClient` in context (its messages and replies stored there).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerEngineEmbedded: Layer.Layer<WorkflowEngine, ConfigError.ConfigError | SqlError, SqlClient.SqlClient> =
  ClusterWorkflowEngine.layer.pipe(
    Layer.provide(SingleRunner.layer({
      runnerStorage: "memory",
      shardingConfig: {
        // one runner needs one shard: the cluster lists every shard of the runner as a literal
        // in the query it sends (unprepared) for each new message — 300 by default
        shardsPerGroup: Embedded.shards,
        // SIGTERM waits this long for running workflows to stop (default 15 s); they resume on restart
        entityTerminationTimeout: "1 second",
        // how soon a run left by a dead process is picked up again (default 10 s)
        entityMessagePollInterval: "1 second"
      }
    })),
    Layer.provide(Layer.effectDiscard(Embedded.reshard))
  )

/**
 * The workflow engine as a socket runner of a cluster sharing the database in
 * context (PostgreSQL).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerEngineCluster = (
  settings: ClusterSettings
): Layer.Layer<WorkflowEngine, ConfigError.ConfigError | Error, SqlClient.SqlClient> =>
  ClusterWorkflowEngine.layer.pipe(
    Layer.provide(NodeClusterSocket.layer({
      storage: "sql",
      shardingConfig: {
        runnerAddress: Option.some(RunnerAddress.make(settings.host, settings.port)),
        shardLockExpiration: settings.shardLockExpiration,
        shardLockRefreshInterval: settings.shardLockRefresh,
        refreshAssignmentsInterval: "500 millis",
        entityTerminationTimeout: "1 second",
        entityMessagePollInterval: "1 second"
      }
    }))
  ) as Layer.Layer<WorkflowEngine, ConfigError.ConfigError | Error, SqlClient.SqlClient>
