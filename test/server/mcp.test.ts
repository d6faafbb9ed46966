import { assert, describe, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import type { Progress } from "@modelcontextprotocol/sdk/types.js"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import type { ChatRequest } from "../../src/Llm.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import * as Tool from "../../src/Tool.js"
import { addTool } from "../utils/agentLayers.js"
import { startInteropServer } from "../utils/interopServer.js"

const hasToolResult = (request: ChatRequest) => request.messages.some((m) => m.role === "tool")

const addModel = () =>
  ScriptedLlm.makeUnsafe((request, _i, method) =>
    method === "stream"
      ? ScriptedLlm.text("2 + 3 = 5")
      : hasToolResult(request)
      ? ScriptedLlm.text("5")
      : ScriptedLlm.toolCall("add", { a: 2, b: 3 })
  )

/** An MCP SDK client connected to `/mcp`, closed with the scope. */
const connect = (url: string, headers?: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const client = new Client({ name: "interop-test", version: "1.0.0" })
      await client.connect(
        new StreamableHTTPClientTransport(new URL(`${url}/mcp`), headers ? { requestInit: { headers } } : undefined)
      )
      return client
    }),
    (client) => Effect.promise(() => client.close())
  )

describe("/mcp (streamable HTTP, the MCP SDK client)", () => {
  it.scopedLive(
    "lists the ask tool; a call answers with the agent's answer and one progress notification per step",
    () =>
      Effect.gen(function*() {
        const url = yield* startInteropServer({ llm: addModel().layer, tools: [addTool] })
        const client = yield* connect(url)
        const { tools } = yield* Effect.promise(() => client.listTools())
        assert.deepStrictEqual(tools.map((t) => t.name), ["ask"])
        assert.deepStrictEqual(tools[0].inputSchema.required, ["query"])
        const progress: Array<Progress> = []
        const result = yield* Effect.promise(() =>
          client.callTool({ name: "ask", arguments: { query: "What is 2+3?" } }, undefined, {
            onprogress: (p) => progress.push(p)
          })
        )
        assert.deepStrictEqual(result.content, [{ type: "text", text: "2 + 3 = 5" }])
        assert.isUndefined(result.isError)
        assert.deepStrictEqual(progress.map((p) => p.message), [
          "Iteration 1",
          "add done",
          "Iteration 2",
          "Writing the answer"
        ])
        assert.deepStrictEqual(progress.map((p) => p.progress), [1, 2, 3, 4])
        // without a progress token: no notifications, same answer
        const quiet = yield* Effect.promise(() => client.callTool({ name: "ask", arguments: { query: "again" } }))
        assert.deepStrictEqual(quiet.content, [{ type: "text", text: "2 + 3 = 5" }])
      }),
    30_000
  )

  it.scopedLive(
    "cancelling the call (the client aborts it) cancels the run: its tool is interrupted",
    () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const interrupted = yield* Deferred.make<void>()
        const stuck = Tool.make({
          name: "stuck",
          description: "Never ends",
          parameters: Schema.Struct({}),
          handler: () =>
            Deferred.succeed(started, undefined).pipe(
              Effect.zipRight(Effect.never),
              Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
            )
        })
        const url = yield* startInteropServer({
          llm: ScriptedLlm.layer(() => ScriptedLlm.toolCall("stuck", {})),
          tools: [stuck]
        })
        const client = yield* connect(url)
        const controller = new AbortController()
        const call = client.callTool({ name: "ask", arguments: { query: "go" } }, undefined, {
          signal: controller.signal
        }).then(
          () => "answered",
          (e: Error) => `${e.name}: ${e.message}`
        )
        yield* Deferred.await(started)
        controller.abort()
        assert.match(yield* Effect.promise(() => call), /^McpError: MCP error -32001: AbortError/)
        yield* Deferred.await(interrupted).pipe(
          Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => "the run was not cancelled" })
        )
        // the session still works
        assert.deepStrictEqual((yield* Effect.promise(() => client.listTools())).tools.map((t) => t.name), ["ask"])
      }),
    30_000
  )

  it.scopedLive("API_TOKEN guards /mcp; requests of an unknown session are refused", () =>
    Effect.gen(function*() {
      const url = yield* startInteropServer({
        llm: addModel().layer,
        tools: [addTool],
        settings: { apiToken: Option.some(Redacted.make("s3cret")) }
      })
      const denied = yield* Effect.promise(() =>
        new Client({ name: "t", version: "1" }).connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`))).then(
          () => "connected",
          (e: Error) => e.message
        )
      )
      assert.notStrictEqual(denied, "connected")
      const client = yield* connect(url, { authorization: "Bearer s3cret" })
      assert.lengthOf((yield* Effect.promise(() => client.listTools())).tools, 1)
      const stale = yield* Effect.promise(() =>
        fetch(`${url}/mcp`, {
          method: "POST",
          headers: {
            authorization: "Bearer s3cret",
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            "mcp-session-id": "not-a-session"
          },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })
        })
      )
      assert.strictEqual(stale.status, 404)
      const noSession = yield* Effect.promise(() =>
        fetch(`${url}/mcp`, {
          method: "POST",
          headers: {
            authorization: "Bearer s3cret",
            "content-type": "application/json",
            accept: "application/json, text/event-stream"
          },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" })
        })
      )
      assert.strictEqual(noSession.status, 400)
    }), 30_000)
})
