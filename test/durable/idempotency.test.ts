/**
 * Exactly once with a cooperating tool (SPEC §14), on the real server process:
 * an MCP tool annotated `idempotentHint` passes the call's idempotency key
 * (`_meta.idempotencyKey`) to a store that deduplicates on it (a SQLite table
 * with a unique key, in the MCP server's process). It writes its effect, then
 * sleeps; the server is killed with SIGKILL during the sleep (after the effect,
 * before the call's outcome is stored) and started again on the same file and
 * port. The call runs again — with the same key, the one the client saw on
 * the `iteration start` event — and the store holds its effect once. The fake
 * model gives every request fresh tool-call ids (`call_<request#>_<k>`), so a
 * model asked again would show up as a new call with a new key.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { modelEnv } from "../utils/killMatrix.js"
import { type Attempt, openLedger, openSqlite } from "../utils/ledgerMcp.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { openSse, type SseEvent } from "../utils/sse.js"

const LEDGER = fileURLToPath(new URL("../utils/ledgerMcp.ts", import.meta.url))

const waitUntil = async (predicate: () => boolean, timeoutMs: number, what: string) => {
  const started = Date.now()
  while (!predicate()) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

const toolMessages = (body: any): Array<any> => (body?.messages ?? []).filter((m: any) => m.role === "tool")
const isToolStart = (e: SseEvent) => e.event === "step" && e.data.type === "iteration" && e.data.status === "start"

describe("idempotency keys on the real server (SQLite, SIGKILL)", () => {
  it.live(
    "kill -9 after an idempotent tool wrote its effect: it runs again with the same key, the effect is stored once",
    () =>
      Effect.promise(async () => {
        const dir = mkdtempSync(join(tmpdir(), "react-idem-"))
        const attemptsFile = join(dir, "attempts.jsonl")
        const ledgerFile = join(dir, "ledger.sqlite")
        writeFileSync(attemptsFile, "")
        const attempts = (): Array<Attempt> =>
          readFileSync(attemptsFile, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l))
        writeFileSync(
          join(dir, "mcp.json"),
          JSON.stringify({
            mcpServers: {
              ledger: {
                command: process.execPath,
                args: ["--import", "tsx", LEDGER],
                env: { LEDGER_DB: ledgerFile, ATTEMPTS_FILE: attemptsFile }
              }
            }
          })
        )
        // every loop request gets fresh tool-call ids: a model asked again would give another call
        const loop: Array<any> = []
        const fake = await FakeOpenAi.start((body, index) => {
          if (body?.stream) return FakeOpenAi.sseText("Paid once.")
          loop.push(body)
          return toolMessages(body).length === 0
            ? FakeOpenAi.completion({
              toolCalls: [{
                id: `call_${index + 1}_1`,
                name: "ledger__pay",
                arguments: JSON.stringify({ label: "p1", ms: 4000 })
              }]
            })
            : FakeOpenAi.completion({ content: "done" })
        })
        const env = {
          DATABASE_PATH: join(dir, "react.sqlite"),
          MCP_CONFIG: join(dir, "mcp.json"),
          RUN_DETACH_GRACE_MS: "60000",
          ...modelEnv(fake.url)
        }
        try {
          const first = await startServerProcess(env)
          const before: Array<SseEvent> = []
          const stream = openSse(`${first.url}/api/react`, {
            body: { query: "pay p1", conversation_id: "idem" },
            timeoutMs: 30_000,
            onEvent: (e) => void before.push(e)
          }).catch(() => undefined)
          // the effect is written and the client has the call's start: the tool now sleeps
          await waitUntil(() => attempts().length === 1 && before.some(isToolStart), 20_000, "the tool's effect")
          await first.kill("SIGKILL")
          await stream
          assert.strictEqual(loop.length, 1, "one model request before the kill")
          const start = before.find(isToolStart)!
          const key: string = start.data.idempotency_key
          assert.match(key, /^ik_[0-9a-f]{32}$/)
          assert.strictEqual(start.data.tool_call_id, "call_1_1")

          const second = await startServerProcess({ ...env, PORT: String(first.port) })
          try {
            const after = (await openSse(`${second.url}/api/react/events?conversation_id=idem`, {
              headers: { "last-event-id": before[before.length - 1].id! },
              timeoutMs: 60_000
            })).events
            const ids = [...before, ...after].map((e) => Number(e.id))
            ids.forEach((id, i) => assert.strictEqual(id, i + 1, `event ids continue: ${ids.join(",")}`))
            const done = after[after.length - 1]
            assert.strictEqual(done.event, "done")
            assert.strictEqual(done.data.answer, "Paid once.")
            const toolDone = after.find((e) =>
              e.event === "step" && e.data.type === "iteration" && e.data.status === "done"
            )
            assert.strictEqual(toolDone?.data.observation, "paid p1")
            assert.isNull(toolDone?.data.error)
            assert.isFalse(after.some(isToolStart), "the call's start is not sent again")

            // the tool ran twice, both times with the key the client saw; its effect is stored once
            assert.deepStrictEqual(attempts(), [{ label: "p1", key, fresh: true }, { label: "p1", key, fresh: false }])
            const ledger = openLedger(ledgerFile)
            try {
              assert.deepStrictEqual(ledger.prepare("SELECT key, label FROM ledger").all(), [{ key, label: "p1" }])
            } finally {
              ledger.close()
            }
            // the model was not asked again: the request after the restart carries the stored call and its result
            assert.strictEqual(loop.length, 2)
            const resumed = loop[1].messages as Array<any>
            assert.deepStrictEqual(resumed.flatMap((m: any) => (m.tool_calls ?? []).map((c: any) => c.id)), [
              "call_1_1"
            ])
            assert.deepStrictEqual(toolMessages(loop[1]).map((m: any) => [m.tool_call_id, m.content]), [[
              "call_1_1",
              "paid p1"
            ]])
          } finally {
            await second.kill()
          }
          // the second process claimed the call (the first process's claim was released at its boot) and released it
          const runs = openSqlite(env.DATABASE_PATH)
          try {
            const claims = runs.prepare(
              "SELECT boot, holder, lease_until FROM react_activity_starts WHERE name = 'tool/1/call_1_1'"
            ).all()
            assert.strictEqual(claims.length, 1)
            assert.notStrictEqual(claims[0].holder, claims[0].boot, "held last by the restarted process")
            assert.strictEqual(Number(claims[0].lease_until), 0, "released once the outcome was stored")
          } finally {
            runs.close()
          }
        } finally {
          await fake.close()
        }
      }),
    120_000
  )
})
