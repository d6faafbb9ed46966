/**
 * Memory across conversations through the server (SPEC §25): the real routes,
 * run registry, durable runs and SQLite file (`sqlite-vec` loaded), the real
 * `openai` SDK for the model (a fake chat-completions server that records
 * every request) and for the embeddings (a fake `/embeddings` that answers
 * base64 as the real API does). Users are validated and own their
 * conversations; a fact of one conversation is in the first model request of
 * the user's next one and never in another user's; `update_memory` changes the
 * next system prompt; an embeddings outage leaves runs answering; a forget
 * leaves no trace in the database files; a fork embeds nothing.
 */
import * as SqliteClient from "@effect/sql-sqlite-node/SqliteClient"
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { existsSync, readFileSync } from "node:fs"
import * as sqliteVec from "sqlite-vec"
import * as Embedder from "../../src/Embedder.js"
import * as SqlMemory from "../../src/server/SqlMemory.js"
import * as FakeEmbeddings from "../utils/fakeEmbeddingsServer.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { getJson, openSse, postJson, type SseEvent } from "../utils/sse.js"

const FACT = "My dog is called Biscuit and she only eats purple carrots"

const lastUser = (body: any): string => {
  const users = (body?.messages ?? []).filter((m: any) => m.role === "user")
  const text = String(users[users.length - 1]?.content ?? "")
  // the synthesis call asks "Question:\n<query>\n\n…"
  return text.startsWith("Question:\n") ? text.slice("Question:\n".length).split("\n\n")[0] : text
}
const toolResults = (body: any) => (body?.messages ?? []).filter((m: any) => m.role === "tool").length

/** The model: `remember …` calls update_memory once; every query is answered `Noted: <query>` by synthesis. */
const model = () =>
  FakeOpenAi.start((body, index) => {
    const query = lastUser(body)
    if (body?.stream) return FakeOpenAi.sseText(`Noted: ${query}`)
    if (query.startsWith("remember ") && toolResults(body) === 0) {
      const [key, value] = query.slice("remember ".length).split("=")
      return FakeOpenAi.completion({
        toolCalls: [{
          id: FakeOpenAi.freshCallId(index),
          name: "update_memory",
          arguments: JSON.stringify({ set: { [key]: value } })
        }]
      })
    }
    return FakeOpenAi.completion({ content: "ok" })
  })

const setup = Effect.gen(function*() {
  const llm = yield* Effect.acquireRelease(Effect.promise(model), (s) => Effect.promise(() => s.close()))
  const embeddings = yield* Effect.acquireRelease(
    Effect.promise(() => FakeEmbeddings.start()),
    (s) => Effect.promise(() => s.close())
  )
  const memory = SqlMemory.layer().pipe(
    Layer.provide(Embedder.layer({ baseURL: embeddings.url, apiKey: "test", model: "fake-embed" }))
  )
  const server = yield* startServer({ llmUrl: llm.url, memory })
  const ask = (body: Record<string, unknown>) =>
    Effect.promise(() => openSse(`${server.url}/api/react`, { body, timeoutMs: 30_000 }))
  return { llm, embeddings, server, ask }
})

const memoryEvents = (events: ReadonlyArray<SseEvent>) => events.filter((e) => e.event === "memory").map((e) => e.data)
const done = (events: ReadonlyArray<SseEvent>) => events.find((e) => e.event === "done")?.data

/** The request bodies the model got for a conversation's run (by its query). */
const requestsFor = (llm: FakeOpenAi.FakeOpenAiServer, query: string) =>
  llm.requests.filter((r) => lastUser(r.body) === query)

describe("memory through the server", () => {
  it.scopedLive("user ids are checked (400 invalid_user_id) and conversations belong to their user (409)", () =>
    Effect.gen(function*() {
      const { ask, llm, server } = yield* setup
      for (const bad of ["", "has space", "x".repeat(129), 42, "semi;colon"]) {
        const refused = yield* ask({ query: "hi", user_id: bad })
        assert.strictEqual(refused.status, 400)
        assert.strictEqual(refused.body.error, "invalid_user_id")
      }
      const chat = yield* Effect.promise(() =>
        postJson(`${server.url}/api/chat`, {
          id: "chat-1",
          user_id: "no spaces",
          messages: [{ id: "m", role: "user", parts: [{ type: "text", text: "hi" }] }]
        })
      )
      assert.strictEqual(chat.status, 400)
      assert.strictEqual(chat.body.error, "invalid_user_id")
      const v1 = yield* Effect.promise(() =>
        postJson(`${server.url}/v1/chat/completions`, {
          model: "react-agent",
          user: "bad user",
          messages: [{ role: "user", content: "hi" }]
        })
      )
      assert.strictEqual(v1.status, 400)
      assert.strictEqual(v1.body.error.code, "invalid_user_id")
      assert.strictEqual(v1.body.error.param, "user")
      assert.strictEqual(llm.requests.length, 0, "no model call for a refused request")

      const first = yield* ask({ query: "hello", conversation_id: "conv-ada", user_id: "ada@example.com" })
      assert.strictEqual(done(first.events)?.answer, "Noted: hello")
      const stolen = yield* ask({ query: "hello", conversation_id: "conv-ada", user_id: "grace" })
      assert.strictEqual(stolen.status, 409)
      assert.strictEqual(stolen.body.error, "conversation_user_mismatch")
      const anonymous = yield* ask({ query: "hello", conversation_id: "conv-ada" })
      assert.strictEqual(anonymous.status, 409)
      const nobodys = yield* ask({ query: "hello", conversation_id: "conv-nobody" })
      assert.strictEqual(done(nobodys.events)?.answer, "Noted: hello")
      const claimed = yield* ask({ query: "hello", conversation_id: "conv-nobody", user_id: "ada@example.com" })
      assert.strictEqual(claimed.status, 409)
      const again = yield* ask({ query: "hello again", conversation_id: "conv-ada", user_id: "ada@example.com" })
      assert.strictEqual(done(again.events)?.answer, "Noted: hello again")
    }))

  it.scopedLive("a fact of one conversation is in the first request of the user's next one, never in another user's", () =>
    Effect.gen(function*() {
      const { ask, embeddings, llm, server } = yield* setup
      yield* ask({ query: FACT, conversation_id: "a1", user_id: "ada" })
      const next = yield* ask({ query: "What does Biscuit eat?", conversation_id: "a2", user_id: "ada" })
      const first = requestsFor(llm, "What does Biscuit eat?")[0]
      assert.include(
        JSON.stringify(first.body.messages[0]),
        FACT,
        "the recalled turn is in the first request's system message"
      )
      assert.include(JSON.stringify(first.body.messages[0]), `Noted: ${FACT}`)
      const recalled = memoryEvents(next.events).find((d) => d.type === "recalled")
      assert.deepStrictEqual(recalled.items.map((i: any) => i.conversation_id), ["a1"])
      assert.notInclude(JSON.stringify(next.events), "purple", "no memory text reaches the SSE frames")

      yield* ask({ query: "What does Biscuit eat, please?", conversation_id: "g1", user_id: "grace" })
      for (const r of requestsFor(llm, "What does Biscuit eat, please?")) {
        assert.notInclude(JSON.stringify(r.body), "purple")
      }
      // the embeddings went through the openai SDK's default base64 encoding
      assert.isTrue(embeddings.requests.every((r) => r.encoding_format === "base64"))
      const known = yield* Effect.promise(() => getJson(`${server.url}/api/users/ada/memory`))
      assert.deepStrictEqual(known.body.items.map((i: any) => i.conversation_id), ["a1", "a2"])
      assert.strictEqual(known.body.items[0].query, FACT)
      const others = yield* Effect.promise(() => getJson(`${server.url}/api/users/grace/memory`))
      assert.deepStrictEqual(others.body.items.map((i: any) => i.conversation_id), ["g1"])
    }))

  it.scopedLive("update_memory changes what the next conversation's system prompt says; an outage leaves runs answering", () =>
    Effect.gen(function*() {
      const { ask, embeddings, llm, server } = yield* setup
      const told = yield* ask({ query: "remember favourite_colour=teal", conversation_id: "u1", user_id: "ada" })
      assert.deepStrictEqual(memoryEvents(told.events).filter((d) => d.type === "updated"), [{
        type: "updated",
        keys: ["favourite_colour"]
      }])
      const known = yield* Effect.promise(() => getJson(`${server.url}/api/users/ada/memory`))
      assert.deepStrictEqual(known.body.working_memory, { favourite_colour: "teal" })
      yield* ask({ query: "what do you know?", conversation_id: "u2", user_id: "ada" })
      const system = JSON.stringify(requestsFor(llm, "what do you know?")[0].body.messages[0])
      assert.include(system, "favourite_colour")
      assert.include(system, "teal")
      // without a user the tool is not there and nothing is recalled
      yield* ask({ query: "anonymous question", conversation_id: "anon-1" })
      const anon = requestsFor(llm, "anonymous question")[0].body
      assert.notInclude(JSON.stringify(anon), "teal")
      assert.isFalse((anon.tools ?? []).some((t: any) => t.function.name === "update_memory"))

      embeddings.down = true
      const down = yield* ask({ query: "still there?", conversation_id: "u3", user_id: "ada" })
      assert.strictEqual(done(down.events)?.answer, "Noted: still there?")
      const unavailable = memoryEvents(down.events).filter((d) => d.type === "unavailable")
      assert.strictEqual(unavailable.length, 2)
      assert.match(unavailable[0].reason, /embeddings failed: 503/)
      // the working memory does not need embeddings: still in the prompt
      assert.include(JSON.stringify(requestsFor(llm, "still there?")[0].body.messages[0]), "teal")
    }))

  it.scopedLive("a forget leaves no trace in the database files; a fork embeds nothing", () =>
    Effect.gen(function*() {
      const { ask, embeddings, llm, server } = yield* setup
      yield* ask({ query: FACT, conversation_id: "f1", user_id: "ada" })
      yield* ask({ query: "What does Biscuit eat?", conversation_id: "f2", user_id: "ada" })
      yield* ask({ query: "A fact of grace: her cat Pixel is grey", conversation_id: "g1", user_id: "grace" })

      // a fork of f2's run at its end: the recall comes from storage, the turn's vector is reused
      const f2 = yield* Effect.promise(() => getJson(`${server.url}/api/conversations/f2`))
      const embeddedBefore = embeddings.texts().length
      const fork = yield* Effect.promise(() =>
        postJson(`${server.url}/api/conversations/f2/fork`, { run_id: f2.body.turn_details[0].run_id })
      )
      assert.strictEqual(fork.status, 201)
      const forked = yield* Effect.promise(() =>
        openSse(`${server.url}/api/react/events?conversation_id=${fork.body.conversation_id}`, { timeoutMs: 30_000 })
      )
      assert.isDefined(done(forked.events))
      assert.strictEqual(embeddings.texts().length, embeddedBefore, "the fork embedded nothing")
      // it recalled what the original recalled (from storage)
      assert.deepStrictEqual(
        memoryEvents(forked.events).find((d) => d.type === "recalled")?.items.map((i: any) => i.conversation_id),
        ["f1"]
      )

      const db = server.databasePath
      const files = () =>
        Buffer.concat([readFileSync(db), existsSync(`${db}-wal`) ? readFileSync(`${db}-wal`) : Buffer.alloc(0)])
      const vectorOf = Effect.gen(function*() {
        const sql = yield* SqliteClient.SqliteClient
        yield* sql.loadExtension(sqliteVec.getLoadablePath())
        const rows = yield* sql<{ e: Uint8Array }>`SELECT v.embedding AS e FROM react_memory_vec_256 v
          JOIN react_memory_items i USING (item_id) WHERE i.query = ${FACT}`
        return rows[0]?.e
      }).pipe(Effect.provide(SqliteClient.layer({ filename: db, readonly: true })), Effect.orDie)
      const vector = yield* vectorOf
      assert.isDefined(vector)
      assert.isTrue(files().includes(Buffer.from("purple carrots")), "the fact is in the files before the forget")
      // its vector too — as pieces of 3 floats: sqlite-vec keeps vectors in chunk blobs that SQLite spreads over
      // overflow pages, so a whole vector need not be contiguous in the file; the vector is sparse, so only the
      // pieces with at least 2 floats that are not 0 are looked for
      const pieces: Array<Buffer> = []
      const floats = new Float32Array(Uint8Array.from(vector!).buffer)
      for (let at = 0; at + 3 <= floats.length; at++) {
        if (floats.subarray(at, at + 3).filter((x) => x !== 0).length >= 2) {
          pieces.push(Buffer.from(vector!.subarray(at * 4, at * 4 + 12)))
        }
      }
      const found = (bytes: Buffer) => pieces.filter((piece) => bytes.includes(piece)).length
      assert.isAtLeast(pieces.length, 4)
      assert.isAtLeast(found(files()), pieces.length / 2, "its vector too")

      const forgot = yield* Effect.promise(() =>
        fetch(`${server.url}/api/users/ada/memory?conversations=true`, { method: "DELETE" }).then((r) => r.status)
      )
      assert.strictEqual(forgot, 204)
      const after = files()
      assert.isFalse(after.includes(Buffer.from("purple carrots")), "no trace of the fact in the database files")
      assert.isFalse(after.includes(Buffer.from("Biscuit")), "nor of the conversations that recalled it")
      assert.strictEqual(found(after), 0, "nor of its vector")
      assert.isTrue(after.includes(Buffer.from("her cat Pixel is grey")), "another user's memory stays")
      const known = yield* Effect.promise(() => getJson(`${server.url}/api/users/ada/memory`))
      assert.deepStrictEqual(known.body, { working_memory: {}, items: [] })
      const gone = yield* Effect.promise(() => getJson(`${server.url}/api/conversations/f1`))
      assert.strictEqual(gone.status, 404)

      const later = yield* ask({ query: "What does Biscuit eat now?", conversation_id: "f3", user_id: "ada" })
      assert.deepStrictEqual(memoryEvents(later.events).find((d) => d.type === "recalled")?.items, [])
      assert.notInclude(JSON.stringify(requestsFor(llm, "What does Biscuit eat now?")[0].body), "purple")
    }))
})
