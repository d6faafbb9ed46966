/**
 * The A2A task store (`A2aTasks`, table `react_a2a_tasks` with migrations of its
 * own) on SQLite and on PostgreSQL: a task saved by the SDK keeps the run and the
 * idempotency key it was linked with, the key finds the first task sent with it,
 * the open tasks are the unfinished ones with a run, listing pages newest first.
 */
import { Task, TaskState } from "@a2a-js/sdk"
import { afterAll, assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as A2aTasks from "../../src/server/A2aTasks.js"
import * as Database from "../../src/server/Database.js"
import { findPostgres, type Postgres, startPostgres } from "../utils/postgres.js"

const openStore = (where: Database.Location) =>
  Effect.map(
    Layer.build(A2aTasks.layer.pipe(Layer.provide(Database.layer(where)), Layer.orDie)),
    Context.get(A2aTasks.A2aTasks)
  )

const found = findPostgres()
let pg: Postgres | undefined
afterAll(() => pg?.stop())

const cases: ReadonlyArray<readonly [string, boolean, () => Effect.Effect<Database.Location>]> = [
  [
    "SQLite",
    false,
    () =>
      Effect.sync(() => ({ _tag: "Sqlite", filename: join(mkdtempSync(join(tmpdir(), "a2a-store-")), "a2a.sqlite") }))
  ],
  ["PostgreSQL", "missing" in found, () =>
    Effect.promise(async (): Promise<Database.Location> => {
      pg ??= await startPostgres((found as { bin: string }).bin)
      return { _tag: "Postgres", url: Redacted.make(pg.createDatabase(`a2a_${Date.now()}`)) }
    })]
]

const task = (id: string, state: TaskState, answer?: string) =>
  Task.toJSON({
    id,
    contextId: "ctx",
    status: { state, message: undefined, timestamp: "2026-12-06T00:00:00.000Z" },
    artifacts: answer === undefined ? [] : [{
      artifactId: "answer",
      name: "answer",
      description: "",
      parts: [{
        content: { $case: "text", value: answer },
        metadata: undefined,
        filename: "",
        mediaType: "text/plain"
      }],
      metadata: undefined,
      extensions: []
    }],
    history: [],
    metadata: undefined
  })

describe("A2A task store", () => {
  for (const [name, skip, location] of cases) {
    it.scoped.skipIf(skip)(`${name}: link, save, load, by key, open tasks, list`, () =>
      Effect.gen(function*() {
        const store = yield* openStore(yield* location())
        yield* Effect.orDie(
          store.link({
            taskId: "t1",
            contextId: "ctx",
            runId: "run_1",
            idempotencyKey: "ik_a",
            state: "TASK_STATE_SUBMITTED",
            task: task("t1", TaskState.TASK_STATE_SUBMITTED)
          })
        )
        // the SDK saves the task as it goes: its run and key stay
        yield* Effect.orDie(store.save("t1", "ctx", "TASK_STATE_WORKING", task("t1", TaskState.TASK_STATE_WORKING)))
        const loaded = Option.getOrThrow(yield* Effect.orDie(store.load("t1")))
        assert.strictEqual(loaded.runId, "run_1")
        assert.strictEqual(loaded.idempotencyKey, "ik_a")
        assert.strictEqual(loaded.state, "TASK_STATE_WORKING")
        assert.strictEqual(Task.fromJSON(loaded.task).status?.state, TaskState.TASK_STATE_WORKING)
        assert.strictEqual(Option.getOrThrow(yield* Effect.orDie(store.byKey("ik_a"))).taskId, "t1")
        assert.isTrue(Option.isNone(yield* Effect.orDie(store.byKey("ik_none"))))
        yield* Effect.orDie(
          store.link({
            taskId: "t2",
            contextId: "ctx",
            runId: "run_2",
            state: "TASK_STATE_SUBMITTED",
            task: task("t2", TaskState.TASK_STATE_SUBMITTED)
          })
        )
        assert.deepStrictEqual((yield* Effect.orDie(store.open)).map((t) => t.taskId).sort(), ["t1", "t2"])
        // a final state takes the task out of the open ones
        yield* Effect.orDie(
          store.save("t1", "ctx", "TASK_STATE_COMPLETED", task("t1", TaskState.TASK_STATE_COMPLETED, "42"))
        )
        assert.deepStrictEqual((yield* Effect.orDie(store.open)).map((t) => t.taskId), ["t2"])
        const done = Task.fromJSON(Option.getOrThrow(yield* Effect.orDie(store.load("t1"))).task)
        assert.strictEqual(
          done.artifacts[0].parts[0].content?.$case === "text" ? done.artifacts[0].parts[0].content.value : "",
          "42"
        )
        // a task the SDK saves without a run (a refused message) is stored too, never open
        yield* Effect.orDie(store.save("t3", "other", "TASK_STATE_FAILED", task("t3", TaskState.TASK_STATE_FAILED)))
        const all = yield* Effect.orDie(store.list({ limit: 2, offset: 0 }))
        assert.strictEqual(all.total, 3)
        assert.strictEqual(all.tasks.length, 2)
        const ctx = yield* Effect.orDie(store.list({ contextId: "ctx", limit: 10, offset: 0 }))
        assert.deepStrictEqual(ctx.tasks.map((t) => t.taskId).sort(), ["t1", "t2"])
        assert.isTrue(Option.isNone(yield* Effect.orDie(store.load("missing"))))
      }), 90_000)
  }
})
