/**
 * U+0000 and the other text a database cannot store as sent (issue 46 item 8): one behaviour
 * on a SQLite file and on a real PostgreSQL, through the real server process.
 *
 * - A request carrying it — a query (`/api/react`, `/api/chat`, `/v1/chat/completions`), an
 *   injected message, an approval's reason, a fork's `replace_query`, an MCP tool call — is a
 *   400 naming the field and the character: nothing stored, no model called. PostgreSQL
 *   answered an empty 500 with no log line.
 * - A model's answer holding it keeps its turn: the conversation has the exact answer, and the
 *   next turn's history carries it to the model. PostgreSQL lost the turn ("saving the turn failed").
 */
import { afterAll, assert, describe, it } from "@effect/vitest"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { modelEnv } from "../utils/killMatrix.js"
import { findPostgres, type Postgres, startPostgres } from "../utils/postgres.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { openSse } from "../utils/sse.js"

const found = findPostgres()
let pg: Postgres | undefined
afterAll(() => pg?.stop())

const ANSWER = "before\u0000after \ud83d\ude00"

const databases: ReadonlyArray<readonly [string, boolean, () => Promise<Record<string, string>>]> = [
  ["SQLite", false, async () => ({ DATABASE_PATH: join(mkdtempSync(join(tmpdir(), "react-nul-")), "react.sqlite") })],
  ["PostgreSQL", "missing" in found, async () => {
    pg ??= await startPostgres((found as { bin: string }).bin)
    return { DATABASE_URL: pg.createDatabase(`nul_${Date.now()}`) }
  }]
]

const post = (url: string, body: string) =>
  fetch(url, { method: "POST", headers: { "content-type": "application/json", accept: "application/json" }, body })
    .then(async (response) => ({ status: response.status, text: await response.text() }))

describe("text a database cannot store (U+0000, unpaired surrogates)", () => {
  for (const [name, skip, env] of databases) {
    it.skipIf(skip)(
      `${name}: a request carrying it is a 400 naming it; a model's answer carrying it keeps its turn`,
      async () => {
        // streamed requests are the synthesis call (REACT_SYNTHESIS=always): the answer
        const fake = await FakeOpenAi.start((body: { stream?: boolean }) =>
          body.stream === true ? FakeOpenAi.sseText(ANSWER) : FakeOpenAi.completion({ content: "no tool needed" })
        )
        const server = await startServerProcess({ ...(await env()), ...modelEnv(fake.url) })
        try {
          const refused: Array<readonly [string, string, string]> = [
            ["/api/react", `{"query":"a\\u0000b"}`, "query"],
            ["/api/react", `{"query":"a\\ud800b"}`, "query"],
            [
              "/api/chat",
              `{"id":"chat-nul","messages":[{"id":"m1","role":"user","parts":[{"type":"text","text":"x\\u0000"}]}]}`,
              "messages.0.parts.0.text"
            ],
            [
              "/v1/chat/completions",
              `{"model":"react-engine","messages":[{"role":"user","content":"\\u0000"}]}`,
              "messages.0.content"
            ],
            ["/api/react/inject", `{"conversation_id":"c-nul","content":"more\\u0000"}`, "content"],
            [
              "/api/react/approve",
              `{"conversation_id":"c-nul","approval_id":"a1","decision":"deny","reason":"no\\u0000"}`,
              "reason"
            ],
            ["/api/conversations/c-nul/fork", `{"replace_query":"\\u0000"}`, "replace_query"]
          ]
          for (const [path, body, field] of refused) {
            const response = await post(`${server.url}${path}`, body)
            assert.strictEqual(response.status, 400, `${path} ${body}: ${response.text}`)
            assert.include(response.text, field, path)
            assert.match(response.text, /U\+(0000|D800)/, path)
          }
          const mcp = await post(
            `${server.url}/mcp`,
            `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"\\u0000"}}`
          )
          assert.strictEqual(mcp.status, 400, mcp.text)
          assert.include(mcp.text, "U+0000")
          assert.strictEqual(fake.requests.length, 0, "no model was called")
          const listed = await fetch(`${server.url}/api/conversations`).then((r) => r.json()) as {
            conversations: Array<unknown>
          }
          assert.deepStrictEqual(listed.conversations, [], "nothing was stored")

          // the model's answer holds U+0000: the turn is stored whole and goes back to the model as history
          const first = await openSse(`${server.url}/api/react`, {
            body: { query: "first", conversation_id: "c-answer" },
            timeoutMs: 30_000
          })
          assert.strictEqual(first.events.at(-1)?.event, "done")
          assert.strictEqual(first.events.at(-1)?.data.answer, ANSWER)
          const stored = await fetch(`${server.url}/api/conversations/c-answer`)
          assert.strictEqual(stored.status, 200, server.output())
          const detail = await stored.json() as { turn_details: Array<{ answer: string }> }
          assert.deepStrictEqual(detail.turn_details.map((t) => t.answer), [ANSWER])
          const before = fake.requests.length
          const second = await openSse(`${server.url}/api/react`, {
            body: { query: "second", conversation_id: "c-answer" },
            timeoutMs: 30_000
          })
          assert.strictEqual(second.events.at(-1)?.event, "done")
          const asked = fake.requests.slice(before).map((r) => JSON.stringify(r.body))
          assert.isTrue(
            asked.length > 0 && asked.every((text) => text.includes(JSON.stringify(ANSWER).slice(1, -1))),
            "the history carries the exact answer"
          )
          assert.notMatch(server.output(), /saving the turn failed/)
        } finally {
          await server.kill("SIGTERM")
          await fake.close()
        }
      },
      120_000
    )
  }
})
