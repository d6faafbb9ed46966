/**
 * A small real MCP server over Streamable HTTP (the official SDK's `McpServer`,
 * one session per client) for testing the `url` transport: `echo`, `fail` (isError),
 * `picture` (image content), `whoami` (echoes the Authorization header) and
 * `slow` (waits until the request is cancelled, then records it).
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { randomUUID } from "node:crypto"
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"
import { z } from "zod"

export interface McpHttpServer {
  readonly url: string
  /** How many `slow` calls were cancelled by the client. */
  readonly cancelled: () => number
}

const build = (
  headers: IncomingHttpHeaders,
  state: { cancelled: number },
  extra: (server: McpServer) => void
): McpServer => {
  const server = new McpServer({ name: "test-http", version: "1.0.0" })
  extra(server)
  server.registerTool("echo", {
    description: "Echo the text back",
    inputSchema: { text: z.string() },
    annotations: { readOnlyHint: true }
  }, async ({ text }) => ({ content: [{ type: "text", text: `echo: ${text}` }] }))
  server.registerTool("fail", { description: "Always fails" }, async () => ({
    isError: true,
    content: [{ type: "text", text: "something went wrong" }]
  }))
  server.registerTool("picture", { description: "Returns an image" }, async () => ({
    content: [
      { type: "text", text: "here it is" },
      { type: "image", data: "iVBORw0KGgo=", mimeType: "image/png" }
    ]
  }))
  server.registerTool("whoami", { description: "Echoes the Authorization header" }, async () => ({
    content: [{ type: "text", text: String(headers.authorization ?? "anonymous") }]
  }))
  server.registerTool(
    "slow",
    { description: "Never finishes unless cancelled" },
    async (extra) =>
      new Promise((resolve) => {
        extra.signal.addEventListener("abort", () => {
          state.cancelled++
          resolve({ content: [{ type: "text", text: "cancelled" }] })
        })
      })
  )
  return server
}

/** Starts the server on a random local port; stopped when the scope closes. */
export const mcpHttpServer: Effect.Effect<McpHttpServer, never, Scope.Scope> = Effect.suspend(() =>
  mcpHttpServerWith(() => {})
)

/** The server with more tools (`register` adds them to each session's server). */
export const mcpHttpServerWith = (
  register: (server: McpServer) => void
): Effect.Effect<McpHttpServer, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() => {
      const state = { cancelled: 0 }
      // Stateful sessions: the client's `notifications/cancelled` reaches the server that runs the call.
      const sessions = new Map<string, StreamableHTTPServerTransport>()
      const http = createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (c: Buffer) => chunks.push(c))
        req.on("end", async () => {
          const text = Buffer.concat(chunks).toString("utf8")
          const id = req.headers["mcp-session-id"]
          let transport = typeof id === "string" ? sessions.get(id) : undefined
          if (transport === undefined) {
            const server = build(req.headers, state, register)
            transport = new StreamableHTTPServerTransport({
              sessionIdGenerator: () => randomUUID(),
              onsessioninitialized: (sid) => void sessions.set(sid, transport!)
            })
            await server.connect(transport)
          }
          await transport.handleRequest(req, res, text ? JSON.parse(text) : undefined)
        })
      })
      return new Promise<{ http: typeof http; handle: McpHttpServer }>((resolve) =>
        http.listen(0, "127.0.0.1", () => {
          const port = (http.address() as AddressInfo).port
          resolve({ http, handle: { url: `http://127.0.0.1:${port}/mcp`, cancelled: () => state.cancelled } })
        })
      )
    }),
    ({ http }) =>
      Effect.promise(() =>
        new Promise<void>((resolve) => {
          http.closeAllConnections()
          http.close(() => resolve())
        })
      )
  ).pipe(Effect.map(({ handle }) => handle))
