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
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
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
 * Needs the app services (`ReactAgent`, `Tools`, `ContextGuard`, `Interrupts`,
 * `AppInfo`), `ConversationStore` and `ServerConfig`. The log has a line when a
 * run starts and one when it ends; `disableLogger: false` adds the platform's
 * log entry per HTTP response.
 *
 * @since 0.1.0 @category layers
 */
export const serve = (options?: { readonly disableLogger?: boolean; readonly disableListenLog?: boolean }) =>
  HttpLayerRouter.serve(Routes, {
    disableLogger: options?.disableLogger ?? true,
    disableListenLog: options?.disableListenLog ?? true
  }).pipe(Layer.provide(RunRegistry.layer))

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

/**
 * A Node HTTP server on `host:port` (port 0 = a random free port); fails with a
 * `ListenError` when it cannot listen there. On shutdown,
 * after the routes' finalizers ended the SSE streams, connections that turn idle
 * are closed at once (keep-alive sockets would otherwise hold `server.close()`)
 * and any connection still open after 2 s is closed.
 *
 * @since 0.1.0 @category layers
 */
export const listenOn = (options: { readonly port: number; readonly host: string }) =>
  Layer.unwrapEffect(Effect.sync(() => {
    const server = createServer()
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
    const node = NodeHttpServer.layer(() => server, options).pipe(
      Layer.catchAll((error) => Layer.fail(listenFailure(options)(error.cause)))
    )
    return drain.pipe(Layer.provideMerge(node))
  }))

/** A Node HTTP server on `ServerConfig`'s host and port. @since 0.1.0 @category layers */
export const listen = Layer.unwrapEffect(Effect.map(ServerConfig, (settings) =>
  listenOn({ port: settings.port, host: settings.host })
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
