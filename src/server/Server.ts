/**
 * The HTTP server: the API routes and the web page on `HttpLayerRouter`, the run
 * registry and the durable run workflow, listening with `NodeHttpServer` on
 * `HOST:PORT`, over the storage (`storage` / `storageConfig`: the database, the
 * run log, the conversation store and the workflow engine).
 *
 * Layer order matters for shutdown: the routes go first (a request then gets
 * a 503), then the tool calls in flight get the shutdown grace
 * (`DurableRuns.layerShutdownGrace`, `SHUTDOWN_GRACE_MS`) to finish and store
 * their outcomes, then the registry ends every open SSE stream with a final
 * frame (runs are durable and continue after a restart), the port closes, and
 * the app services (LLM, MCP servers) and the storage are finalized last.
 *
 * @since 0.1.0
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { createServer, type IncomingMessage, type Server as NodeServer, type ServerResponse } from "node:http"
import * as A2aServer from "./A2aServer.js"
import * as A2aTasks from "./A2aTasks.js"
import { AttachmentRoutes } from "./AttachmentRoutes.js"
import * as BrowserSafety from "./BrowserSafety.js"
import { CassetteRoutes } from "./CassetteRoutes.js"
import { ChatRoutes } from "./ChatRoutes.js"
import * as ConversationBudget from "./ConversationBudget.js"
import * as ConversationStore from "./ConversationStore.js"
import * as Database from "./Database.js"
import * as DurableRuns from "./DurableRuns.js"
import { ForkRoutes } from "./ForkRoutes.js"
import { McpRoutes } from "./McpRoutes.js"
import { MemoryRoutes } from "./MemoryRoutes.js"
import { OpenAiRoutes } from "./OpenAiRoutes.js"
import * as OperatorLog from "./OperatorLog.js"
import * as RequestLog from "./RequestLog.js"
import { ApiRoutes, NotFoundRoutes } from "./Routes.js"
import * as RunLog from "./RunLog.js"
import * as RunRegistry from "./RunRegistry.js"
import * as RunTrace from "./RunTrace.js"
import * as ServerConfig from "./ServerConfig.js"
import * as SqlAttachments from "./SqlAttachments.js"
import { WebPageRoutes } from "./WebPage.js"

/**
 * API (with the AI SDK chat routes) + OpenAI-compatible (`/v1`) + MCP (`/mcp`)
 * + web page routes, behind the Host / Origin checks of `BrowserSafety`.
 *
 * @since 0.1.0
 * @category layers
 */
export const Routes = Layer.mergeAll(
  ApiRoutes,
  AttachmentRoutes,
  ChatRoutes,
  OpenAiRoutes,
  McpRoutes,
  CassetteRoutes,
  ForkRoutes,
  A2aServer.A2aRoutes,
  A2aServer.layerResume,
  MemoryRoutes,
  WebPageRoutes,
  BrowserSafety.layer,
  NotFoundRoutes
)

/**
 * Longest path parameter the router matches. The router's default (100) made
 * valid 101–128-character conversation ids, and longer ones, a bare 404; with this
 * bound every id reaches its route and is validated there (400 `invalid_request`).
 * Node's 16 KiB header limit bounds the URL anyway.
 */
const MAX_PARAM_LENGTH = 16_384

/**
 * Serves the routes on the `HttpServer` in context, with the run registry.
 * Needs the app services (`ReactAgent`, `DagAgent`, `Toolkit`, `ContextGuard`, `Interrupts`,
 * `AppInfo`), the storage (`storage`) and `ServerConfig`. The log has a line when a
 * run starts and one when it ends; `disableLogger: false` adds a log entry per HTTP
 * response. The request log line and span are `RequestLog`'s (credentials redacted),
 * in place of the platform's.
 *
 * @since 0.1.0
 * @category layers
 */
export const serve = (options?: { readonly disableLogger?: boolean; readonly disableListenLog?: boolean }) =>
  HttpLayerRouter.serve(Routes, {
    routerConfig: { maxParamLength: MAX_PARAM_LENGTH },
    disableLogger: true,
    disableListenLog: options?.disableListenLog ?? true,
    // the request log is off unless asked for (runs log a line when they start and end)
    middleware: options?.disableLogger === false
      ? (app) => RequestLog.tracer(RequestLog.logger(app))
      : RequestLog.tracer
  }).pipe(
    // the platform's tracer records the raw URL; RequestLog.tracer takes its place
    HttpMiddleware.withTracerDisabledWhen(() => true),
    // at shutdown, after the routes and before the registry: the tool calls in flight finish
    Layer.provide(DurableRuns.layerShutdownGrace),
    Layer.provide(RunRegistry.layer),
    Layer.provide(DurableRuns.layerWorkflow),
    Layer.provide(ConversationBudget.layerConfig.pipe(Layer.provide(NodeFileSystem.layer)))
  )

/**
 * What the server stores, in one database: the conversations, the run log, the
 * attachments (`SqlAttachments`: the models read their bytes from it), the
 * workflow engine's messages (embedded on SQLite; a socket runner of a cluster
 * on PostgreSQL, at `cluster`'s address) and this process's run host.
 *
 * @since 0.1.0
 * @category layers
 */
export const storage = (
  where: Database.Location,
  cluster?: DurableRuns.ClusterSettings
) => {
  const embedded = where._tag === "Sqlite" || cluster === undefined
  // the only instance starting: clients counted as attached were attached to a process that is gone
  const runLog = embedded
    ? Layer.effectDiscard(
      Effect.flatMap(
        Effect.zip(RunLog.RunLog, Clock.currentTimeMillis),
        ([log, now]) => Effect.orDie(log.releaseAll(now))
      )
    ).pipe(
      Layer.provideMerge(RunLog.layer)
    )
    : RunLog.layer
  return Layer.mergeAll(
    Layer.provideMerge(OperatorLog.layerResuming, runLog),
    ConversationStore.layer,
    RunTrace.layer,
    A2aTasks.layer,
    SqlAttachments.layer,
    embedded ? DurableRuns.layerEngineEmbedded : DurableRuns.layerEngineCluster(cluster),
    DurableRuns.layerHost
  ).pipe(Layer.provideMerge(Database.layer(where)))
}

/**
 * The storage from the environment: `DATABASE_URL` / `DATABASE_PATH`, and the
 * `CLUSTER_*` settings when the database is PostgreSQL.
 *
 * @since 0.1.0
 * @category layers
 */
export const storageConfig = Layer.unwrapEffect(Effect.gen(function*() {
  const where = yield* Database.location
  return storage(where, where._tag === "Postgres" ? yield* DurableRuns.clusterConfig : undefined)
}))

/**
 * The server could not listen on its address: the port is taken (`AddressInUse`),
 * not allowed (`PermissionDenied`, e.g. below 1024), or the host is not an
 * address of this machine (`AddressNotAvailable`). The message says what to do.
 *
 * @since 0.1.0
 * @category errors
 */
export class ListenError extends Schema.TaggedError<ListenError>()("ListenError", {
  reason: Schema.Literal("AddressInUse", "PermissionDenied", "AddressNotAvailable", "Unknown"),
  host: Schema.String,
  port: Schema.Number,
  detail: Schema.String
}) {
  override get message(): string {
    const where = `${this.host}:${this.port}`
    switch (this.reason) {
      case "AddressInUse":
        return `Port ${this.port} is already in use (${where}), probably by another server. ` +
          `Stop it, or choose another port with PORT, e.g. PORT=${this.port + 1} npm start`
      case "PermissionDenied":
        return `Not allowed to listen on ${where}: choose a port above 1023 with PORT, e.g. PORT=3000 npm start`
      case "AddressNotAvailable":
        return `Cannot listen on ${where}: HOST=${this.host} is not an address of this machine (e.g. HOST=127.0.0.1)`
      case "Unknown":
        return `Cannot listen on ${where}: ${this.detail}`
    }
  }
}

const listenFailure = (options: { readonly port: number; readonly host: string }) => (cause: unknown): ListenError => {
  const code = (cause as { code?: unknown } | null)?.code
  return new ListenError({
    reason: code === "EADDRINUSE"
      ? "AddressInUse"
      : code === "EACCES"
      ? "PermissionDenied"
      : code === "EADDRNOTAVAIL"
      ? "AddressNotAvailable"
      : "Unknown",
    host: options.host,
    port: options.port,
    detail: cause instanceof Error ? cause.message : String(cause)
  })
}

/** How long a request that arrives before the routes are installed waits for them (then 503). */
const ROUTES_WAIT_MS = 1000

/**
 * The `request` listener installed before the port opens, for the requests that reach the
 * server while it has no routes: between the moment the port accepts connections and the
 * moment the routes are installed (the run registry and the durable run workflow are built
 * after the port is open, a few tens of milliseconds), and after the routes are removed at
 * shutdown while the port is still open. Without it Node parses such a request and nobody
 * answers it: the client hangs until its own timeout.
 *
 * At start-up a request waits for the routes, up to `ROUTES_WAIT_MS`, and is handed to them
 * when they are installed (served, a few milliseconds late: a browser `EventSource` does not
 * retry a 503); past that wait, and at shutdown, it is answered `503` with `Retry-After: 1`
 * in the documented JSON error shape, and its connection is closed so that a keep-alive
 * client reconnects.
 */
const beforeRoutes = (server: NodeServer) => {
  let waiting: Array<
    { readonly request: IncomingMessage; readonly response: ServerResponse; readonly timer: NodeJS.Timeout }
  > = []
  let routed = false
  const unavailable = (request: IncomingMessage, response: ServerResponse) => {
    if (response.headersSent || response.destroyed) return
    const body = JSON.stringify({
      error: "unavailable",
      message: routed ? "The server is stopping" : "The server is starting; retry shortly"
    })
    response.writeHead(503, {
      "content-type": "application/json",
      "content-length": Buffer.byteLength(body),
      "retry-after": "1",
      "cache-control": "no-store",
      "connection": "close"
    })
    // a request body is not read: the connection is closed after the answer
    response.end(request.method === "HEAD" ? undefined : body)
  }
  const listener = (request: IncomingMessage, response: ServerResponse) => {
    // the routes are installed: they answer (every `request` listener is called, this one first)
    if (server.listenerCount("request") > 1) return
    if (routed) return unavailable(request, response)
    // Node edge: a plain timer (unref'd), like the drain's — no fiber runs before the routes do
    const timer = setTimeout(() => {
      waiting = waiting.filter((w) => w.request !== request)
      unavailable(request, response)
    }, ROUTES_WAIT_MS)
    timer.unref()
    waiting.push({ request, response, timer })
  }
  server.on("newListener", (event: string | symbol, routes: (...args: Array<any>) => void) => {
    if (event !== "request" || routes === listener) return
    routed = true
    // emitted before the routes' listener is added: hand it the waiting requests right after
    process.nextTick(() => {
      const handOver = waiting
      waiting = []
      for (const w of handOver) {
        clearTimeout(w.timer)
        if (!w.response.destroyed) routes(w.request, w.response)
      }
    })
  })
  return listener
}

/**
 * A Node HTTP server on `host:port` (port 0 = a random free port), with limits
 * against slow or numerous clients (defaults: `ServerConfig.defaults`): a request
 * must arrive whole within `requestTimeoutMs` and its headers within
 * `headersTimeoutMs` (else 408 and the connection is closed), and connections past
 * `maxConnections` are closed at once. On shutdown, after the routes' finalizers
 * ended the SSE streams, connections that turn idle are closed at once (keep-alive
 * sockets would otherwise hold `server.close()`) and any connection still open
 * after 2 s is closed. From the moment the port accepts connections, every
 * request gets an answer: one that arrives before the routes are installed waits
 * for them (up to 1 s, then `503` with `Retry-After: 1`), one that arrives after
 * they were removed at shutdown gets the 503 at once. Fails with a `ListenError`
 * when it cannot listen there.
 *
 * @since 0.1.0
 * @category layers
 */
export const listenOn = (options: {
  readonly port: number
  readonly host: string
  readonly requestTimeoutMs?: number
  readonly headersTimeoutMs?: number
  readonly maxConnections?: number
}) =>
  Layer.unwrapEffect(Effect.sync(() => {
    const requestTimeout = options.requestTimeoutMs ?? ServerConfig.defaults.requestTimeoutMs
    const headersTimeout = Math.min(options.headersTimeoutMs ?? ServerConfig.defaults.headersTimeoutMs, requestTimeout)
    const server = createServer({
      requestTimeout,
      headersTimeout,
      // Node checks both timeouts on this interval (default 30 s): a fraction of the shorter one
      connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(headersTimeout / 4)))
    })
    server.maxConnections = options.maxConnections ?? ServerConfig.defaults.maxConnections
    // installed before the port opens, so it is the first `request` listener
    server.on("request", beforeRoutes(server))
    const drain = Layer.scopedDiscard(Effect.addFinalizer(() =>
      Effect.sync(() => {
        // Node edge: the http.Server finishes closing after this finalizer has returned (its
        // "close" callback), when no fiber of ours is left to sleep on; plain unref'd timers
        // drain keep-alive sockets meanwhile and cannot keep the process alive.
        const idle = setInterval(() => server.closeIdleConnections(), 25) // Node edge: runs after our fibers are gone (above)
        const hard = setTimeout(() => server.closeAllConnections(), 2000)
        idle.unref()
        hard.unref()
        server.once("close", () => {
          clearInterval(idle)
          clearTimeout(hard)
        })
        server.closeIdleConnections()
      })
    ))
    // a burst of connections (a thousand clients at once) waits in the kernel's queue instead of being reset
    const node = NodeHttpServer.layer(() => server, { port: options.port, host: options.host, backlog: 2048 }).pipe(
      Layer.catchAll((error) => Layer.fail(listenFailure(options)(error.cause)))
    )
    return drain.pipe(Layer.provideMerge(node))
  }))

/**
 * A Node HTTP server on `ServerConfig`'s host and port.
 *
 * @since 0.1.0
 * @category layers
 */
export const listen = Layer.unwrapEffect(Effect.map(ServerConfig.ServerConfig, (settings) =>
  listenOn({
    port: settings.port,
    host: settings.host,
    requestTimeoutMs: settings.requestTimeoutMs,
    headersTimeoutMs: settings.headersTimeoutMs,
    maxConnections: settings.maxConnections
  })))

/**
 * The server over the app services and the storage: routes, registry and run
 * workflow, listening on `HOST:PORT`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options?: { readonly disableLogger?: boolean; readonly disableListenLog?: boolean }) =>
  serve(options).pipe(Layer.provideMerge(listen))
