/**
 * Starts the REAL server (routes, run registry, SQLite store, ReactAgent, the
 * `openai`-SDK `OpenAiLlm`) on a random port, pointed at an OpenAI-compatible
 * fake (test/utils/fakeOpenAiServer.ts). Nothing but the remote model is faked.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Scope from "effect/Scope"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as App from "../../src/app/App.js"
import * as BuiltinTools from "../../src/BuiltinTools.js"
import type * as ContextGuard from "../../src/ContextGuard.js"
import * as McpTools from "../../src/McpTools.js"
import * as OpenAiLlm from "../../src/OpenAiLlm.js"
import { ConversationStore } from "../../src/server/ConversationStore.js"
import * as Server from "../../src/server/Server.js"
import { ServerConfig, type ServerSettings } from "../../src/server/ServerConfig.js"
import type { Tool } from "../../src/Tool.js"
import { Tools } from "../../src/Toolkit.js"

/** A running test server. */
export interface TestServer {
  /** `http://127.0.0.1:PORT` */
  readonly url: string
  readonly databasePath: string
  /** The MCP servers started (with `mcpConfigPath`). */
  readonly mcpServers: ReadonlyArray<McpTools.ServerInfo>
  /** Stops it (runs cancelled, SSE streams ended, port closed). */
  readonly stop: Effect.Effect<void>
}

/** A fresh temporary SQLite path. */
export const tempDatabase = (): string => join(mkdtempSync(join(tmpdir(), "react-engine-server-")), "db", "test.sqlite")

/** Starts a server; it stops when the surrounding scope closes (or with `stop`). */
export const startServer = (options: {
  /** Base URL of the fake OpenAI server (`fake.url`). */
  readonly llmUrl: string
  readonly settings?: Partial<ServerSettings>
  readonly databasePath?: string
  readonly tools?: ReadonlyArray<Tool>
  /** Tools from an MCP config file (plus the built-ins), instead of `tools`. */
  readonly mcpConfigPath?: string
  readonly guard?: Layer.Layer<ContextGuard.ContextGuard>
  /** Retries of the LLM layer (default 0). */
  readonly llmMaxRetries?: number
}): Effect.Effect<TestServer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const databasePath = options.databasePath ?? tempDatabase()
    const llm = OpenAiLlm.layer({
      baseURL: options.llmUrl,
      apiKey: "test-key",
      model: "fake-model",
      maxRetries: options.llmMaxRetries ?? 0,
      retryBaseDelay: "20 millis"
    })
    const tools = options.mcpConfigPath !== undefined
      ? { mcp: McpTools.McpTools.layer(options.mcpConfigPath) }
      : { tools: Tools.layer(options.tools ?? BuiltinTools.tools) }
    const app = App.make(llm, { demo: false, ...tools, ...(options.guard ? { guard: options.guard } : {}) })
    const layer = Server.serve({ disableLogger: true }).pipe(
      Layer.provideMerge(Server.listenOn({ port: 0, host: "127.0.0.1" })),
      Layer.provide(ConversationStore.layerSqlite(databasePath)),
      Layer.provideMerge(app),
      Layer.provide(ServerConfig.layer({ port: 0, databasePath, ...options.settings })),
      // the server's run log lines stay out of the test output
      Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
    )
    const outer = yield* Effect.scope
    const scope = yield* Scope.fork(outer, ExecutionStrategy.sequential)
    const context = yield* Layer.buildWithScope(layer, scope).pipe(Effect.orDie)
    const address = Context.get(context, HttpServer.HttpServer).address
    if (address._tag !== "TcpAddress") return yield* Effect.die("expected a TCP address")
    const mcp = Context.getOption(context as Context.Context<unknown>, McpTools.McpTools)
    return {
      mcpServers: mcp._tag === "Some" ? mcp.value.servers : [],
      url: `http://127.0.0.1:${address.port}`,
      databasePath,
      stop: Scope.close(scope, Exit.void)
    }
  })
