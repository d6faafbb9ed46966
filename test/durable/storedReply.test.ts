/**
 * Stored before it counts (SPEC §14), seen in the storage itself, without any
 * kill: while a durable run executes on the embedded database, each step's
 * result is readable by a replay before the run acts on it. The test opens the
 * server's SQLite file read-only (a second connection, as a replay after a
 * crash would read it) at the instants that matter and looks for the step's
 * reply in the cluster's message storage: the request of the activity
 * (`cluster_messages`, message id `…/activity/<step>/<attempt>`) and its reply
 * (`cluster_replies`, an exit) — what `@effect/workflow`'s replay reads.
 *
 * - when the client gets `thinking done` of iteration 1 (the model reply's own
 *   event), the reply of `llm/1` is stored, with the tool call it carries;
 * - while the slow tool it called is still running, the same;
 * - when the client gets the tool's `done`, its outcome (`tool/1/<call id>`) is stored.
 *
 * A model reply kept as a durable deferred that the running workflow body
 * completes itself (commit 8aa8c00) has a request (`…/deferred/llm/1`) and no
 * reply until the run ends: this test fails on it.
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import * as SqlClient from "@effect/sql/SqlClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { isEvent, sqliteSetup, toolMessages, waitUntil } from "../utils/killMatrix.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { openSse, type SseEvent } from "../utils/sse.js"

interface StoredStep {
  readonly message_id: string
  readonly processed: number
  /** The encoded reply (an exit), or null when none is stored. */
  readonly reply: string | null
}

/** Every request of the run of `conversation` to its workflow entity, with its reply when one is stored (read-only). */
const storedSteps = (databasePath: string, conversation: string): Promise<ReadonlyArray<StoredStep>> =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<StoredStep>`
      SELECT m.message_id AS message_id, m.processed AS processed, r.payload AS reply
      FROM cluster_messages m
      LEFT JOIN cluster_replies r ON r.request_id = m.id AND r.kind = 0
      WHERE m.entity_id IN (
        SELECT entity_id FROM cluster_messages
        WHERE tag = 'run' AND payload LIKE ${`%"conversationId":"${conversation}"%`}
      )
      ORDER BY m.id`
  }).pipe(
    Effect.provide(SqliteClient.layer({ filename: databasePath, readonly: true, disableWAL: true })),
    Effect.orDie,
    Effect.runPromise
  )

/** The stored reply of the activity `step` (any attempt), decoded: the step's exit. */
const storedReply = (steps: ReadonlyArray<StoredStep>, step: string): any => {
  const mine = steps.filter((s) => /\/activity\/(.+)\/\d+$/.exec(s.message_id)?.[1] === step)
  const replied = mine.find((s) => s.reply !== null)
  if (replied === undefined) return undefined
  const reply = JSON.parse(replied.reply!)
  // a reply of the workflow entity: the RPC's exit, whose value is the activity's result
  return reply?._tag === "Success" && reply.value?._tag === "Complete" ? reply.value.exit : reply
}

const summary = (steps: ReadonlyArray<StoredStep>) =>
  steps.map((s) =>
    `${s.message_id.split("/").slice(4).join("/")} processed=${s.processed} reply=${
      s.reply === null ? "none" : "stored"
    }`
  ).join("; ")

describe("stored before it counts (SQLite, no kill)", () => {
  it.live(
    "the model reply is readable from storage before its events go out and while the tool it called runs; the tool's outcome before its done",
    () =>
      Effect.promise(async () => {
        const fake = await FakeOpenAi.start((body, index) => {
          if (body?.stream) return FakeOpenAi.sseText("Recorded.")
          return toolMessages(body).length === 0
            ? FakeOpenAi.completion({
              toolCalls: [{
                id: FakeOpenAi.freshCallId(index),
                name: "rec__record",
                arguments: JSON.stringify({ label: "slow", ms: 4000 })
              }]
            })
            : FakeOpenAi.completion({ content: "done" })
        })
        const s = sqliteSetup(fake.url)
        const server = await startServerProcess(s.env)
        try {
          const conversation = "stored-reply"
          const seen: Array<{ readonly at: string; readonly steps: ReadonlyArray<StoredStep> }> = []
          const stream = openSse(`${server.url}/api/react`, {
            body: { query: "record something", conversation_id: conversation },
            timeoutMs: 60_000,
            // the client has the event: what a replay would read now
            onEvent: async (e: SseEvent) => {
              if (isEvent(e, "step", { type: "thinking", status: "done", iteration: 1 })) {
                seen.push({ at: "thinking done 1", steps: await storedSteps(s.databasePath, conversation) })
              }
              if (isEvent(e, "step", { type: "iteration", status: "done" })) {
                seen.push({ at: "tool done", steps: await storedSteps(s.databasePath, conversation) })
              }
            }
          })
          // while the tool runs (its start recorded, its end not yet)
          await waitUntil(() => s.records().includes("start slow"), 30_000, "the slow tool to start")
          const during = await storedSteps(s.databasePath, conversation)
          assert.deepStrictEqual(s.records(), ["start slow"], "read while the tool runs")
          const result = await stream
          assert.strictEqual(result.events[result.events.length - 1]?.event, "done")
          const at = (name: string) => seen.find((x) => x.at === name)?.steps ?? []
          console.log(
            `stored steps at thinking done 1: ${summary(at("thinking done 1"))}\nwhile the tool runs: ${
              summary(during)
            }\nat tool done: ${summary(at("tool done"))}`
          )

          for (
            const [when, steps] of [["when thinking done 1 reached the client", at("thinking done 1")], [
              "while the tool runs",
              during
            ]] as const
          ) {
            const reply = storedReply(steps, "llm/1")
            assert.isDefined(reply, `the reply of llm/1 is stored ${when}: ${summary(steps)}`)
            assert.strictEqual(reply._tag, "Success")
            // the loop call's stored step: the reply, and what the drains it carries took (none: it called a tool)
            assert.deepStrictEqual(reply.value.response.toolCalls.map((c: any) => [c.id, c.name]), [[
              "call_1_0",
              "rec__record"
            ]], "the reply with its tool call")
            assert.deepStrictEqual(reply.value.drained, [])
          }
          const outcome = storedReply(at("tool done"), "tool/1/call_1_0")
          assert.isDefined(
            outcome,
            `the tool's outcome is stored when its done reached the client: ${summary(at("tool done"))}`
          )
          assert.include(JSON.stringify(outcome), "recorded slow")
          assert.strictEqual(fake.requests.length, 3, "two loop calls and the synthesis")
        } finally {
          await server.kill()
          await fake.close()
        }
      }),
    120_000
  )
})
