/**
 * Slow and numerous clients against the REAL server (test/utils/serverHarness.ts),
 * with raw sockets:
 *
 * - a body or headers sent a byte at a time are cut by `REQUEST_TIMEOUT_MS` /
 *   `HEADERS_TIMEOUT_MS` (408, connection closed), not left open for Node's 300 s;
 * - connections past `MAX_CONNECTIONS` are closed at once;
 * - an SSE client that never reads is dropped once its unread backlog passes
 *   `SSE_MAX_BACKLOG_BYTES`; the run goes on to its end and can be resumed.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as net from "node:net"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { getJson, openSse } from "../utils/sse.js"

interface Trickle {
  readonly closedAfterMs: number | undefined
  readonly response: string
}

/**
 * Sends `head` at once, then `body` one byte per `everyMs`, and reports when (if)
 * the server closed the connection within `watchMs`.
 */
const trickle = (port: number, head: string, body: string, everyMs: number, watchMs: number) =>
  Effect.promise(() =>
    new Promise<Trickle>((resolve) => {
      const started = Date.now()
      const socket = net.connect(port, "127.0.0.1")
      let response = ""
      let i = 0
      const timer = setInterval(() => {
        if (i < body.length && socket.writable) socket.write(body[i++])
      }, everyMs)
      const finish = (closedAfterMs: number | undefined) => {
        clearInterval(timer)
        clearTimeout(watch)
        socket.destroy()
        resolve({ closedAfterMs, response })
      }
      const watch = setTimeout(() => finish(undefined), watchMs)
      socket.on("data", (d) => void (response += d.toString("latin1")))
      socket.on("error", () => undefined)
      socket.on("close", () => finish(Date.now() - started))
      socket.write(head)
    })
  )

const answer: FakeOpenAi.FakeResponder = (body) =>
  body?.stream ? FakeOpenAi.sseText("ok") : FakeOpenAi.completion({ content: "ok" })

const portOf = (url: string) => Number(new URL(url).port)

describe("slow clients and connection limits", () => {
  it.scopedLive("a body sent a byte at a time is cut by REQUEST_TIMEOUT_MS with 408", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(answer)
      const server = yield* startServer({
        llmUrl: fake.url,
        settings: { requestTimeoutMs: 1000, headersTimeoutMs: 1000 }
      })
      const body = JSON.stringify({ query: "x".repeat(40) })
      const head =
        `POST /api/react HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`
      const result = yield* trickle(portOf(server.url), head, body, 100, 6000)
      assert.isDefined(result.closedAfterMs, "the server closed the connection")
      assert.isAtMost(result.closedAfterMs!, 4000)
      assert.match(result.response, /^HTTP\/1\.1 408/)
      assert.strictEqual(fake.requests.length, 0)
    }), 30_000)

  it.scopedLive("headers sent a byte at a time are cut by HEADERS_TIMEOUT_MS", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(answer)
      const server = yield* startServer({
        llmUrl: fake.url,
        settings: { requestTimeoutMs: 10_000, headersTimeoutMs: 800 }
      })
      const result = yield* trickle(
        portOf(server.url),
        "GET /health HTTP/1.1\r\n",
        "Host: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n",
        150,
        6000
      )
      assert.isDefined(result.closedAfterMs, "the server closed the connection")
      assert.isAtMost(result.closedAfterMs!, 4000)
    }), 30_000)

  it.scopedLive(
    "connections past MAX_CONNECTIONS are closed at once; a freed slot is usable again",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(answer)
        const server = yield* startServer({ llmUrl: fake.url, settings: { maxConnections: 3 } })
        const port = portOf(server.url)
        const open = yield* Effect.promise(() =>
          Promise.all([0, 1, 2].map(() =>
            new Promise<net.Socket>((resolve) => {
              const s = net.connect(port, "127.0.0.1", () => resolve(s))
              s.on("error", () => undefined)
            })
          ))
        )
        yield* Effect.sleep("100 millis")
        const extra = yield* trickle(port, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "", 1000, 3000)
        assert.isDefined(extra.closedAfterMs, "the 4th connection was closed")
        assert.strictEqual(extra.response, "", "and not answered")
        open[0].destroy()
        yield* Effect.sleep("100 millis")
        const health = yield* Effect.promise(() => getJson(`${server.url}/health`, { connection: "close" }))
        assert.strictEqual(health.status, 200)
        for (const s of open) s.destroy()
      }),
    30_000
  )

  it.scopedLive(
    "an SSE client that never reads is dropped; the run finishes and can be resumed",
    () =>
      Effect.gen(function*() {
        const piece = "z".repeat(32 * 1024)
        const pieces = 400 // ≈ 13 MB of answer deltas: far more than the socket buffers hold
        const fake = yield* FakeOpenAi.scoped((body) =>
          body?.stream
            ? FakeOpenAi.sse([
              ...Array.from({ length: pieces }, () => FakeOpenAi.chunk.content(piece)),
              FakeOpenAi.chunk.finish("stop")
            ])
            : FakeOpenAi.completion({ content: "ok" })
        )
        const server = yield* startServer({
          llmUrl: fake.url,
          settings: { sseMaxBacklogBytes: 256 * 1024, detachGraceMs: 30_000 }
        })
        const body = JSON.stringify({ query: "a long answer please", conversation_id: "slow-reader" })
        const socket = net.connect(portOf(server.url), "127.0.0.1")
        socket.on("error", () => undefined)
        let received = ""
        let closed = false
        socket.on("close", () => void (closed = true))
        yield* Effect.promise(() =>
          new Promise<void>((resolve) => {
            socket.once("data", (d) => {
              received += d.toString("latin1")
              socket.pause() // from now on, never read
              resolve()
            })
            socket.write(
              `POST /api/react HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`
            )
          })
        )
        assert.match(received, /^HTTP\/1\.1 200/)
        // the run goes on without its reader and ends
        let active = true
        for (let i = 0; i < 200 && active; i++) {
          yield* Effect.sleep("100 millis")
          active = (yield* Effect.promise(() =>
            getJson(`${server.url}/api/conversations/slow-reader`)
          )).body.active !== false
        }
        assert.isFalse(active, "the run ended")
        // what the paused client got: the connection was closed before `done`
        socket.on("data", (d) => void (received += d.toString("latin1")))
        socket.resume()
        for (let i = 0; i < 100 && !closed; i++) yield* Effect.sleep("50 millis")
        assert.isTrue(closed, "the server closed the slow client's connection")
        assert.notInclude(received, "event: done")
        assert.isBelow(received.length, pieces * piece.length)
        // the run is complete in storage and replayable
        const stored = yield* Effect.promise(() => getJson(`${server.url}/api/conversations/slow-reader`))
        assert.strictEqual(stored.body.turn_details[0].status, "completed")
        assert.strictEqual(stored.body.turn_details[0].answer.length, pieces * piece.length)
        const replay = yield* Effect.promise(() =>
          openSse(`${server.url}/api/react/events?conversation_id=slow-reader&after=0`, { timeoutMs: 30_000 })
        )
        assert.strictEqual(replay.events[replay.events.length - 1].event, "done")
      }),
    60_000
  )

  it.scopedLive(
    "a client that reads keeps its stream, also when it is much larger than the bound",
    () =>
      Effect.gen(function*() {
        const piece = "y".repeat(32 * 1024)
        const fake = yield* FakeOpenAi.scoped((body) =>
          body?.stream
            ? FakeOpenAi.sse([
              ...Array.from({ length: 128 }, () => FakeOpenAi.chunk.content(piece)),
              FakeOpenAi.chunk.finish("stop")
            ])
            : FakeOpenAi.completion({ content: "ok" })
        )
        const server = yield* startServer({ llmUrl: fake.url, settings: { sseMaxBacklogBytes: 512 * 1024 } })
        const run = yield* Effect.promise(() =>
          openSse(`${server.url}/api/react`, { body: { query: "long" }, timeoutMs: 30_000 })
        )
        const done = run.events[run.events.length - 1]
        assert.strictEqual(done.event, "done")
        assert.strictEqual(done.data.answer.length, 128 * piece.length)
      }),
    60_000
  )
})
