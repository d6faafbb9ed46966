import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { get, request } from "node:http"
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

        const chunks = [
          new TextEncoder().encode(`{"query":"${"y".repeat(800)}`),
          new TextEncoder().encode(`${"y".repeat(800)}"}`)
        ]
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

  it.scopedLive(
    "401 on every /api route without the bearer token; /health and / stay open",
    () =>
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
            assert.strictEqual(
              (await postJson(`${url}/api/react/inject`, { conversation_id: "c", content: "x" }, headers)).status,
              401
            )
            assert.strictEqual(
              (await postJson(`${url}/api/react/inject/recall`, { conversation_id: "c", id: "x" }, headers)).status,
              401
            )
            assert.strictEqual(
              (await postJson(`${url}/api/react/cancel`, { conversation_id: "c" }, headers)).status,
              401
            )
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
          assert.strictEqual(
            (await getJson(`${url}/api/react/events?conversation_id=c&access_token=s3cret`)).status,
            404
          )
          const run = await openSse(`${url}/api/react`, { body: { query: "hi" }, headers: right })
          assert.strictEqual(run.status, 200)
          assert.strictEqual(run.events[run.events.length - 1].event, "done")
        })
      }),
    30_000
  )
})

const quickAnswer: FakeOpenAi.FakeResponder = (body) =>
  body?.stream
    ? FakeOpenAi.sse([FakeOpenAi.chunk.content("ok"), FakeOpenAi.chunk.finish("stop")])
    : FakeOpenAi.completion({ content: "ok" })

/** A raw request (fetch cannot send every method or an unnormalised path). */
const raw = (url: string, method: string, path: string) =>
  new Promise<{ status: number; contentType: string; body: any }>((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port: new URL(url).port, path, method }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        let body: any = text
        try {
          body = JSON.parse(text)
        } catch {
          // not JSON
        }
        resolve({ status: res.statusCode ?? 0, contentType: String(res.headers["content-type"] ?? ""), body })
      })
    })
    req.on("error", reject)
    req.end()
  })

describe("404 and cursors: the documented JSON error shape", () => {
  it.scopedLive(
    "every 404 is a JSON error: unknown routes, unknown methods, /v1 in OpenAI's shape; ids of any length reach their route",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(slowAnswer)
        const { url } = yield* startServer({ llmUrl: fake.url })
        yield* Effect.promise(async () => {
          for (
            const [method, path] of [
              ["GET", "/api/nothing"],
              ["GET", "/nothing.html"],
              ["GET", "/assets/nothing.js"],
              ["POST", "/api/conversations"],
              ["DELETE", "/api/react"],
              ["PUT", "/api/conversations/c1"],
              ["GET", "/api/react/inject"],
              ["POST", "/health"]
            ] as const
          ) {
            const res = await raw(url, method, path)
            assert.strictEqual(res.status, 404, `${method} ${path}`)
            assert.match(res.contentType, /^application\/json/, `${method} ${path}`)
            assert.deepStrictEqual(res.body, {
              error: "not_found",
              message: `No route for ${method} ${path}`,
              method,
              path
            })
          }
          // the query (it may carry access_token) is not echoed
          const withToken = await raw(url, "GET", "/api/nothing?access_token=s3cret")
          assert.strictEqual(withToken.status, 404)
          assert.notInclude(JSON.stringify(withToken.body), "s3cret")
          // HEAD: same status, no body
          assert.strictEqual((await raw(url, "HEAD", "/api/nothing")).status, 404)

          const openAi = await raw(url, "GET", "/v1/nothing")
          assert.strictEqual(openAi.status, 404)
          assert.match(openAi.contentType, /^application\/json/)
          assert.deepStrictEqual(openAi.body, {
            error: {
              message: "No route for GET /v1/nothing",
              type: "invalid_request_error",
              param: null,
              code: "not_found"
            }
          })

          // a valid id of 101-128 characters is looked up (the router's default cut params at 100)
          const longValid = "a".repeat(128)
          const found = await raw(url, "GET", `/api/conversations/${longValid}`)
          assert.deepStrictEqual([found.status, found.body.error], [404, "conversation_not_found"])
          // a 5,000-character id is an invalid id: 400 naming it, as on every route
          const tooLong = await raw(url, "GET", `/api/conversations/${"a".repeat(5000)}`)
          assert.strictEqual(tooLong.status, 400)
          assert.match(tooLong.contentType, /^application\/json/)
          assert.strictEqual(tooLong.body.error, "invalid_request")
          assert.deepStrictEqual(paths(tooLong.body), ["id"])
          const chat = await raw(url, "GET", `/api/chat/${"a".repeat(5000)}/stream`)
          assert.deepStrictEqual([chat.status, chat.body.error], [400, "invalid_request"])
          const model = await raw(url, "GET", `/v1/models/${"m".repeat(5000)}`)
          assert.strictEqual(model.status, 404)
          assert.strictEqual(model.body.error.code, "model_not_found")
        })
        assert.strictEqual(fake.requests.length, 0)
      }),
    30_000
  )

  it.scopedLive(
    "after= and Last-Event-ID take plain decimal integers only; anything else is a 400, never another cursor",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(quickAnswer)
        const { url } = yield* startServer({ llmUrl: fake.url })
        yield* Effect.promise(async () => {
          const run = await openSse(`${url}/api/react`, { body: { query: "hi", conversation_id: "cursor1" } })
          assert.strictEqual(run.events[run.events.length - 1].event, "done")
          const last = Number(run.events[run.events.length - 1].id)
          assert.isAbove(last, 3)
          const events = `${url}/api/react/events?conversation_id=cursor1`

          // valid cursors: the frames after it, or 204 past the end
          const fromTwo = await openSse(`${events}&after=2`)
          assert.deepStrictEqual(fromTwo.events.map((e) => e.id), run.events.slice(2).map((e) => e.id))
          const fromHeader = await openSse(events, { headers: { "last-event-id": "2" } })
          assert.deepStrictEqual(fromHeader.events.map((e) => e.id), run.events.slice(2).map((e) => e.id))
          assert.strictEqual((await openSse(`${events}&after=0`)).events.length, run.events.length)
          assert.strictEqual((await fetch(`${events}&after=${last}`)).status, 204)
          assert.strictEqual((await fetch(`${events}&after=9007199254740991`)).status, 204)

          // `Number()` reads these as other cursors (0x10 = 16, 1e3 = 1000, 0b1 = 1, " 2" = 2 …)
          const invalid = [
            "0x10",
            "1e3",
            "0b1",
            "0o7",
            "+1",
            "-1",
            "01",
            "1.0",
            "1.5",
            "2 ",
            "Infinity",
            "9007199254740992",
            "1_000",
            ""
          ]
          for (const value of invalid) {
            const q = await getJson(`${events}&after=${encodeURIComponent(value)}`)
            assert.strictEqual(q.status, 400, `after=${JSON.stringify(value)}`)
            assert.strictEqual(q.body.error, "invalid_request")
            assert.deepStrictEqual(paths(q.body), ["after"], value)
          }
          // an empty Last-Event-ID is no header (what EventSource sends before any id)
          for (const value of invalid.filter((v) => v.trim() !== "" && v !== "2 ")) {
            const h = await getJson(events, { "last-event-id": value })
            assert.strictEqual(h.status, 400, `Last-Event-ID: ${value}`)
            assert.deepStrictEqual(paths(h.body), ["Last-Event-ID"], value)
            assert.include(h.body.issues[0].message, "decimal")
          }
        })
      }),
    30_000
  )
})
