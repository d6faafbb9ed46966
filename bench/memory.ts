/**
 * `BENCH_ONLY=memory npm run bench`: memory recall (docs/memory.md).
 *
 * - Recall latency, p50 / p99 over random queries, of the server's store
 *   (`SqlMemory.makeStore`: the index search plus reading the items) with
 *   10,000 indexed turns of one user, and 10,000 turns of 100 users (100
 *   each), on SQLite (`sqlite-vec`, cosine, the user its partition key) and
 *   PostgreSQL (the exact scan: pgvector is not installed here), at 1536
 *   dimensions (`text-embedding-3-small`) and 256 (the local embedder).
 * - The extra time a run with recall pays before its first model request, in
 *   process: the same scripted run with and without a user id, over SQLite
 *   with 10,000 turns of that user and the local embedder (an embeddings
 *   endpoint adds its own round trip on top).
 *
 * Figures go to bench/memory-results.json and into docs/benchmarks.md between
 * the `memory` markers (a full run rewrites the doc and splices them in again).
 * Absolute figures drift with the machine's load: the load is printed with them.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Stream from "effect/Stream"
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import * as os from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Embedder from "../src/Embedder.js"
import * as Hooks from "../src/Hooks.js"
import * as Interrupts from "../src/Interrupts.js"
import * as Memory from "../src/Memory.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Database from "../src/server/Database.js"
import * as SqlMemory from "../src/server/SqlMemory.js"
import * as Toolkit from "../src/Toolkit.js"
import { findPostgres, startPostgres } from "../test/utils/postgres.js"
import { quantile } from "./harness.js"

export interface RecallFigure {
  readonly database: string
  readonly index: string
  readonly layout: string
  readonly dims: number
  readonly items: number
  readonly queries: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly error?: string
}

export interface Figures {
  readonly date: string
  readonly load: ReadonlyArray<number>
  readonly recall: ReadonlyArray<RecallFigure>
  readonly firstRequest?: {
    readonly withUserMs: number
    readonly withoutUserMs: number
    readonly runs: number
    readonly items: number
  }
}

const resultsPath = fileURLToPath(new URL("./memory-results.json", import.meta.url))
const START = "<!-- memory:start -->"
const END = "<!-- memory:end -->"

const randomUnit = (dims: number): Float32Array => {
  const v = new Float32Array(dims)
  let norm = 0
  for (let i = 0; i < dims; i++) {
    const x = Math.random() - 0.5
    v[i] = x
    norm += x * x
  }
  const scale = 1 / Math.sqrt(norm)
  for (let i = 0; i < dims; i++) v[i] = (v[i] ?? 0) * scale
  return v
}

const item = (user: string, n: number): Memory.StoredItem => ({
  user_id: user,
  conversation_id: `c${n % 50}`,
  run_id: `${user}-r${n}`,
  query: `question ${n} of ${user}`,
  answer: `answer ${n}`,
  at: new Date().toISOString(),
  model: "bench",
  sha: `${user}-${n}`
})

const storeOn = (where: Database.Location) =>
  Effect.gen(function*() {
    const context = yield* Layer.build(Database.layer(where).pipe(Layer.orDie))
    return yield* Effect.provide(Effect.orDie(SqlMemory.makeStore), context)
  })

const measureRecall = (
  where: Database.Location,
  database: string,
  layout: "one user" | "100 users",
  dims: number,
  total: number,
  queries: number
): Effect.Effect<RecallFigure> =>
  Effect.scoped(Effect.gen(function*() {
    const store = yield* storeOn(where)
    const users = layout === "one user" ? ["u0"] : Array.from({ length: 100 }, (_, i) => `u${i}`)
    const per = Math.ceil(total / users.length)
    for (const user of users) {
      for (let n = 0; n < per; n++) yield* Effect.orDie(store.insert(item(user, n), randomUnit(dims), 0))
    }
    const times: Array<number> = []
    // at most 20 s of queries (at least 20): PostgreSQL's exact scan of 10,000 vectors takes seconds a query
    const until = performance.now() + 20_000
    for (let q = 0; q < queries && (q < 20 || performance.now() < until); q++) {
      const user = users[q % users.length]
      const started = performance.now()
      const hits = yield* Effect.orDie(
        store.search({
          userId: user,
          excludeConversationId: "c0",
          model: "bench",
          vector: randomUnit(dims),
          k: 4,
          minScore: -1
        })
      )
      times.push(performance.now() - started)
      if (hits.length !== 4) return yield* Effect.die(`expected 4 hits, got ${hits.length}`)
    }
    return {
      database,
      index: store.description,
      layout,
      dims,
      items: per * users.length,
      queries: times.length,
      p50Ms: quantile(times, 0.5),
      p99Ms: quantile(times, 0.99)
    }
  })).pipe(
    Effect.catchAllDefect((e) =>
      Effect.succeed({
        database,
        index: "?",
        layout,
        dims,
        items: total,
        queries,
        p50Ms: NaN,
        p99Ms: NaN,
        error: String(e)
      })
    )
  )

/** Milliseconds from the run's start to its first model request, with and without the user (who has `items` turns). */
const firstRequest = (items: number, runs: number) =>
  Effect.scoped(Effect.gen(function*() {
    const where: Database.Location = {
      _tag: "Sqlite",
      filename: join(mkdtempSync(join(os.tmpdir(), "bench-memory-")), "ttfr.sqlite")
    }
    const store = yield* storeOn(where)
    const embedder = Embedder.makeLocal()
    for (let n = 0; n < items; n++) {
      const v = Effect.runSync(embedder.embed([`question ${n} about topic ${n % 97}`])).vectors[0]
      yield* Effect.orDie(store.insert({ ...item("ada", n), model: embedder.model }, v, 0))
    }
    const memory = Memory.makeUnsafe(store, embedder)
    const one = (userId: string | undefined) =>
      Effect.gen(function*() {
        let first = 0
        const llm = ScriptedLlm.makeUnsafe(() => {
          if (first === 0) first = performance.now()
          return ScriptedLlm.text("ok")
        }, { record: false })
        const layer = ReactAgent.layer({ synthesis: "auto" }).pipe(
          Layer.provideMerge(
            Layer.mergeAll(
              llm.layer,
              Toolkit.layerNoop,
              Hooks.layerNoop,
              ContextGuard.layer(),
              Interrupts.layerMemory,
              Layer.succeed(Memory.Memory, memory)
            )
          ),
          Layer.orDie
        )
        const started = performance.now()
        yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) =>
          Stream.runDrain(
            agent.run({
              query: `what about topic ${Math.floor(Math.random() * 97)}?`,
              conversationId: `x${Math.random()}`,
              ...(userId ? { userId } : {})
            })
          )).pipe(Effect.provide(layer))
        return first - started
      })
    const withUser: Array<number> = []
    const without: Array<number> = []
    for (let i = 0; i < runs; i++) {
      withUser.push(yield* one("ada"))
      without.push(yield* one(undefined))
    }
    return { withUserMs: quantile(withUser, 0.5), withoutUserMs: quantile(without, 0.5), runs, items }
  }))

export const run = async (quick: boolean): Promise<Figures> => {
  const total = quick ? 2_000 : 10_000
  const queries = quick ? 50 : 200
  const sqlite = (): Database.Location => ({
    _tag: "Sqlite",
    filename: join(mkdtempSync(join(os.tmpdir(), "bench-memory-")), "recall.sqlite")
  })
  const recall: Array<RecallFigure> = []
  for (const dims of [1536, 256]) {
    for (const layout of ["one user", "100 users"] as const) {
      recall.push(await Effect.runPromise(measureRecall(sqlite(), "SQLite", layout, dims, total, queries)))
      console.log(JSON.stringify(recall[recall.length - 1]))
    }
  }
  const found = findPostgres()
  if ("bin" in found) {
    const pg = await startPostgres(found.bin)
    try {
      let n = 0
      for (const dims of [1536, 256]) {
        for (const layout of ["one user", "100 users"] as const) {
          const where: Database.Location = {
            _tag: "Postgres",
            url: Redacted.make(pg.createDatabase(`bench_memory_${n++}`))
          }
          recall.push(await Effect.runPromise(measureRecall(where, "PostgreSQL", layout, dims, total, queries)))
          console.log(JSON.stringify(recall[recall.length - 1]))
        }
      }
    } finally {
      pg.stop()
    }
  }
  const first = await Effect.runPromise(firstRequest(total, quick ? 10 : 30))
  return {
    date: new Date().toISOString().slice(0, 16).replace("T", " ") + " UTC",
    load: os.loadavg(),
    recall,
    firstRequest: first
  }
}

const ms = (x: number) => (Number.isFinite(x) ? `${x.toFixed(2)} ms` : "—")

export const render = (f: Figures): string =>
  [
    `Measured ${f.date}, load ${
      f.load.map((l) => l.toFixed(1)).join(" / ")
    } (1 / 5 / 15 min) on ${os.cpus().length} cores.`,
    "",
    "| database | index | turns | layout | dims | queries | p50 | p99 |",
    "|---|---|---|---|---|---|---|---|",
    ...f.recall.map((r) =>
      `| ${r.database} | ${r.index} | ${r.items.toLocaleString("en")} | ${r.layout} | ${r.dims} | ${r.queries} | ${
        ms(r.p50Ms)
      } | ${ms(r.p99Ms)} |${r.error ? ` ${r.error}` : ""}`
    ),
    "",
    f.firstRequest === undefined ?
      "" :
      `Time to the first model request (median of ${f.firstRequest.runs} runs, in process, ` +
      `${f.firstRequest.items.toLocaleString("en")} turns of the user on SQLite, local embedder): with recall ` +
      `${ms(f.firstRequest.withUserMs)}, without a user ${ms(f.firstRequest.withoutUserMs)} — recall adds ` +
      `${
        ms(f.firstRequest.withUserMs - f.firstRequest.withoutUserMs)
      }, plus the embeddings endpoint's round trip in production.`
  ].join("\n")

/** Saves the figures and puts them into the doc's memory section. */
export const save = (f: Figures, docPath: string): void => {
  writeFileSync(resultsPath, JSON.stringify(f, null, 1))
  splice(docPath)
}

/** Puts the saved figures into the doc (between the memory markers, appended when absent). */
export const splice = (docPath: string): void => {
  if (!existsSync(resultsPath)) return
  const section = `${START}\n${render(JSON.parse(readFileSync(resultsPath, "utf8")) as Figures)}\n${END}`
  const doc = readFileSync(docPath, "utf8")
  const at = doc.indexOf(START)
  const next = at >= 0
    ? doc.slice(0, at) + section + doc.slice(doc.indexOf(END) + END.length)
    : `${doc.trimEnd()}\n\n## Memory recall\n\nWhat recall costs (docs/memory.md; \`BENCH_ONLY=memory npm run bench\`). Target: p99 ≤ 20 ms at 10,000 turns on SQLite.\n\n${section}\n`
  writeFileSync(docPath, next)
}
