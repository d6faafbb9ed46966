/**
 * The REAL server (routes, run registry, SQLite store, ReactAgent, DagAgent) on
 * 127.0.0.1 and a random port, over a given model layer (a `ScriptedLlm` in the
 * interop tests), for clients that bring their own transport: the openai SDK,
 * the AI SDK's parser, the MCP SDK client.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as App from "../../src/app/App.js"
import * as BuiltinTools from "../../src/BuiltinTools.js"
import type { Llm } from "../../src/Llm.js"
import * as Server from "../../src/server/Server.js"
import { type ServerSettings } from "../../src/server/ServerConfig.js"
import * as ServerConfig from "../../src/server/ServerConfig.js"
import * as SqlApprovals from "../../src/server/SqlApprovals.js"
import * as SqlInterrupts from "../../src/server/SqlInterrupts.js"
import type { Tool } from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"
import { tempDatabase } from "./serverHarness.js"

/** Starts the server; it stops with the surrounding scope. Returns `http://127.0.0.1:PORT`. */
export const startInteropServer = (options: {
  readonly llm: Layer.Layer<Llm>
  readonly tools?: ReadonlyArray<Tool>
  readonly settings?: Partial<ServerSettings>
  /**
   * The agents' synthesis policy. Default `always`: the scripted models of the
   * interop tests answer `stream` calls as the synthesis call.
   */
  readonly synthesis?: "always" | "auto"
}): Effect.Effect<string, never, Scope.Scope> =>
  Effect.gen(function*() {
    const databasePath = tempDatabase()
    const app = App.layerMemory(App.modelsOf(options.llm), {
      demo: false,
      tools: Toolkit.layer(options.tools ?? BuiltinTools.tools),
      interrupts: SqlInterrupts.layer,
      approvals: SqlApprovals.layer,
      agent: { synthesis: options.synthesis ?? "always" }
    })
    const layer = Server.serve({ disableLogger: true }).pipe(
      Layer.provideMerge(Server.listenOn({ port: 0, host: "127.0.0.1" })),
      Layer.provideMerge(app),
      Layer.provide(Server.storage({ _tag: "Sqlite", filename: databasePath })),
      Layer.provide(ServerConfig.layer({ port: 0, databasePath, ...options.settings }))
    )
    const context = yield* Layer.build(layer).pipe(Effect.orDie)
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag !== "TcpAddress") return yield* Effect.die("expected a TCP address")
    return `http://127.0.0.1:${address.port}`
  })
