/**
 * The HTTP server: the API routes and the web page on `HttpLayerRouter`, the run
 * registry and the conversation store, listening with `NodeHttpServer` on
 * `HOST:PORT`.
 *
 * Layer order matters for shutdown: the registry is built after the HTTP server
 * and finalized before it closes (runs are cancelled and every open SSE stream
 * ends with a final frame), and the app services (LLM, MCP servers) are
 * finalized last.
 *
 * @since 0.1.0
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createServer } from "node:http"
import * as BrowserSafety from "./BrowserSafety.js"
import { ChatRoutes } from "./ChatRoutes.js"
import * as ConversationStore from "./ConversationStore.js"
import * as RequestLog from "./RequestLog.js"
import { McpRoutes } from "./McpRoutes.js"
import { OpenAiRoutes } from "./OpenAiRoutes.js"
import { ApiRoutes } from "./Routes.js"
import * as RunRegistry from "./RunRegistry.js"
import * as ServerConfig from "./ServerConfig.js"
import { WebPageRoutes } from "./WebPage.js"

/**
 * API (with the AI SDK chat routes) + OpenAI-compatible (`/v1`) + MCP (`/mcp`)
 * + web page routes, behind the Host / Origin checks of `BrowserSafety`.
 *
 * @since 0.1.0
 * @category layers
 */
export const Routes = Layer.mergeAll(ApiRoutes, ChatRoutes, OpenAiRoutes, McpRoutes, WebPageRoutes, BrowserSafety.layer)

/**
 * Serves the routes on the `HttpServer` in context, with the run registry.
 * Needs the app services (`ReactAgent`, `DagAgent`, `ContextGuard`, `Interrupts`, `AppInfo`),
 * `ConversationStore` and `ServerConfig`. The request log line and span are
 * `RequestLog`'s (credentials redacted), in place of the platform's.
 *
 * @since 0.1.0 @category layers
 */
export const serve = (options?: { readonly disableLogger?: boolean; readonly disableListenLog?: boolean }) =>
  HttpLayerRouter.serve(Routes, {
    disableLogger: true,
    disableListenLog: options?.disableListenLog ?? true,
    middleware: options?.disableLogger === true
      ? RequestLog.tracer
      : (app) => RequestLog.tracer(RequestLog.logger(app))
  }).pipe(
    // the platform's tracer records the raw URL; RequestLog.tracer takes its place
    HttpMiddleware.withTracerDisabledWhen(() => true),
    Layer.provide(RunRegistry.layer)
  )

/**
 * A Node HTTP server on `host:port` (port 0 = a random free port), with limits
 * against slow or numerous clients (defaults: `ServerConfig.defaults`): a request
 * must arrive whole within `requestTimeoutMs` and its headers within
 * `headersTimeoutMs` (else 408 and the connection is closed), and connections past
 * `maxConnections` are closed at once. On shutdown, after the routes' finalizers
 * ended the SSE streams, connections that turn idle are closed at once (keep-alive
 * sockets would otherwise hold `server.close()`) and any connection still open
 * after 2 s is closed.
 *
 * @since 0.1.0 @category layers
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
    const drain = Layer.scopedDiscard(Effect.addFinalizer(() =>
      Effect.sync(() => {
        const idle = setInterval(() => server.closeIdleConnections(), 25)
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
    return drain.pipe(Layer.provideMerge(NodeHttpServer.layer(() => server, options)))
  }))

/** A Node HTTP server on `ServerConfig`'s host and port. @since 0.1.0 @category layers */
export const listen = Layer.unwrapEffect(Effect.map(ServerConfig.ServerConfig, (settings) =>
  listenOn({
    port: settings.port,
    host: settings.host,
    requestTimeoutMs: settings.requestTimeoutMs,
    headersTimeoutMs: settings.headersTimeoutMs,
    maxConnections: settings.maxConnections
  })
))

/**
 * The whole server over the app services: routes, registry, SQLite store at
 * `DATABASE_PATH`, listening on `HOST:PORT`.
 *
 * @since 0.1.0 @category layers
 */
export const layer = (options?: { readonly disableLogger?: boolean; readonly disableListenLog?: boolean }) =>
  serve(options).pipe(
    Layer.provideMerge(listen),
    Layer.provide(ConversationStore.layerConfig)
  )
