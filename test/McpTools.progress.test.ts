/**
 * An MCP tool's progress: the call sends a progress token (`_meta.progressToken`),
 * and each `notifications/progress` the server sends for it becomes a
 * `ToolProgress` event of the run (message, fraction from `progress/total`).
 */
import { assert, describe, it } from "@effect/vitest"
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { z } from "zod"
import * as McpTools from "../src/McpTools.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { makeAgent } from "./utils/agentLayers.js"
import { mcpHttpServerWith } from "./utils/mcpHttpServer.js"

/** `work {steps, ms}`: reports each step when the request has a progress token; answers whether it had one. */
const registerWork = (tokens: Array<unknown>) => (server: McpServer) => {
  server.registerTool("work", {
    description: "Works in steps, reporting progress",
    inputSchema: { steps: z.number(), ms: z.number() }
  }, async ({ ms, steps }, extra) => {
    const token = extra._meta?.progressToken
    tokens.push(token)
    for (let i = 1; i <= steps; i++) {
      await new Promise((resolve) => setTimeout(resolve, ms))
      if (token !== undefined) {
        await extra.sendNotification({
          method: "notifications/progress",
          params: { progressToken: token, progress: i, total: steps, ...(i % 2 === 1 ? { message: `step ${i}` } : {}) }
        })
      }
    }
    return { content: [{ type: "text", text: `worked ${steps} steps` }] }
  })
}

type Progress = Extract<RunEvent, { _tag: "ToolProgress" }>

describe("MCP progress", () => {
  it.live(
    "each notifications/progress of the call is a ToolProgress event of the run",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const tokens: Array<unknown> = []
        const server = yield* mcpHttpServerWith(registerWork(tokens))
        const mcp = yield* McpTools.fromConfig({ mcpServers: { lab: { url: server.url } } })
        const tool = mcp.tools.find((t) => t.name === "lab__work")!
        const h = makeAgent([
          ScriptedLlm.toolCalls([{ id: "call_w", name: "lab__work", arguments: { steps: 4, ms: 250 } }]),
          ScriptedLlm.text("done"),
          ScriptedLlm.text("answer")
        ], { tools: [tool], agent: { completionCheck: false } })
        const events = yield* Effect.flatMap(
          ReactAgent.ReactAgent,
          (agent) => Effect.map(Stream.runCollect(agent.run({ query: "work" })), Chunk.toArray)
        ).pipe(Effect.provide(h.layer))
        assert.strictEqual(tokens.length, 1)
        assert.isDefined(tokens[0], "the call carried a progress token")
        const progress = events.filter((e): e is Progress => e._tag === "ToolProgress")
        assert.deepStrictEqual(progress.map((p) => [p.tool_call_id, p.tool_name, p.message, p.progress]), [
          ["call_w", "lab__work", "step 1", 0.25],
          ["call_w", "lab__work", "2/4", 0.5],
          ["call_w", "lab__work", "step 3", 0.75],
          ["call_w", "lab__work", "4/4", 1]
        ])
        const done = events.find((e) => e._tag === "ToolDone")
        assert.strictEqual(done?._tag === "ToolDone" ? done.observation : "", "worked 4 steps")
      })),
    60_000
  )
})
