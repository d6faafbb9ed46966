// Effect 4 (effect + @effect/sql-sqlite-node 4.0.0-beta.102, node:sqlite): the same engine as alone3.mjs —
// SingleRunner (runnerStorage "memory", SQL message storage), shardsPerGroup 1, entityTerminationTimeout 1 s,
// entityMessagePollInterval 1 s, the reshard step; SqliteClient.layer (one connection, WAL) + PRAGMA synchronous = NORMAL.
// EFFECT_ROOT: the dir whose node_modules holds effect and the driver (see README.md: effect 4.0.0-beta.102,
// or effect 4.1.5, which needs EFFECT_UNSTABLE_SHIM=1 + --import ./register.mjs for the beta driver).
// The driver uses node:sqlite: Node 22.5 or later (measured on Node 24).
import { createHash, randomBytes } from "node:crypto"
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
const ROOT = process.env.EFFECT_ROOT ?? "/tmp/effect4-b102"
const E = `${ROOT}/node_modules/effect`
const effectVersion = JSON.parse(readFileSync(`${E}/package.json`, "utf8")).version
const U = existsSync(`${E}/dist/unstable`) ? `${E}/dist/unstable` : `${E}/dist` // 4.0 betas: effect/unstable/*
const Effect = await import(`${E}/dist/Effect.js`)
const Layer = await import(`${E}/dist/Layer.js`)
const Schema = await import(`${E}/dist/Schema.js`)
const References = await import(`${E}/dist/References.js`)
const ClusterWorkflowEngine = await import(`${U}/cluster/ClusterWorkflowEngine.js`)
const SingleRunner = await import(`${U}/cluster/SingleRunner.js`)
const Activity = await import(`${U}/workflow/Activity.js`)
const Workflow = await import(`${U}/workflow/Workflow.js`)
const SqlClient = await import(`${U}/sql/SqlClient.js`)
const SqliteClient = await import(`${ROOT}/node_modules/@effect/sql-sqlite-node/dist/SqliteClient.js`)
// SingleRunner's SQL message storage hashes message ids over 255 chars: Crypto (4.0 betas) or Digest (4.1)
const hashLayer = existsSync(`${E}/dist/crypto/Digest.js`)
  ? (await import(`${E}/dist/crypto/Digest.js`)).layerWebCrypto
  : await import(`${E}/dist/Crypto.js`).then((Crypto) =>
    Layer.succeed(
      Crypto.Crypto,
      Crypto.make({
        randomBytes: (n) => new Uint8Array(randomBytes(n)),
        digest: (alg, data) =>
          Effect.succeed(new Uint8Array(createHash(alg.replace("-", "").toLowerCase()).update(data).digest()))
      })
    )
  )

const ACTIVITIES = Number(process.env.ENGINE_ACTIVITIES ?? 300)
const REPS = Number(process.env.REPS ?? 7)

const Sequential = Workflow.make("sequential", {
  payload: { id: Schema.String },
  success: Schema.Number,
  idempotencyKey: (p) => p.id
})
const workflows = Sequential.toLayer(() =>
  Effect.reduce(
    Array.from({ length: ACTIVITIES }, (_, i) => i),
    () => 0,
    (sum, i) =>
      Effect.map(Activity.make({ name: `a/${i}`, success: Schema.Number, execute: Effect.succeed(i) }), (n) => sum + n)
  )
)

const reshard = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql`SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = 'cluster_messages'`.pipe(
    Effect.flatMap((rows) =>
      Number(rows[0]?.n ?? 0) === 0 ? Effect.void : sql`UPDATE cluster_messages SET shard_id = 'default:1'
        WHERE shard_id LIKE 'default:%' AND shard_id <> 'default:1'`
    ),
    Effect.asVoid
  )
})
const engine = ClusterWorkflowEngine.layer.pipe(
  Layer.provide(SingleRunner.layer({
    runnerStorage: "memory",
    shardingConfig: { shardsPerGroup: 1, entityTerminationTimeout: "1 second", entityMessagePollInterval: "1 second" }
  })),
  Layer.provide(Layer.effectDiscard(reshard)),
  Layer.provide(hashLayer)
)
const dir = mkdtempSync(join(tmpdir(), "e4eng-alone4-"))
const pragma = Layer.effectDiscard(Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql.unsafe(`PRAGMA synchronous = NORMAL`)
}))
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
      effect: effectVersion,
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
  Effect.provideService(References.MinimumLogLevel, "Error"),
  Effect.ensuring(Effect.sync(() => rmSync(dir, { recursive: true, force: true })))
)).then(() => process.exit(0), (e) => {
  console.error(e)
  process.exit(1)
})
