/**
 * Starts the REAL server (routes, run registry, SQLite store, ReactAgent, the
 * `openai`-SDK `OpenAiLlm`) on a random port, pointed at an OpenAI-compatible
 * fake (test/utils/fakeOpenAiServer.ts). Nothing but the remote model is faked.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import type * as SqlClient from "@effect/sql/SqlClient"
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
import type * as Attachments from "../../src/Attachments.js"
import * as BuiltinTools from "../../src/BuiltinTools.js"
import type * as ContextGuard from "../../src/ContextGuard.js"
import type { Llm } from "../../src/Llm.js"
import * as McpTools from "../../src/McpTools.js"
import type * as Memory from "../../src/Memory.js"
import * as OpenAiLlm from "../../src/OpenAiLlm.js"
import * as Server from "../../src/server/Server.js"
import { type ServerSettings } from "../../src/server/ServerConfig.js"
import * as ServerConfig from "../../src/server/ServerConfig.js"
import * as SqlApprovals from "../../src/server/SqlApprovals.js"
import * as SqlInterrupts from "../../src/server/SqlInterrupts.js"
import type { Tool } from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"

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
  /** Options of the `OpenAiLlm` (default: no retries). */
  readonly llm?: Partial<OpenAiLlm.OpenAiLlmOptions>
  /** Another model instead of the `OpenAiLlm` (built with the server's storage in context: its attachments). */
  readonly llmLayer?: Layer.Layer<Llm, never, Attachments.Attachments>
  /** Options of `Server.serve` (default: the request logger off). */
  readonly serve?: Parameters<typeof Server.serve>[0]
  /** Provided to the whole server (a logger, a tracer). */
  readonly provide?: Layer.Layer<never>
  /** Retries of the LLM layer (default 0). */
  readonly llmMaxRetries?: number
  /**
   * The agents' synthesis policy. Default `always`: the fakes of the tests that use
   * this harness answer streamed requests as the synthesis call.
   */
  readonly synthesis?: "always" | "auto"
  /** The users' memory (e.g. `SqlMemory.layer()` over an `Embedder`); default none. */
  readonly memory?: Layer.Layer<Memory.Memory, unknown, SqlClient.SqlClient>
}): Effect.Effect<TestServer, never, Scope.Scope> =>
  Effect.gen(function*() {
    const databasePath = options.databasePath ?? tempDatabase()
    const llm = options.llmLayer ?? OpenAiLlm.layer({
      baseURL: options.llmUrl,
      apiKey: "test-key",
      model: "fake-model",
      maxRetries: options.llmMaxRetries ?? 0,
      retryBaseDelay: "20 millis",
      ...options.llm
    })
    const tools = options.mcpConfigPath !== undefined
      ? { mcp: McpTools.layer({ file: options.mcpConfigPath }) }
      : { tools: Toolkit.layer(options.tools ?? BuiltinTools.tools) }
    const app = App.layerMemory(App.modelsOf(llm), {
      demo: false,
      ...tools,
      interrupts: SqlInterrupts.layer,
      approvals: SqlApprovals.layer,
      agent: { synthesis: options.synthesis ?? "always" },
      ...(options.guard ? { guard: options.guard } : {}),
      ...(options.memory ? { memory: options.memory } : {})
    })
    const layer = Server.serve(options.serve ?? { disableLogger: true }).pipe(
      Layer.provideMerge(Server.listenOn({
        port: 0,
        host: "127.0.0.1",
        ...(options.settings?.requestTimeoutMs !== undefined
          ? { requestTimeoutMs: options.settings.requestTimeoutMs }
          : {}),
        ...(options.settings?.headersTimeoutMs !== undefined
          ? { headersTimeoutMs: options.settings.headersTimeoutMs }
          : {}),
        ...(options.settings?.maxConnections !== undefined ? { maxConnections: options.settings.maxConnections } : {})
      })),
      Layer.provideMerge(app),
      Layer.provide(Server.storage({ _tag: "Sqlite", filename: databasePath })),
      Layer.provide(ServerConfig.layer({ port: 0, databasePath, ...options.settings })),
      // the server's run log lines stay out of the test output, unless the test captures the log
      Layer.provide(options.provide ?? Logger.minimumLogLevel(LogLevel.Warning))
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
