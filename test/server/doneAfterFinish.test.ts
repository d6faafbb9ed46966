/**
 * A run's row says `done` a moment before its `done` event is stored (its end
 * step frees the conversation first, so a client that reads `done` can start the
 * next turn); a process killed in that moment leaves the event to the instance
 * that takes the run over. A client attaching in between must still get `done`
 * (SPEC §11: a stream ends with `done`), not a stream cut after the answer.
 * Found by the PostgreSQL multi-instance test (50 runs, one instance killed): one
 * resumed stream ended with `answer`.
 *
 * Made deterministic with a run log whose append of the `done` frame waits until
 * the second client has attached.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as App from "../../src/app/App.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import * as RunLog from "../../src/server/RunLog.js"
import * as Server from "../../src/server/Server.js"
import * as ServerConfig from "../../src/server/ServerConfig.js"
import * as SqlApprovals from "../../src/server/SqlApprovals.js"
import * as SqlInterrupts from "../../src/server/SqlInterrupts.js"
import * as Toolkit from "../../src/Toolkit.js"
import { tempDatabase } from "../utils/serverHarness.js"
import { openSse } from "../utils/sse.js"

describe("a client attaching between a run's end step and its stored done", () => {
  it.scopedLive(
    "GET /api/react/events gets the done event, not a stream cut after the answer",
    () =>
      Effect.gen(function*() {
        const holding = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const wrap = (log: RunLog.RunLogService): RunLog.RunLogService => ({
          ...log,
          append: (runId, events) =>
            events.some((e) => e.event._tag === "Done")
              ? Deferred.succeed(holding, undefined).pipe(
                Effect.zipRight(Deferred.await(release)),
                Effect.zipRight(log.append(runId, events))
              )
              : log.append(runId, events)
        })
        const databasePath = tempDatabase()
        const real = Server.storage({ _tag: "Sqlite", filename: databasePath })
        const storage = Layer.effectContext(
          Effect.map(Effect.context<Layer.Layer.Success<typeof real>>(), (context) =>
            Context.add(context, RunLog.RunLog, wrap(Context.get(context, RunLog.RunLog))))
        ).pipe(Layer.provide(real))
        const app = App.layerMemory(
          App.modelsOf(ScriptedLlm.layer(() =>
            ScriptedLlm.text("The answer.")
          )),
          {
            demo: false,
            tools: Toolkit.layer([]),
            interrupts: SqlInterrupts.layer,
            approvals: SqlApprovals.layer,
            agent: { synthesis: "always" }
          }
        )
        const layer = Server.serve().pipe(
          Layer.provideMerge(Server.listenOn({ port: 0, host: "127.0.0.1" })),
          Layer.provideMerge(app),
          Layer.provide(storage),
          Layer.provide(ServerConfig.layer({ port: 0, databasePath })),
          Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
        )
        const context = yield* Layer.build(Layer.orDie(layer))
        const address = Context.get(context, HttpServer.HttpServer).address
        if (address._tag !== "TcpAddress") return yield* Effect.die("expected a TCP address")
        const url = `http://127.0.0.1:${address.port}`

        const first = yield* Effect.fork(
          Effect.promise(() => openSse(`${url}/api/react`, { body: { query: "q", conversation_id: "c" } }))
        )
        // the end step has run (the row says done); the done frame's write waits
        yield* Deferred.await(holding)
        const second = yield* Effect.fork(
          Effect.promise(() => openSse(`${url}/api/react/events?conversation_id=c`, { timeoutMs: 20_000 }))
        )
        yield* Effect.sleep("500 millis")
        yield* Deferred.succeed(release, undefined)
        const [a, b] = [yield* Fiber.join(first), yield* Fiber.join(second)]
        assert.strictEqual(a.events[a.events.length - 1].event, "done")
        assert.strictEqual(b.status, 200)
        assert.deepStrictEqual(b.events.map((e) => e.event), a.events.map((e) => e.event))
        assert.strictEqual(b.events[b.events.length - 1].event, "done")
      }).pipe(Effect.timeout("30 seconds")),
    40_000
  )
})
