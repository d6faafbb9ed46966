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
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { createServer } from "node:http"
import { ConversationStore } from "./ConversationStore.js"
import { ApiRoutes } from "./Routes.js"
import { RunRegistry } from "./RunRegistry.js"
import { ServerConfig } from "./ServerConfig.js"
import { WebPageRoutes } from "./WebPage.js"

/** API + web page routes. @since 0.1.0 @category layers */
export const Routes = Layer.mergeAll(ApiRoutes, WebPageRoutes)

/**
 * Serves the routes on the `HttpServer` in context, with the run registry.
 * Needs the app services (`ReactAgent`, `ContextGuard`, `Interrupts`, `AppInfo`),
 * `ConversationStore` and `ServerConfig`.
 *
 * @since 0.1.0 @category layers
 */
export const serve = (options?: { readonly disableLogger?: boolean; readonly disableListenLog?: boolean }) =>
  HttpLayerRouter.serve(Routes, {
    disableLogger: options?.disableLogger ?? false,
    disableListenLog: options?.disableListenLog ?? true
  }).pipe(Layer.provide(RunRegistry.layer))

/** A Node HTTP server on `ServerConfig`'s host and port. @since 0.1.0 @category layers */
export const listen: Layer.Layer<HttpServer.HttpServer, import("@effect/platform/HttpServerError").ServeError, ServerConfig> =
  Layer.unwrapEffect(Effect.map(ServerConfig, (settings) =>
    NodeHttpServer.layer(createServer, { port: settings.port, host: settings.host })
  ))

/**
 * The whole server over the app services: routes, registry, SQLite store at
 * `DATABASE_PATH`, listening on `HOST:PORT`.
 *
 * @since 0.1.0 @category layers
 */
export const layer = (options?: { readonly disableLogger?: boolean; readonly disableListenLog?: boolean }) =>
  serve(options).pipe(
    Layer.provide(listen),
    Layer.provide(ConversationStore.layerConfig)
  )
