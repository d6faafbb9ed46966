/**
 * Memory across `kill -9` (docs/memory.md): the real server process on a
 * SQLite file, killed (its whole process group) the moment its
 * `update_memory` call has written the update, then restarted on the same
 * file. The update is applied once: one applied key, the key the call carried
 * before the kill (the call re-run after the restart, if its result was not
 * stored yet, carries the same one and finds it applied); the run goes on and
 * ends with `done`; the next conversation's system prompt has the update. The
 * replayed run embeds nothing again: the recall and index steps are stored.
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as FakeEmbeddings from "../utils/fakeEmbeddingsServer.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { assertContinues, modelEnv, resume } from "../utils/killMatrix.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { openSse, type SseEvent } from "../utils/sse.js"

const lastUser = (body: any): string => {
  const users = (body?.messages ?? []).filter((m: any) => m.role === "user")
  const text = String(users[users.length - 1]?.content ?? "")
  return text.startsWith("Question:\n") ? text.slice("Question:\n".length).split("\n\n")[0] : text
}

/** The applied update keys of a user, read from the database file (as another process would). */
const appliedKeys = (filename: string, userId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqliteClient.SqliteClient
    const rows = yield* sql<
      { idempotency_key: string }
    >`SELECT idempotency_key FROM react_memory_updates WHERE user_id = ${userId}`
    return rows.map((row) => row.idempotency_key)
  }).pipe(
    Effect.provide(SqliteClient.layer({ filename, readonly: true })),
    Effect.catchAll(() => Effect.succeed([] as Array<string>))
  )

describe("memory across kill -9 (real server process, SQLite)", () => {
  it.scopedLive(
    "kill -9 during update_memory applies it once; the replayed run embeds nothing again",
    () =>
      Effect.gen(function*() {
        const llm = yield* Effect.acquireRelease(
          Effect.promise(() =>
            FakeOpenAi.start((body, index) => {
              const query = lastUser(body)
              if (body?.stream) return FakeOpenAi.sseText(`Noted: ${query}`)
              const told = (body?.messages ?? []).some((m: any) => m.role === "tool")
              return query.startsWith("remember") && !told
                ? FakeOpenAi.completion({
                  toolCalls: [{
                    id: FakeOpenAi.freshCallId(index),
                    name: "update_memory",
                    arguments: JSON.stringify({ set: { colour: "teal" } })
                  }]
                })
                : FakeOpenAi.completion({ content: "ok" })
            })
          ),
          (s) => Effect.promise(() => s.close())
        )
        const embeddings = yield* Effect.acquireRelease(
          Effect.promise(() => FakeEmbeddings.start()),
          (s) => Effect.promise(() => s.close())
        )
        const databasePath = join(mkdtempSync(join(tmpdir(), "react-memory-kill-")), "react.sqlite")
        const env = {
          ...modelEnv(llm.url),
          DATABASE_PATH: databasePath,
          RUN_DETACH_GRACE_MS: "60000",
          EMBEDDING_BASE_URL: embeddings.url,
          EMBEDDING_API_KEY: "test",
          EMBEDDING_MODEL: "fake-embed"
        }
        const first = yield* Effect.promise(() => startServerProcess(env))
        const seen: Array<SseEvent> = []
        let killedAt = -1
        // the run, read until the kill; the kill lands as soon as the update is in the file
        const reading = Effect.promise(() =>
          openSse(`${first.url}/api/react`, {
            body: { query: "remember that I like teal", conversation_id: "k1", user_id: "ada" },
            timeoutMs: 60_000,
            onEvent: (e) => void seen.push(e)
          }).catch(() => undefined)
        )
        const killer = Effect.gen(function*() {
          for (let i = 0; i < 6000; i++) {
            if ((yield* appliedKeys(databasePath, "ada")).length > 0) {
              killedAt = seen.length
              yield* Effect.promise(() => first.kill("SIGKILL"))
              return
            }
            yield* Effect.sleep("5 millis")
          }
        })
        yield* Effect.all([reading, killer], { concurrency: 2 })
        assert.isAtLeast(killedAt, 0, "the update was written before the kill")
        assert.isUndefined(seen.find((e) => e.event === "done"), "killed before the run ended")
        const embeddedBeforeKill = embeddings.texts().length

        const second = yield* Effect.promise(() => first.restart())
        try {
          const after = yield* Effect.promise(() => resume(second.url, "k1", seen[seen.length - 1]?.id))
          assertContinues(seen, after)
          // the call's start was stored before its update was written (the client may not have read it before the kill)
          const start = [...seen, ...after].find((e) =>
            e.event === "step" && e.data.type === "iteration" && e.data.status === "start"
          )
          assert.strictEqual(start?.data.tool_name, "update_memory")
          assert.isDefined(after.find((e) => e.event === "done"))
          // applied once, under the key the call carried before the kill
          const keys = yield* appliedKeys(databasePath, "ada")
          assert.deepStrictEqual(keys, [start?.data.idempotency_key])
          // the model got one successful update_memory result
          const results = llm.requests.flatMap((r) => (r.body?.messages ?? []).filter((m: any) => m.role === "tool"))
          assert.isTrue(
            results.length > 0 && results.every((m: any) => String(m.content).startsWith("Working memory updated"))
          )
          // the recall step was stored before the kill: the replay embedded only the turn (once)
          assert.strictEqual(
            embeddings.texts().length - embeddedBeforeKill,
            1,
            "after the restart: the turn's text only"
          )
          const next = yield* Effect.promise(() =>
            openSse(`${second.url}/api/react`, {
              body: { query: "what colour do I like?", conversation_id: "k2", user_id: "ada" },
              timeoutMs: 60_000
            })
          )
          assert.isDefined(next.events.find((e) => e.event === "done"))
          const prompt = llm.requests.find((r) => lastUser(r.body) === "what colour do I like?")
          assert.include(JSON.stringify(prompt?.body.messages[0]), "teal")
        } finally {
          yield* Effect.promise(() => second.kill())
        }
      }),
    240_000
  )
})
