/**
 * Attachments survive `kill -9` (SPEC §24, §14): an upload answered 201 is in
 * the database before the answer, so a crash right after loses nothing; a run
 * killed while its tool runs resumes after the restart and its next model
 * request carries the same image, read from the database (the run's stored
 * steps and its payload hold only the reference). The bytes never reach the
 * server's log (its processes' whole output is read). The real server process
 * on SQLite, killed with SIGKILL; the model fake counts its requests.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Files from "../utils/attachmentFiles.js"
import { rows } from "../utils/attachmentRows.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { sqliteSetup, toolMessages, waitUntil } from "../utils/killMatrix.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { openSse } from "../utils/sse.js"

const PNG = Files.png(24, 12, [0, 200, 0])
const DATA_URL = `data:image/png;base64,${Buffer.from(PNG).toString("base64")}`

/** The image_url parts of a request. */
const images = (body: any): Array<string> =>
  (body?.messages ?? []).flatMap((m: any) => (Array.isArray(m.content) ? m.content : []))
    .filter((p: any) => p.type === "image_url").map((p: any) => p.image_url.url)

describe("attachments across kill -9 (SQLite)", () => {
  it.live(
    "an upload survives a kill; a run killed mid-tool resumes with the same attachment",
    () =>
      Effect.promise(async () => {
        const fake = await FakeOpenAi.start((body, index) => {
          if (body?.stream) return FakeOpenAi.sseText("A green bar.")
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
        let server = await startServerProcess(s.env)
        const logs: Array<string> = []
        try {
          const uploaded = await fetch(`${server.url}/api/attachments?name=bar.png`, {
            method: "POST",
            headers: { "content-type": "image/png" },
            body: Buffer.from(PNG)
          }).then(async (r) => ({ status: r.status, body: await r.json() as any }))
          assert.strictEqual(uploaded.status, 201)
          // killed right after the answer: the bytes are stored already
          await server.kill()
          logs.push(server.output())
          server = await server.restart()
          const conversation = "attached-kill"
          const first = openSse(`${server.url}/api/react`, {
            body: {
              query: "What is in the picture?",
              conversation_id: conversation,
              attachments: [{ attachment_id: uploaded.body.attachment_id }]
            },
            timeoutMs: 60_000
          }).catch(() => undefined)
          await waitUntil(() => s.records().includes("start slow"), 30_000, "the slow tool to start")
          assert.strictEqual(fake.requests.length, 1)
          assert.deepStrictEqual(images(fake.requests[0].body), [DATA_URL])
          // killed while its tool runs
          await server.kill()
          await first
          logs.push(server.output())
          server = await server.restart()
          const after = await openSse(`${server.url}/api/react/events?conversation_id=${conversation}`, {
            timeoutMs: 60_000
          })
          assert.strictEqual(after.events.at(-1)?.event, "done")
          assert.isTrue(after.events.some((e) => e.event === "phase" && e.data.phase === "resumed"))
          // the model was not asked again for the reply it gave; the next request has the image, from the database
          const next = fake.requests.slice(1)
          assert.isAtLeast(next.length, 1)
          assert.deepStrictEqual(images(next[0].body), [DATA_URL])
          assert.strictEqual(toolMessages(next[0].body).length, 1)
          assert.strictEqual(await Effect.runPromise(rows(s.databasePath)), 1)
          // the replayed first event names the attachment by hash
          const replay = await openSse(`${server.url}/api/react/events?conversation_id=${conversation}&after=0`, {
            timeoutMs: 30_000
          })
          assert.deepStrictEqual(replay.events[0].data.attachments, [
            { name: "bar.png", media_type: "image/png", size: PNG.length, sha256: uploaded.body.sha256 }
          ])
          // the whole output of the three processes never holds the bytes
          logs.push(server.output())
          const log = logs.join("\n")
          assert.include(log, "listening")
          assert.notInclude(log, DATA_URL.slice(40, 80))
          assert.notInclude(log, DATA_URL.slice(-40))
        } finally {
          await server.kill()
          await fake.close()
        }
      }),
    180_000
  )
})
