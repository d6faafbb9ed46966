/**
 * The agent as an MCP server over streamable HTTP at `/mcp`: the
 * `ask` tool of `AgentMcpServer`, with progress notifications and cancellation.
 *
 * Sessions are stateful (the `mcp-session-id` header): an `initialize` request
 * without a session opens one — an MCP server and the SDK's web-standard
 * streamable HTTP transport — and every later request of that session (tool
 * calls, `notifications/cancelled`, the `GET` event stream, the `DELETE` that
 * ends it) reaches the same server, which is what lets a cancellation find its
 * call. The bridge stays inside the router: the platform request becomes a
 * web `Request` (the body already read and size-checked as on `/api`), the
 * transport's web `Response` becomes the platform response, so the router's
 * middleware (Host / Origin checks, CORS, the request log) applies as to any
 * route. Auth: the `API_TOKEN` bearer token, as on `/api`.
 *
 * At most `MAX_SESSIONS` sessions are kept; opening one more closes the oldest.
 * Every session is closed with the layer (server shutdown).
 *
 * @since 0.1.0
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js"
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js"
import * as Effect from "effect/Effect"
import { randomUUID } from "node:crypto"
import * as AgentMcpServer from "../AgentMcpServer.js"
import * as ApiError from "./ApiError.js"
import { unstorableText } from "./internal/storableText.js"
import * as ServerConfig from "./ServerConfig.js"

/**
 * The most MCP sessions kept at once.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_SESSIONS = 256

interface Session {
  readonly server: McpServer
  readonly transport: WebStandardStreamableHTTPServerTransport
}

const rpcError = (status: number, code: number, message: string) =>
  HttpServerResponse.unsafeJson({ jsonrpc: "2.0", error: { code, message }, id: null }, { status })

const close = (session: Session) => Effect.promise(() => session.server.close().catch(() => undefined))

/**
 * `POST`, `GET` and `DELETE /mcp` as one router layer (mounted by
 * `Server.Routes`). Needs `ReactAgent`, `DagAgent` and `ServerConfig` (`ask`
 * runs in `REACT_DEFAULT_MODE`).
 *
 * @since 0.1.0
 * @category layers
 */
export const McpRoutes = HttpLayerRouter.use((router) =>
  Effect.gen(function*() {
    const settings = yield* ServerConfig.ServerConfig
    const mcp = yield* AgentMcpServer.make({ mode: settings.defaultMode })
    const guard = ApiError.authorize(settings.apiToken)
    const sessions = new Map<string, Session>()
    yield* Effect.addFinalizer(() =>
      Effect.forEach([...sessions.values()], close, { discard: true, concurrency: "unbounded" }).pipe(
        Effect.zipRight(Effect.sync(() => sessions.clear()))
      )
    )

    const open = Effect.gen(function*() {
      const transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => {
          sessions.set(id, session)
          if (sessions.size > MAX_SESSIONS) {
            const [oldest, evicted] = sessions.entries().next().value!
            sessions.delete(oldest)
            void evicted.server.close().catch(() => undefined)
          }
        },
        onsessionclosed: (id) => {
          sessions.delete(id)
        }
      })
      const server = mcp.create()
      const session: Session = { server, transport }
      yield* Effect.promise(() => server.connect(transport))
      return session
    })

    /** The web `Request` of the platform request (the body, if any, is passed parsed). */
    const webRequest = (request: HttpServerRequest.HttpServerRequest) => {
      const headers = new Headers()
      for (const [name, value] of Object.entries(request.headers)) headers.set(name, value)
      return new Request(new URL(request.url, "http://localhost"), { method: request.method, headers })
    }

    const handle = (session: Session, parsedBody?: unknown) =>
      Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) =>
        Effect.promise(() =>
          session.transport.handleRequest(webRequest(request), parsedBody === undefined ? undefined : { parsedBody })
        ).pipe(Effect.map(HttpServerResponse.fromWeb)))

    const sessionOf = Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
      const id = request.headers["mcp-session-id"]
      return id === undefined ? undefined : sessions.get(id)
    })

    const unknownSession = Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
      request.headers["mcp-session-id"] === undefined
        ? rpcError(400, -32000, "Bad Request: no mcp-session-id header (send initialize first)")
        : rpcError(404, -32001, "Session not found"))

    const route = <E extends ApiError.ApiError, R>(
      method: "GET" | "POST" | "DELETE",
      handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
    ) =>
      router.add(method, "/mcp", ApiError.handle(Effect.zipRight(guard, handler)))

    yield* route(
      "POST",
      Effect.gen(function*() {
        yield* ApiError.requireJson
        const text = yield* ApiError.readBody(settings.maxBodyBytes)
        let body: unknown
        try {
          body = JSON.parse(text)
        } catch {
          return rpcError(400, -32700, "Parse error: the body is not JSON")
        }
        const unstorable = unstorableText(body)
        if (unstorable !== undefined) {
          return rpcError(400, -32602, `Invalid params: ${unstorable.path}: ${unstorable.message}`)
        }
        const existing = yield* sessionOf
        if (existing !== undefined) {
          return yield* handle(existing, body)
        }
        const id = (yield* HttpServerRequest.HttpServerRequest).headers["mcp-session-id"]
        if (id === undefined && isInitializeRequest(body)) {
          return yield* handle(yield* open, body)
        }
        return yield* unknownSession
      })
    )

    for (const method of ["GET", "DELETE"] as const) {
      yield* route(
        method,
        Effect.flatMap(sessionOf, (session) => (session === undefined ? unknownSession : handle(session)))
      )
    }
  })
)
