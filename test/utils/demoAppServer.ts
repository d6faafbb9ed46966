/**
 * The REAL server (API routes + web page, run registry, SQLite store in memory)
 * built as the app builds it (`App.layerMemory`, agents configured as in production)
 * on the offline demo model and the built-in tools: nothing is scripted.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import { Context, Effect, Layer, Logger, LogLevel } from "effect"
import * as App from "../../src/app/App.js"
import * as BuiltinTools from "../../src/BuiltinTools.js"
import * as DemoLlm from "../../src/DemoLlm.js"
import * as Server from "../../src/server/Server.js"
import * as ServerConfig from "../../src/server/ServerConfig.js"
import * as SqlApprovals from "../../src/server/SqlApprovals.js"
import * as SqlInterrupts from "../../src/server/SqlInterrupts.js"
import * as Toolkit from "../../src/Toolkit.js"

/** The server on a random port for the test's scope; `demo` delays default to the model's own (visible streaming). */
export const demoAppServer = (options: DemoLlm.DemoLlmOptions = {}) =>
  Effect.gen(function*() {
    const app = App.layerMemory(App.modelsOf(DemoLlm.layer(options)), {
      demo: true,
      tools: Toolkit.layer(BuiltinTools.tools),
      interrupts: SqlInterrupts.layer,
      approvals: SqlApprovals.layer
    })
    const layer = Server.serve({ disableLogger: true }).pipe(
      Layer.provideMerge(Server.listenOn({ port: 0, host: "127.0.0.1" })),
      Layer.provideMerge(app),
      Layer.provide(Server.storage({ _tag: "Sqlite", filename: ":memory:" })),
      Layer.provide(ServerConfig.layer({ port: 0 })),
      // the server's run log lines stay out of the test output
      Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
    )
    const context = yield* Layer.build(layer).pipe(Effect.orDie)
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag !== "TcpAddress") return yield* Effect.die(new Error("expected a TCP address"))
    return { url: `http://127.0.0.1:${address.port}` }
  })
