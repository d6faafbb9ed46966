// Effect 3 (the project's node_modules: effect 3.22.4, @effect/cluster 0.60.2, @effect/workflow 0.19.1,
// @effect/sql-sqlite-node 0.53.0 / better-sqlite3): the engine of DurableRuns.layerEngineEmbedded rebuilt
// here (SingleRunner, runnerStorage "memory", SQL message storage, shardsPerGroup 1,
// entityTerminationTimeout 1 s, entityMessagePollInterval 1 s, the reshard step) on
// Database.layer's SQLite (SqliteClient.layer: one connection, WAL; PRAGMA synchronous = NORMAL).
// A workflow of ACTIVITIES sequential trivial activities: one warm-up, then REPS measured runs.
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
const M = new URL("../../node_modules", import.meta.url).href
const imp = (pkg, mod) => import(`${M}/${pkg}/dist/esm/${mod}.js`)
const Effect = await imp("effect", "Effect")
const Layer = await imp("effect", "Layer")
const Logger = await imp("effect", "Logger")
const LogLevel = await imp("effect", "LogLevel")
const Schema = await imp("effect", "Schema")
const ClusterWorkflowEngine = await imp("@effect/cluster", "ClusterWorkflowEngine")
const SingleRunner = await imp("@effect/cluster", "SingleRunner")
const Activity = await imp("@effect/workflow", "Activity")
const Workflow = await imp("@effect/workflow", "Workflow")
const SqlClient = await imp("@effect/sql", "SqlClient")
const SqliteClient = await imp("@effect/sql-sqlite-node", "SqliteClient")

const ACTIVITIES = Number(process.env.ENGINE_ACTIVITIES ?? 300)
const REPS = Number(process.env.REPS ?? 7)

const Sequential = Workflow.make({
  name: "sequential",
  payload: { id: Schema.String },
  success: Schema.Number,
  idempotencyKey: (p) => p.id
})
const workflows = Sequential.toLayer(() =>
  Effect.reduce(
    Array.from({ length: ACTIVITIES }, (_, i) => i),
    0,
    (sum, i) =>
      Effect.map(Activity.make({ name: `a/${i}`, success: Schema.Number, execute: Effect.succeed(i) }), (n) => sum + n)
  )
)

// DurableRuns.layerEngineEmbedded
const reshard = Effect.flatMap(
  SqlClient.SqlClient,
  (sql) =>
    sql`SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'cluster_messages'`.pipe(
      Effect.flatMap((rows) =>
        Number(rows[0]?.n ?? 0) === 0 ? Effect.void : sql`UPDATE cluster_messages SET shard_id = 'default:1'
        WHERE shard_id LIKE 'default:%' AND shard_id <> 'default:1'`
      ),
      Effect.asVoid
    )
)
const engine = ClusterWorkflowEngine.layer.pipe(
  Layer.provide(SingleRunner.layer({
    runnerStorage: "memory",
    shardingConfig: { shardsPerGroup: 1, entityTerminationTimeout: "1 second", entityMessagePollInterval: "1 second" }
  })),
  Layer.provide(Layer.effectDiscard(reshard))
)
// Database.layer({ _tag: "Sqlite", filename })
const dir = mkdtempSync(join(tmpdir(), "e4eng-alone3-"))
const pragma = Layer.effectDiscard(
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`PRAGMA synchronous = NORMAL`))
)
const database = Layer.provideMerge(pragma, SqliteClient.layer({ filename: join(dir, "engine.sqlite") }))
const layer = workflows.pipe(Layer.provideMerge(engine), Layer.provideMerge(database))

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2
}
const program = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [{ journal_mode }] = yield* sql.unsafe("PRAGMA journal_mode")
  const [{ synchronous }] = yield* sql.unsafe("PRAGMA synchronous")
  const [{ v }] = yield* sql.unsafe("SELECT sqlite_version() AS v")
  yield* Sequential.execute({ id: "warm-up" })
  const wall = [], cpu = []
  for (let r = 0; r < REPS; r++) {
    const w = performance.now(), c = process.cpuUsage()
    const sum = yield* Sequential.execute({ id: `measured-${r}` })
    const used = process.cpuUsage(c)
    if (sum !== (ACTIVITIES * (ACTIVITIES - 1)) / 2) throw new Error(`bad sum ${sum}`)
    wall.push((performance.now() - w) / ACTIVITIES)
    cpu.push((used.user + used.system) / 1000 / ACTIVITIES)
  }
  const f = (x) => Math.round(x * 1000) / 1000
  const rows = {}
  for (const { name } of yield* sql.unsafe("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")) {
    const [{ n }] = yield* sql.unsafe(`SELECT COUNT(*) AS n FROM "${name}"`)
    rows[name] = Number(n)
  }
  process.stdout.write(
    JSON.stringify({
      effect: "3.22.4",
      node: process.version,
      sqlite: v,
      journal_mode,
      synchronous,
      activityWallMs: f(median(wall)),
      activityCpuMs: f(median(cpu)),
      wall: wall.map(f),
      cpu: cpu.map(f),
      activities: ACTIVITIES,
      reps: REPS,
      rows
    }) + "\n"
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
