/**
 * A model's large tool arguments are stored once per place, not once per event:
 * a run whose model sends 4 MiB of arguments, measured in the server's SQLite
 * database (the run log, the stored conversation, the durable journal).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Hooks from "../../src/Hooks.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import * as Tool from "../../src/Tool.js"
import { makeAgent } from "../utils/agentLayers.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { openSqlite } from "../utils/ledgerMcp.js"
import { startServer } from "../utils/serverHarness.js"
import { getJson, openSse } from "../utils/sse.js"

const ARG_CHARS = 4 * 1024 * 1024

const storeBlob = Tool.make({
  name: "store_blob",
  description: "Stores a blob",
  parameters: Schema.Struct({ data: Schema.String }),
  handler: ({ data }) => Effect.succeed(`stored ${data.length} characters`)
})

describe("large tool arguments", () => {
  it.scopedLive("4 MiB of arguments: one copy in the run log, one in the conversation", () =>
    Effect.gen(function*() {
      const blob = "x".repeat(ARG_CHARS)
      const fake = yield* FakeOpenAi.scoped((body, index) =>
        body?.stream
          ? FakeOpenAi.sse([FakeOpenAi.chunk.content("Stored."), FakeOpenAi.chunk.finish("stop")])
          : index > 0
          ? FakeOpenAi.completion({ content: "Stored." })
          : FakeOpenAi.completion({
            toolCalls: [{ id: "call_big", name: "store_blob", arguments: JSON.stringify({ data: blob }) }]
          })
      )
      const server = yield* startServer({ llmUrl: fake.url, tools: [storeBlob] })
      const run = yield* Effect.promise(() =>
        openSse(`${server.url}/api/react`, { body: { query: "store it", conversation_id: "big1" }, timeoutMs: 60_000 })
      )
      assert.strictEqual(run.events[run.events.length - 1].event, "done")

      // on the wire: the arguments in `iteration start` only; `iteration done` (same arguments) omits them
      const carrying = run.events.filter((e) => JSON.stringify(e.data).includes(blob.slice(0, 1000)))
      assert.deepStrictEqual(carrying.map((e) => [e.data.type, e.data.status]), [["iteration", "start"]])
      assert.strictEqual(carrying[0].data.tool_args.data, blob)
      const done = run.events.find((e) => e.data.type === "iteration" && e.data.status === "done")
      assert.isDefined(done)
      assert.notProperty(done!.data, "tool_args")
      assert.strictEqual(done!.data.observation, `stored ${ARG_CHARS} characters`)

      const conversation = yield* Effect.promise(() => getJson(`${server.url}/api/conversations/big1`))
      assert.strictEqual(conversation.status, 200)
      const conversationBytes = JSON.stringify(conversation.body).length

      const db = openSqlite(server.databasePath)
      const bytes = (sql: string) => Number((db.prepare(sql).all()[0] as { b: number | null }).b ?? 0)
      const runLog = bytes("SELECT sum(length(CAST(data AS BLOB))) AS b FROM react_run_events")
      const turns = bytes(
        "SELECT sum(length(CAST(messages AS BLOB))) AS b FROM turns"
      )
      const journal = bytes("SELECT sum(length(CAST(payload AS BLOB))) AS b FROM cluster_replies")
      db.close()
      const x = (n: number) => Math.round((n / ARG_CHARS) * 100) / 100
      console.log(
        `stored for ${ARG_CHARS} chars of arguments: run log ${runLog} (${x(runLog)}x), conversation ${turns} (${
          x(turns)
        }x), ` +
          `journal ${journal} (${x(journal)}x), GET conversation ${conversationBytes} (${x(conversationBytes)}x)`
      )
      // one copy each (was: two in the run log, `iteration start` and `iteration done`)
      assert.isBelow(runLog, 1.1 * ARG_CHARS)
      assert.isBelow(turns, 1.1 * ARG_CHARS)
      assert.isBelow(conversationBytes, 1.1 * ARG_CHARS)
      assert.isBelow(runLog + turns, 2.2 * ARG_CHARS)
    }), 120_000)

  it.effect("ToolDone carries tool_args only when a PreToolUse hook rewrote them; the run's steps keep them", () => {
    const hooks = Hooks.layer([
      Hooks.pre({ name: "rewrite", matcher: "add", run: () => Effect.succeed({ allow: true, args: { a: 10, b: 20 } }) })
    ])
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "a", name: "add", arguments: { a: 1, b: 1 } },
        { id: "e", name: "echo", arguments: { text: "same" } }
      ]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("done")
    ], { hooks })
    return Effect.gen(function*() {
      const agent = yield* ReactAgent.ReactAgent
      const events = Chunk.toArray(yield* Stream.runCollect(agent.run({ query: "q" })))
      const done = new Map(events.flatMap((e) => (e._tag === "ToolDone" ? [[e.tool_call_id, e] as const] : [])))
      assert.deepStrictEqual(done.get("a")?.tool_args, { a: 10, b: 20 })
      assert.notProperty(done.get("e"), "tool_args")
      const starts = events.flatMap((e) => (e._tag === "ToolStart" ? [[e.tool_call_id, e.tool_args]] : []))
      assert.deepStrictEqual(starts, [["a", { a: 1, b: 1 }], ["e", { text: "same" }]])
      const end = events.find((e) => e._tag === "Done")
      assert.deepStrictEqual(
        (end?._tag === "Done" ? end.steps ?? [] : []).map((s) => [s.tool_call_id, s.tool_args]),
        [["a", { a: 10, b: 20 }], ["e", { text: "same" }]]
      )
    }).pipe(Effect.provide(h.layer))
  })
})
