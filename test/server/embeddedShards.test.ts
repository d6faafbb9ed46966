/**
 * The embedded workflow engine runs one shard (`DurableRuns.layerEngineEmbedded`);
 * before, it ran the cluster's default 300, and a stored message is polled by
 * the shard id written in its row. A SQLite file left by the old engine with a
 * run in flight must resume under the new one: a real file, the old engine
 * (300 shards, as it was configured) stopped while an activity of a workflow
 * runs, then the new engine on the same file must finish that workflow.
 */
import * as ClusterWorkflowEngine from "@effect/cluster/ClusterWorkflowEngine"
import * as SingleRunner from "@effect/cluster/SingleRunner"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Activity from "@effect/workflow/Activity"
import * as Workflow from "@effect/workflow/Workflow"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import * as Scope from "effect/Scope"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Database from "../../src/server/Database.js"
import * as DurableRuns from "../../src/server/DurableRuns.js"

const Job = Workflow.make({
  name: "embeddedShards/Job",
  payload: { id: Schema.String },
  success: Schema.String,
  idempotencyKey: (p) => p.id
})

/** The workflow: one activity whose behaviour the engine's process decides. */
const jobLayer = (step: Effect.Effect<string>) =>
  Job.toLayer(({ id }) =>
    Activity.make({ name: "step", success: Schema.String, execute: step }).pipe(Effect.map((s) => `${id}:${s}`))
  )

/** The engine as it was configured before: one runner, the cluster's default shard count. */
const oldEngine = ClusterWorkflowEngine.layer.pipe(
  Layer.provide(SingleRunner.layer({
    runnerStorage: "memory",
    shardingConfig: { entityTerminationTimeout: "1 second", entityMessagePollInterval: "1 second" }
  }))
)

describe("embedded engine: one shard", () => {
  it.live(
    "a run left in flight on a file written with 300 shards resumes under one shard",
    () =>
      Effect.gen(function*() {
        const filename = join(mkdtempSync(join(tmpdir(), "embedded-shards-")), "runs.sqlite")
        const database = Database.layer({ _tag: "Sqlite", filename })

        // the old engine: the activity starts and never ends; the process stops meanwhile
        const started = yield* Deferred.make<void>()
        const first = yield* Scope.make()
        const oldContext = yield* Layer.buildWithScope(
          jobLayer(Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)).pipe(
            Layer.provideMerge(oldEngine),
            Layer.provideMerge(database),
            Layer.orDie
          ),
          first
        )
        yield* Effect.forkDaemon(Effect.provide(Job.execute({ id: "job-7" }), oldContext))
        yield* Deferred.await(started).pipe(
          Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => "the activity never started" })
        )
        const shards = yield* Effect.provide(
          Effect.flatMap(
            SqlClient.SqlClient,
            (sql) => sql<{ shard_id: string }>`SELECT DISTINCT shard_id FROM cluster_messages`
          ),
          oldContext
        )
        assert.isTrue(
          shards.some((r) => r.shard_id !== "default:1"),
          `stored under another shard: ${JSON.stringify(shards)}`
        )
        yield* Scope.close(first, Exit.void)

        // the new engine on the same file: the workflow resumes by itself and finishes
        const second = yield* Scope.make()
        const context = yield* Layer.buildWithScope(
          jobLayer(Effect.succeed("resumed")).pipe(
            Layer.provideMerge(DurableRuns.layerEngineEmbedded),
            Layer.provideMerge(database),
            Layer.orDie
          ),
          second
        )
        const executionId = yield* Job.executionId({ id: "job-7" })
        // nobody executes it again: the engine must find the stored request by polling its shard
        const result = yield* Effect.provide(Job.poll(executionId), context).pipe(
          Effect.filterOrFail((r) => r !== undefined && r._tag === "Complete", () => "not complete yet"),
          Effect.retry({ schedule: Schedule.spaced("200 millis"), times: 75 }),
          Effect.orElseSucceed(() => undefined)
        )
        yield* Scope.close(second, Exit.void)
        assert.isDefined(result, "the run left in flight never finished under the new engine")
        if (result?._tag === "Complete") assert.deepStrictEqual(result.exit, Exit.succeed("job-7:resumed"))
      }),
    60_000
  )
})
