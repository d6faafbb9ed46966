/**
 * A start is answered before the workflow engine has the run (issue 45 item 1):
 * the run's workflow request is stored with it and handed over after
 * (`internal/runStarts.ts`). A process that stopped in between — the run
 * stored, its client told, no workflow — leaves the request in the run log;
 * the next start-up hands it over and the run answers, once. The crash state
 * is written through the run log (what `RunRegistry.start` stores before it
 * answers), then the real server starts on that database file.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Database from "../../src/server/Database.js"
import * as RunStarts from "../../src/server/internal/runStarts.js"
import * as RunLog from "../../src/server/RunLog.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer, tempDatabase } from "../utils/serverHarness.js"
import { openSse } from "../utils/sse.js"

/** The runs of the database file whose request was not handed over (read through a run log of its own). */
const unsubmitted = (databasePath: string) =>
  Effect.gen(function*() {
    const log = Context.get(
      yield* Layer.build(RunLog.layer.pipe(Layer.provide(Database.layer({ _tag: "Sqlite", filename: databasePath })))),
      RunLog.RunLog
    )
    return (yield* log.unsubmitted).map((r) => r.runId)
  }).pipe(Effect.scoped, Effect.orDie)

describe("a run whose start was answered but not handed to the engine", () => {
  it.scopedLive("is handed over at the next start-up: it runs once and ends with done", () =>
    Effect.gen(function*() {
      const databasePath = tempDatabase()
      // what a process leaves when it stops right after answering the start
      yield* Effect.gen(function*() {
        const log = Context.get(
          yield* Layer.build(
            RunLog.layer.pipe(Layer.provide(Database.layer({ _tag: "Sqlite", filename: databasePath })))
          ),
          RunLog.RunLog
        )
        yield* log.start({
          runId: "run_left",
          conversationId: "conv-left",
          query: "what was left?",
          pending: RunStarts.encode({
            runId: "run_left",
            conversationId: "conv-left",
            query: "what was left?",
            mode: "react"
          })
        })
        assert.deepStrictEqual((yield* log.unsubmitted).map((r) => r.runId), ["run_left"])
      }).pipe(Effect.scoped, Effect.orDie)

      // the loop's model call takes a while: the run is still running when the run log is read
      const fake = yield* FakeOpenAi.scoped((body) =>
        body?.stream
          ? FakeOpenAi.sseText("It was picked up.")
          : FakeOpenAi.completion({ content: "draft", delayMs: 1_500 })
      )
      const server = yield* startServer({ llmUrl: fake.url, databasePath })
      assert.isTrue(yield* Effect.promise(() => fake.waitForRequests(1, 15_000)), "the run was handed over")
      // handed over: its request is no longer kept for the next start-up (the run is still running)
      assert.deepStrictEqual(yield* unsubmitted(databasePath), [])
      const replay = yield* Effect.promise(() =>
        openSse(`${server.url}/api/react/events?conversation_id=conv-left`, { timeoutMs: 20_000 })
      )
      const done = replay.events.find((e) => e.event === "done")
      assert.isDefined(done, "the run left by the stopped process ends with done")
      assert.strictEqual(done!.data.answer, "It was picked up.")
      assert.strictEqual(done!.data.run_id, "run_left")
      // it ran once: one loop call and one synthesis call for the query
      const calls = fake.requests.filter((r) => JSON.stringify(r.body).includes("what was left?"))
      assert.strictEqual(calls.length, 2)
    }))
})
