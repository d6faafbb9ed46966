import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync, realpathSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer, tempDatabase } from "../utils/serverHarness.js"
import { openSse } from "../utils/sse.js"

const require = createRequire(import.meta.url)
const FS_SERVER = require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js")

/** The activities stored for the runs of `conversation` (names, any attempt), read from the server's file. */
const storedActivities = (databasePath: string, conversation: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ message_id: string }>`SELECT message_id FROM cluster_messages WHERE entity_id IN (
      SELECT entity_id FROM cluster_messages WHERE tag = 'run' AND payload LIKE ${`%"conversationId":"${conversation}"%`})`
    return rows.flatMap((r) => /\/activity\/(.+)\/\d+$/.exec(r.message_id)?.[1] ?? [])
  }).pipe(
    Effect.provide(SqliteClient.layer({ filename: databasePath, readonly: true, disableWAL: true })),
    Effect.orDie,
    Effect.scoped
  )

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

describe("server with the app's services", () => {
  it.scopedLive(
    "MCP tools from a config file are called through the server; the MCP server stops with it",
    () =>
      Effect.gen(function*() {
        const dir = realpathSync(mkdtempSync(join(tmpdir(), "react-engine-mcp-")))
        const file = join(dir, "note.txt")
        writeFileSync(file, "The secret word is heliotrope.")
        const config = join(dir, "mcp.json")
        writeFileSync(
          config,
          JSON.stringify({ mcpServers: { fs: { command: process.execPath, args: [FS_SERVER, dir] } } })
        )
        const fake = yield* FakeOpenAi.scoped((body) => {
          if (body?.stream) {
            return FakeOpenAi.sse([FakeOpenAi.chunk.content("heliotrope"), FakeOpenAi.chunk.finish("stop")])
          }
          if ((body?.tools ?? []).some((t: any) => t.function.name === "select_tools")) {
            // the filesystem server brings more than a dozen tools: the agent selects first
            return FakeOpenAi.completion({
              toolCalls: [{
                id: "sel",
                name: "select_tools",
                arguments: JSON.stringify({ tools: ["fs__read_text_file"] })
              }]
            })
          }
          const toolResult = (body?.messages ?? []).some((m: any) => m.role === "tool")
          return toolResult
            ? FakeOpenAi.completion({ content: "heliotrope" })
            : FakeOpenAi.completion({
              toolCalls: [{ id: "call_fs", name: "fs__read_text_file", arguments: JSON.stringify({ path: file }) }]
            })
        })
        const server = yield* startServer({ llmUrl: fake.url, mcpConfigPath: config })
        assert.deepStrictEqual(server.mcpServers.map((s) => s.name), ["fs"])
        const result = yield* Effect.promise(() =>
          openSse(`${server.url}/api/react`, { body: { query: "What is the secret word?" } })
        )
        // built-ins + MCP tools are over the selection threshold: a phase event, then the selected tool is offered
        const phase = result.events.find((e) => e.event === "phase")!
        assert.strictEqual(phase.data.phase, "selecting_tools")
        assert.isAbove(phase.data.total_tools, 12)
        const offered = fake.requests[1].body.tools.map((t: any) => t.function.name)
        assert.include(offered, "fs__read_text_file")
        const toolDone = result.events.find((e) =>
          e.event === "step" && e.data.type === "iteration" && e.data.status === "done"
        )!
        assert.strictEqual(toolDone.data.tool_name, "fs__read_text_file")
        assert.include(toolDone.data.observation, "heliotrope")
        assert.isNull(toolDone.data.error)
        const pid = server.mcpServers[0].pid!
        assert.isTrue(alive(pid))
        yield* server.stop
        yield* Effect.promise(async () => {
          for (let i = 0; i < 50 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100))
        })
        assert.isFalse(alive(pid))
      }),
    60_000
  )

  it.scopedLive(
    "history over budget is compacted before the run: a compact event comes first",
    () =>
      Effect.gen(function*() {
        const long = "word ".repeat(2000)
        const fake = yield* FakeOpenAi.scoped((body) =>
          body?.stream
            ? FakeOpenAi.sse([FakeOpenAi.chunk.content(long), FakeOpenAi.chunk.finish("stop")])
            : FakeOpenAi.completion({ content: "ok" })
        )
        const databasePath = tempDatabase()
        const guard = ContextGuard.layer({ budget: 1500 })
        const server = yield* startServer({ llmUrl: fake.url, databasePath, guard })
        for (const query of ["first question", "second question"]) {
          yield* Effect.promise(() => openSse(`${server.url}/api/react`, { body: { query, conversation_id: "big" } }))
        }
        const third = yield* Effect.promise(() =>
          openSse(`${server.url}/api/react`, { body: { query: "third question", conversation_id: "big" } })
        )
        assert.strictEqual(third.events[0].event, "compact")
        assert.strictEqual(third.events[0].data.original_messages, 4)
        assert.isBelow(third.events[0].data.kept_messages, 4)
        assert.strictEqual(third.events[third.events.length - 1].event, "done")
        // the compaction is a stored step (it may call a model)
        assert.include(yield* storedActivities(databasePath, "big"), "history")
      }),
    60_000
  )

  it.scopedLive(
    "a history that fits comes with the run's start: the model reads it, and no history step is stored",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped((body) => {
          // the question being answered is the last one asked (answer synthesis quotes it in its own prompt)
          const asked = JSON.stringify(body?.messages ?? []).includes("second question") ? "second" : "first"
          const answer = `answer to ${asked} question`
          return body?.stream ? FakeOpenAi.sseText(answer) : FakeOpenAi.completion({ content: answer })
        })
        const databasePath = tempDatabase()
        const server = yield* startServer({ llmUrl: fake.url, databasePath })
        for (const query of ["first question", "second question"]) {
          const run = yield* Effect.promise(() =>
            openSse(`${server.url}/api/react`, { body: { query, conversation_id: "small" } })
          )
          assert.strictEqual(run.events[run.events.length - 1].event, "done")
        }
        // the second run's loop call (its answer synthesis quotes the question in a prompt of its own)
        const loopCall = fake.requests.find((r: any) =>
          r.body.messages[r.body.messages.length - 1].content === "second question"
        )
        const last = loopCall!.body.messages.map((m: any) => [m.role, m.content])
        assert.deepStrictEqual(last.slice(-3), [["user", "first question"], ["assistant", "answer to first question"], [
          "user",
          "second question"
        ]])
        const stored = yield* storedActivities(databasePath, "small")
        assert.includeMembers(stored, ["llm/1", "end"])
        assert.notInclude(stored, "history")
      }),
    60_000
  )
})
