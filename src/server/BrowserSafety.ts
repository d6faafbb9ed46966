/**
 * What keeps a web page on another site from using the server through the
 * visitor's browser: a global router middleware that checks every request before
 * its route.
 *
 * - **Host** (DNS rebinding): when the server listens on a loopback address, or
 *   `ALLOWED_HOSTS` is set, a request whose `Host` is not a loopback name
 *   (`localhost`, `*.localhost`, `127.x.x.x`, `[::1]`), the bound address or an
 *   allowed name gets 421 — a page that made `attacker.example` resolve to
 *   127.0.0.1 reaches the server under its own name and is refused.
 * - **Origin** (cross-site requests): a request carrying an `Origin` that is
 *   neither the server's own (same host as `Host`) nor in `CORS_ORIGINS` gets 403.
 *   Allowed origins get real CORS answers (`OPTIONS` preflight, `Access-Control-*`
 *   headers, `X-Conversation-Id` exposed), so a browser app elsewhere can be
 *   allowed on purpose.
 * - Requests without `Origin` (curl, servers, same-origin navigation) pass; bodies
 *   must still be `application/json` (`ApiError.requireJson`, 415), which a page
 *   cannot send across origins without a preflight.
 *
 * @since 0.1.0
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpMiddleware from "@effect/platform/HttpMiddleware"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import type * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as ApiError from "./ApiError.js"
import { type ServerSettings } from "./ServerConfig.js"
import * as ServerConfig from "./ServerConfig.js"

const HOST = /^([a-z0-9.-]+|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i

/** The name of a `Host` header (lower case, `[…]` kept for IPv6, no trailing dot), if it is one. */
const hostNameOf = (host: string): string | undefined => {
  const match = HOST.exec(host.trim())
  return match ? match[1].toLowerCase().replace(/\.$/, "") : undefined
}

/**
 * True for names that always mean this machine: `localhost`, `*.localhost`,
 * `127.0.0.0/8`, `::1` (bare or in brackets).
 *
 * @since 0.1.0
 * @category utils
 */
export const isLoopbackName = (name: string): boolean => {
  const n = name.toLowerCase()
  return n === "localhost" || n.endsWith(".localhost") || /^127(\.\d{1,3}){3}$/.test(n) || n === "::1" ||
    n === "[::1]"
}

const bracketed = (host: string) => (host.includes(":") && !host.startsWith("[") ? `[${host}]` : host.toLowerCase())

/**
 * The `Host` check for the settings: undefined when every host is accepted (a
 * non-loopback binding without `ALLOWED_HOSTS`, or `ALLOWED_HOSTS=*`).
 *
 * @since 0.1.0
 * @category utils
 */
export const hostPolicy = (settings: ServerSettings): ((host: string | undefined) => boolean) | undefined => {
  if (settings.allowedHosts.includes("*")) return undefined
  if (!isLoopbackName(settings.host) && settings.allowedHosts.length === 0) return undefined
  const bound = bracketed(settings.host)
  return (host) => {
    const name = host === undefined ? undefined : hostNameOf(host)
    if (name === undefined) return false
    return isLoopbackName(name) || name === bound ||
      settings.allowedHosts.some((allowed) =>
        allowed.startsWith(".") ? name === allowed.slice(1) || name.endsWith(allowed) : name === allowed
      )
  }
}

/**
 * True when `origin` names the host the request was sent to (same name and port;
 * the scheme is not compared: behind a TLS proxy the page is `https:` while the
 * server sees plain HTTP).
 */
const isOwnOrigin = (origin: string, host: string | undefined): boolean => {
  if (host === undefined || hostNameOf(host) === undefined) return false
  try {
    const o = new URL(origin)
    return o.host === new URL(`${o.protocol}//${host.trim()}`).host
  } catch {
    return false
  }
}

/** Request headers a cross-origin client may send. */
const ALLOWED_HEADERS = ["authorization", "content-type", "last-event-id"]

/**
 * The middleware for the settings (see the module comment).
 *
 * @since 0.1.0
 * @category middleware
 */
export const make = (settings: ServerSettings) => {
  const hostAllowed = hostPolicy(settings)
  const anyOrigin = settings.corsOrigins.includes("*")
  const listed = new Set(settings.corsOrigins)
  const cors = HttpMiddleware.cors({
    allowedOrigins: () => true, // already checked below
    allowedMethods: ["GET", "POST"],
    allowedHeaders: ALLOWED_HEADERS,
    exposedHeaders: ["x-conversation-id"],
    maxAge: 600
  })
  return <E, R>(
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
      const host = request.headers["host"]
      if (hostAllowed !== undefined && !hostAllowed(host)) {
        return Effect.succeed(ApiError.toResponse(new ApiError.HostNotAllowed({ host: host ?? "" })))
      }
      const origin = request.headers["origin"]
      if (origin === undefined || isOwnOrigin(origin, host)) return app
      if (origin !== "null" && (anyOrigin || listed.has(origin.toLowerCase()))) return cors(app)
      return Effect.succeed(ApiError.toResponse(new ApiError.OriginNotAllowed({ origin })))
    })
}

/**
 * The middleware as a global router layer (it runs before every route, unknown
 * routes and `OPTIONS` preflights included). `Server.Routes` includes it.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = HttpLayerRouter.middleware(
  Effect.map(ServerConfig.ServerConfig, (settings) => {
    const guard = make(settings)
    return (app) => guard(app)
  }),
  { global: true }
)
