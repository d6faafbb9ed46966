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
import * as Workflow from "@effect/workflow/Workflow"
import type { WorkflowEngine } from "@effect/workflow/WorkflowEngine"
import type * as Config from "effect/Config"
import type * as ConfigError from "effect/ConfigError"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as CallClaim from "./internal/callClaim.js"
import * as Embedded from "./internal/durableRuns.js"
import { shutdownLine } from "./internal/durableRuns.js"
import * as RunHostModule from "./internal/runHost.js"
import * as RunWorkflow from "./internal/runWorkflow.js"
import * as ServerConfig from "./ServerConfig.js"

/**
 * What starts a run (stored with the workflow execution).
 *
 * @since 0.1.0
 * @category models
 */
export const RunPayload = RunWorkflow.RunPayload
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
 * `ServerConfig.maxActiveRuns` runs at once with `runQueue` more waiting.
 *
 * @since 0.1.0
 * @category layers
 */
export const layerHost: Layer.Layer<RunHost | CallClaim.ToolCalls, never, ServerConfig.ServerConfig> = Layer
  .unwrapScoped(
    Effect.flatMap(ServerConfig.ServerConfig, (settings) =>
      Effect.map(
        RunHostModule.make(crypto.randomUUID(), { maxActive: settings.maxActiveRuns, queue: settings.runQueue }),
        (host) => Layer.merge(Layer.succeed(RunHost, host), CallClaim.layer(host.bootId))
      ))
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
export const layerShutdownGrace: Layer.Layer<never, never, RunHost | CallClaim.ToolCalls | ServerConfig.ServerConfig> =
  Layer.scopedDiscard(
    Effect.gen(function*() {
      const host = yield* RunHost
      const calls = yield* CallClaim.ToolCalls
      const { shutdownGraceMs } = yield* ServerConfig.ServerConfig
      // the calls still running at the end of the grace are cut here, before the services they use stop
      yield* Effect.addFinalizer(() =>
        Effect.zipRight(
          // what is being drained, said when the stop begins (SIGTERM logged nothing until the grace was over)
          Effect.flatMap(host.admission, (admission) => Effect.logInfo(stoppingLine(admission, shutdownGraceMs))),
          Effect.flatMap(host.drain(shutdownGraceMs), ({ inFlight, left, waitedMs }) =>
            Effect.zipRight(
              calls.stopAll,
              inFlight === 0 ? Effect.void : Effect.logInfo(shutdownLine(inFlight, left, waitedMs, shutdownGraceMs))
            ))
        )
      )
    })
  )

const stoppingLine = ({ active, waiting }: { readonly active: number; readonly waiting: number }, graceMs: number) =>
  `stopping: draining ${active} run${active === 1 ? "" : "s"} executing here (${waiting} waiting for a place): ` +
  `tool calls in flight get ${graceMs} ms to finish; the runs stay stored and resume on the next start`

/**
 * Registers the run workflow (every instance registers it: which runner
 * executes a run depends on its shard, not on who started it).
 *
 * @since 0.1.0
 * @category layers
 */
export const layerWorkflow = AgentRun.toLayer((payload) =>
  Effect.flatMap(RunHost, (host) => RunWorkflow.body(payload, host))
)

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
