import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { get } from "node:http"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { getJson, openSse, postJson } from "../utils/sse.js"

const slowAnswer: FakeOpenAi.FakeResponder = (body) =>
  body?.stream
    ? FakeOpenAi.sse([FakeOpenAi.chunk.content("ok"), FakeOpenAi.chunk.finish("stop")])
    : FakeOpenAi.completion({ content: "ok", delayMs: 1500 })

const paths = (body: any): Array<string> => body.issues.map((i: any) => i.path)

describe("HTTP status codes", () => {
  it.scopedLive("400 names the field; checked before any lookup", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(slowAnswer)
      const { url } = yield* startServer({ llmUrl: fake.url })
      yield* Effect.promise(async () => {
        const badJson = await postJson(`${url}/api/react`, "{not json")
        assert.strictEqual(badJson.status, 400)
        assert.strictEqual(badJson.body.error, "invalid_request")
        assert.include(badJson.body.issues[0].message, "Invalid JSON")

        const notUtf8 = await fetch(`${url}/api/react`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: Buffer.concat([Buffer.from("{\"query\":\""), Buffer.from([0xff, 0xfe]), Buffer.from("\"}")])
        })
        assert.strictEqual(notUtf8.status, 400)
        assert.include((await notUtf8.json()).issues[0].message, "UTF-8")

        const notObject = await postJson(`${url}/api/react`, "[1,2]")
        assert.strictEqual(notObject.status, 400)

        const wrongTypes = await postJson(`${url}/api/react`, { query: 5, max_iterations: "x" })
        assert.strictEqual(wrongTypes.status, 400)
        assert.sameMembers(paths(wrongTypes.body), ["query", "max_iterations"])

        const empty = await postJson(`${url}/api/react`, { query: "   " })
        assert.strictEqual(empty.status, 400)
        assert.deepStrictEqual(paths(empty.body), ["query"])

        const missing = await postJson(`${url}/api/react`, {})
        assert.strictEqual(missing.status, 400)
        assert.deepStrictEqual(paths(missing.body), ["query"])

        const range = await postJson(`${url}/api/react`, { query: "hi", max_iterations: 0 })
        assert.strictEqual(range.status, 400)
        assert.deepStrictEqual(paths(range.body), ["max_iterations"])
        assert.strictEqual(range.body.issues[0].message, "Expected an integer between 1 and 200")
        const tooMany = await postJson(`${url}/api/react`, { query: "hi", max_iterations: 201 })
        assert.deepStrictEqual(paths(tooMany.body), ["max_iterations"])

        const badId = await postJson(`${url}/api/react`, { query: "hi", conversation_id: "bad id/../x" })
        assert.strictEqual(badId.status, 400)
        assert.deepStrictEqual(paths(badId.body), ["conversation_id"])
        // browsers rewrite `.` and `..` path segments: such ids could never be read back
        for (const id of [".", ".."]) {
          const dots = await postJson(`${url}/api/react`, { query: "hi", conversation_id: id })
          assert.strictEqual(dots.status, 400, id)
          assert.deepStrictEqual(paths(dots.body), ["conversation_id"])
          const injectDots = await postJson(`${url}/api/react/inject`, { conversation_id: id, content: "x" })
          assert.strictEqual(injectDots.status, 400, id)
        }
        // sent as is (fetch would normalise it away), an encoded `..` reaches the route as `..`
        const raw = await new Promise<number>((resolve, reject) =>
          get({ host: "127.0.0.1", port: new URL(url).port, path: "/api/conversations/%2e%2e" }, (res) => {
            res.resume()
            resolve(res.statusCode ?? 0)
          }).on("error", reject)
        )
        assert.strictEqual(raw, 400)
        assert.strictEqual((await getJson(`${url}/api/react/events?conversation_id=..`)).status, 400)

        // malformed bodies on routes that look a conversation up: 400, not 404
        const inject = await postJson(`${url}/api/react/inject`, { conversation_id: "nobody", content: 42 })
        assert.strictEqual(inject.status, 400)
        assert.deepStrictEqual(paths(inject.body), ["content"])
        const recall = await postJson(`${url}/api/react/inject/recall`, { conversation_id: "nobody" })
        assert.strictEqual(recall.status, 400)
        assert.deepStrictEqual(paths(recall.body), ["id"])
        const cancel = await postJson(`${url}/api/react/cancel`, "nope")
        assert.strictEqual(cancel.status, 400)
        const events = await getJson(`${url}/api/react/events`)
        assert.strictEqual(events.status, 400)
        assert.deepStrictEqual(paths(events.body), ["conversation_id"])
        const badCursor = await fetch(`${url}/api/react/events?conversation_id=nobody`, {
          headers: { "last-event-id": "abc" }
        })
        assert.strictEqual(badCursor.status, 400)
      })
      assert.strictEqual(fake.requests.length, 0)
    }), 30_000)

  it.scopedLive("404: unknown conversation, nothing to inject into or cancel", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(slowAnswer)
      const { url } = yield* startServer({ llmUrl: fake.url })
      yield* Effect.promise(async () => {
        const conversation = await getJson(`${url}/api/conversations/nobody`)
        assert.strictEqual(conversation.status, 404)
        assert.strictEqual(conversation.body.error, "conversation_not_found")

        const inject = await postJson(`${url}/api/react/inject`, { conversation_id: "nobody", content: "hello" })
        assert.strictEqual(inject.status, 404)
        assert.strictEqual(inject.body.error, "no_active_execution")

        const cancel = await postJson(`${url}/api/react/cancel`, { conversation_id: "nobody" })
        assert.strictEqual(cancel.status, 404)
        assert.strictEqual(cancel.body.error, "no_active_execution")

        const events = await getJson(`${url}/api/react/events?conversation_id=nobody`)
        assert.strictEqual(events.status, 404)
        assert.strictEqual(events.body.error, "conversation_not_found")

        const recall = await postJson(`${url}/api/react/inject/recall`, { conversation_id: "nobody", id: "inj_1" })
        assert.deepStrictEqual([recall.status, recall.body], [200, { recalled: false }])

        const unknownRoute = await getJson(`${url}/api/nothing`)
        assert.strictEqual(unknownRoute.status, 404)
      })
    }), 30_000)

  it.scopedLive("409 for a second run on a conversation with an active run", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(slowAnswer)
      const { url } = yield* startServer({ llmUrl: fake.url })
      yield* Effect.promise(async () => {
        const first = openSse(`${url}/api/react`, { body: { query: "first", conversation_id: "c409" } })
        assert.isTrue(await fake.waitForRequests(1, 5000))
        const second = await postJson(`${url}/api/react`, { query: "second", conversation_id: "c409" })
        assert.strictEqual(second.status, 409)
        assert.strictEqual(second.body.error, "run_in_progress")
        const done = await first
        assert.strictEqual(done.events[done.events.length - 1].event, "done")
        // once the first run is done, the conversation takes a new run
        const third = await openSse(`${url}/api/react`, { body: { query: "third", conversation_id: "c409" } })
        assert.strictEqual(third.status, 200)
        assert.strictEqual(third.events[third.events.length - 1].event, "done")
      })
    }), 30_000)

  it.scopedLive("413 by Content-Length and for chunked bodies, as JSON", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(slowAnswer)
      const { url } = yield* startServer({ llmUrl: fake.url, settings: { maxBodyBytes: 1000 } })
      yield* Effect.promise(async () => {
        const big = await postJson(`${url}/api/react`, { query: "x".repeat(5000) })
        assert.strictEqual(big.status, 413)
        assert.strictEqual(big.body.error, "payload_too_large")

        const chunks = [new TextEncoder().encode(`{"query":"${"y".repeat(800)}`), new TextEncoder().encode(`${"y".repeat(800)}"}`)]
        const stream = new ReadableStream<Uint8Array>({
          start(controller) {
            for (const c of chunks) controller.enqueue(c)
            controller.close()
          }
        })
        const chunked = await fetch(`${url}/api/react`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: stream,
          // @ts-expect-error Node's fetch needs this for stream bodies
          duplex: "half"
        })
        assert.strictEqual(chunked.status, 413)
        assert.strictEqual((await chunked.json()).error, "payload_too_large")

        const small = await postJson(`${url}/api/react/inject`, { conversation_id: "c", content: "fits" })
        assert.strictEqual(small.status, 404)
      })
      assert.strictEqual(fake.requests.length, 0)
    }), 30_000)

  it.scopedLive("401 on every /api route without the bearer token; /health and / stay open", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(slowAnswer)
      const { url } = yield* startServer({
        llmUrl: fake.url,
        settings: { apiToken: Option.some(Redacted.make("s3cret")) }
      })
      yield* Effect.promise(async () => {
        const wrong = { authorization: "Bearer nope" }
        const right = { authorization: "Bearer s3cret" }
        for (const headers of [{}, wrong]) {
          assert.strictEqual((await postJson(`${url}/api/react`, { query: "hi" }, headers)).status, 401)
          // auth comes before validation
          assert.strictEqual((await postJson(`${url}/api/react`, "{bad", headers)).status, 401)
          assert.strictEqual((await postJson(`${url}/api/react/inject`, { conversation_id: "c", content: "x" }, headers)).status, 401)
          assert.strictEqual((await postJson(`${url}/api/react/inject/recall`, { conversation_id: "c", id: "x" }, headers)).status, 401)
          assert.strictEqual((await postJson(`${url}/api/react/cancel`, { conversation_id: "c" }, headers)).status, 401)
          assert.strictEqual((await getJson(`${url}/api/conversations`, headers)).status, 401)
          assert.strictEqual((await getJson(`${url}/api/conversations/c`, headers)).status, 401)
          assert.strictEqual((await getJson(`${url}/api/react/events?conversation_id=c`, headers)).status, 401)
        }
        const unauthorized = await getJson(`${url}/api/conversations`)
        assert.strictEqual(unauthorized.body.error, "unauthorized")
        assert.strictEqual((await getJson(`${url}/health`)).status, 200)
        assert.strictEqual((await fetch(`${url}/`)).status, 200)
        assert.strictEqual((await getJson(`${url}/api/conversations`, right)).status, 200)
        assert.strictEqual((await getJson(`${url}/api/conversations/c`, right)).status, 404)
        // EventSource cannot send headers: ?access_token= works too
        assert.strictEqual((await getJson(`${url}/api/react/events?conversation_id=c&access_token=s3cret`)).status, 404)
        const run = await openSse(`${url}/api/react`, { body: { query: "hi" }, headers: right })
        assert.strictEqual(run.status, 200)
        assert.strictEqual(run.events[run.events.length - 1].event, "done")
      })
    }), 30_000)
})
