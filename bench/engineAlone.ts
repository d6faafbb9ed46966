/**
 * The workflow engine alone (`@effect/workflow` on `@effect/cluster`'s
 * `SingleRunner`), without the agent or the server: on a SQLite file with the
 * server's own embedded engine (`DurableRuns.layerEngineEmbedded`: one shard,
 * the same pragma), or on PostgreSQL when `ENGINE_DATABASE_URL` is set
 * (`SingleRunner`, the cluster's default 300 shards, as the server's shared
 * cluster has; no socket between runners). What one
 * trivial activity costs (wall and CPU, a workflow of 300 sequential activities)
 * and the heap one workflow holds while it waits (500 of them), parked in an
 * activity in flight and parked in its own body, outside any activity. Run as a
 * child process (`--expose-gc`) by bench/durableStep.ts; prints one JSON line.
 *
 * @since 0.1.0
 */
import * as ClusterWorkflowEngine from "@effect/cluster/ClusterWorkflowEngine"
import * as SingleRunner from "@effect/cluster/SingleRunner"
import * as Activity from "@effect/workflow/Activity"
import * as Workflow from "@effect/workflow/Workflow"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Database from "../src/server/Database.js"
import * as DurableRuns from "../src/server/DurableRuns.js"

const ACTIVITIES = Number(process.env.ENGINE_ACTIVITIES ?? 300)
const PARKED = 500

const Sequential = Workflow.make({
  name: "sequential",
  payload: { id: Schema.String },
  success: Schema.Number,
  idempotencyKey: (p) => p.id
})
const Parked = Workflow.make({
  name: "parked",
  payload: { id: Schema.String },
  success: Schema.Void,
  idempotencyKey: (p) => p.id
})
const ParkedInBody = Workflow.make({
  name: "parkedInBody",
  payload: { id: Schema.String },
  success: Schema.Void,
  idempotencyKey: (p) => p.id
})

let parked = 0
const workflows = Layer.mergeAll(
  Sequential.toLayer(() =>
    Effect.reduce(
      Array.from({ length: ACTIVITIES }, (_, i) => i),
      0,
      (sum, i) =>
        Effect.map(
          Activity.make({ name: `a/${i}`, success: Schema.Number, execute: Effect.succeed(i) }),
          (n) => sum + n
        )
    )
  ),
  Parked.toLayer(() =>
    Effect.zipRight(
      Activity.make({ name: "first", success: Schema.Void, execute: Effect.void }),
      Activity.make({
        name: "park",
        success: Schema.Void,
        execute: Effect.zipRight(Effect.sync(() => parked++), Effect.never)
      })
    )
  ),
  ParkedInBody.toLayer(() =>
    Effect.zipRight(
      Activity.make({ name: "first", success: Schema.Void, execute: Effect.void }),
      Effect.zipRight(Effect.sync(() => parked++), Effect.never)
    )
  )
)

const dir = mkdtempSync(join(tmpdir(), "react-engine-alone-"))
const pgUrl = process.env.ENGINE_DATABASE_URL
const layer = pgUrl === undefined || pgUrl === ""
  ? workflows.pipe(
    Layer.provideMerge(DurableRuns.layerEngineEmbedded),
    Layer.provide(Database.layer({ _tag: "Sqlite", filename: join(dir, "engine.sqlite") }))
  )
  : workflows.pipe(
    Layer.provideMerge(
      ClusterWorkflowEngine.layer.pipe(Layer.provide(SingleRunner.layer({ runnerStorage: "memory" })))
    ),
    Layer.provide(Database.layer({ _tag: "Postgres", url: Redacted.make(pgUrl) }))
  )
const database = pgUrl === undefined || pgUrl === "" ? "SQLite" : "PostgreSQL"

const heapAfterGc = () => {
  const gc = (globalThis as { gc?: () => void }).gc
  gc?.()
  gc?.()
  return process.memoryUsage().heapUsed
}

const program = Effect.gen(function*() {
  yield* Sequential.execute({ id: "warm-up" })
  const wall = performance.now()
  const cpu = process.cpuUsage()
  yield* Sequential.execute({ id: "measured" })
  const used = process.cpuUsage(cpu)
  const activityWallMs = (performance.now() - wall) / ACTIVITIES
  const activityCpuMs = (used.user + used.system) / 1000 / ACTIVITIES
  const park = <R>(start: (i: number) => Effect.Effect<unknown, never, R>) =>
    Effect.gen(function*() {
      parked = 0
      const before = heapAfterGc()
      for (let i = 0; i < PARKED; i++) yield* start(i)
      while (parked < PARKED) yield* Effect.sleep("100 millis")
      yield* Effect.sleep("1 second")
      return (heapAfterGc() - before) / PARKED
    })
  const parkedBytes = yield* park((i) => Parked.execute({ id: `p${i}` }, { discard: true }))
  const parkedInBodyBytes = yield* park((i) => ParkedInBody.execute({ id: `b${i}` }, { discard: true }))
  process.stdout.write(
    `${
      JSON.stringify({
        database,
        activityWallMs,
        activityCpuMs,
        parkedBytes,
        parkedInBodyBytes,
        activities: ACTIVITIES,
        parked: PARKED
      })
    }\n`
  )
})

Effect.runPromise(program.pipe(
  Effect.provide(layer),
  Effect.scoped,
  Effect.provide(Logger.minimumLogLevel(LogLevel.Error)),
  Effect.ensuring(Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
)).then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
