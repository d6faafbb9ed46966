/**
 * Fault tests against the real server (test/utils/serverHarness.ts: routes, run
 * registry, SQLite, ReactAgent, the openai-SDK LLM pointed at a fake):
 *
 * - hostile HTTP inputs (huge bodies, deep JSON, wrong types, invalid UTF-8,
 *   header abuse, lying Content-Length, garbage request lines) get a 4xx (or the
 *   connection closed by Node's HTTP parser) and the server stays healthy;
 * - a client that disconnects cancels its run (detach grace 0): the LLM request is
 *   aborted, a running tool is interrupted, and no run stays active.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as net from "node:net"
import * as Tool from "../../src/Tool.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"

const post = (url: string, body: BodyInit, headers: Record<string, string> = { "content-type": "application/json" }) =>
  Effect.promise(async () => {
    const res = await fetch(url, { method: "POST", body, headers })
    return { status: res.status, text: await res.text() }
  })

const health = (base: string) =>
  Effect.promise(async () => {
    const res = await fetch(`${base}/health`)
    return { status: res.status, body: (await res.json()) as { status?: string } }
  })

/**
 * Sends raw bytes on a fresh socket; resolves with the response status, "closed"
 * when the server closed the connection without a response, "waiting" when it is
 * still waiting for bytes the client promised when the client gives up.
 */
const raw = (port: number, payload: string | Buffer, timeoutMs = 5000): Effect.Effect<number | "closed" | "waiting"> =>
  Effect.map(rawLine(port, payload, timeoutMs), (line) => (line === "timeout" ? "waiting" : statusOf(line)))

const rawLine = (port: number, payload: string | Buffer, timeoutMs: number) =>
  Effect.promise(() =>
    new Promise<string>((resolve) => {
      const socket = net.connect(port, "127.0.0.1")
      let data = ""
      const done = (s: string) => {
        clearTimeout(timer)
        socket.destroy()
        resolve(s)
      }
      const timer = setTimeout(() => done(data.split("\r\n")[0] || "timeout"), timeoutMs)
      socket.on("data", (d) => {
        data += d.toString("latin1")
        if (data.includes("\r\n")) done(data.split("\r\n")[0])
      })
      socket.on("error", () => done(data.split("\r\n")[0] || "closed"))
      socket.on("close", () => done(data.split("\r\n")[0] || "closed"))
      socket.write(payload)
    })
  )

const statusOf = (line: string): number | "closed" => {
  const m = /^HTTP\/1\.[01] (\d{3})/.exec(line)
  return m ? Number(m[1]) : "closed"
}

const is4xxOrClosed = (s: number | "closed" | "waiting") =>
  s === "closed" || (typeof s === "number" && s >= 400 && s < 500)

type Hostile = (ctx: { readonly api: string; readonly port: number }) => Effect.Effect<number | "closed" | "waiting">

const status = (e: Effect.Effect<{ readonly status: number }>) => Effect.map(e, (r) => r.status)

const hostile: ReadonlyArray<readonly [string, Hostile]> = [
  ["huge body (2 MB)", ({ api }) => status(post(api, JSON.stringify({ query: "x".repeat(2 * 1024 * 1024) })))],
  ["deeply nested JSON (25k levels)", ({ api }) => status(post(api, "[".repeat(25_000) + "]".repeat(25_000)))],
  ["query is a number", ({ api }) => status(post(api, JSON.stringify({ query: 123 })))],
  ["query is an array", ({ api }) => status(post(api, JSON.stringify({ query: ["a"] })))],
  ["max_iterations is a string", ({ api }) => status(post(api, JSON.stringify({ query: "q", max_iterations: "ten" })))],
  ["max_iterations is huge", ({ api }) => status(post(api, JSON.stringify({ query: "q", max_iterations: 1e308 })))],
  [
    "conversation_id is an object",
    ({ api }) => status(post(api, JSON.stringify({ query: "q", conversation_id: { $gt: "" } })))
  ],
  ["body is null", ({ api }) => status(post(api, "null"))],
  ["body is a JSON string", ({ api }) => status(post(api, "\"query\""))],
  ["body is empty", ({ api }) => status(post(api, ""))],
  ["truncated JSON", ({ api }) => status(post(api, "{\"query\": \"abc"))],
  [
    "__proto__ pollution attempt",
    ({ api }) => status(post(api, "{\"__proto__\": {\"admin\": true}, \"constructor\": {}}"))
  ],
  [
    "lone surrogate escape with a bad field",
    ({ api }) => status(post(api, "{\"query\":\"\\ud800\",\"max_iterations\":\"x\"}"))
  ],
  [
    "inject: wrong types",
    ({ api }) => status(post(`${api}/inject`, JSON.stringify({ conversation_id: 1, content: null })))
  ],
  ["cancel: array body", ({ api }) => status(post(`${api}/cancel`, "[]"))],
  [
    "events: absurd Last-Event-ID",
    ({ api }) =>
      Effect.promise(async () =>
        (await fetch(`${api}/events?conversation_id=nope`, { headers: { "last-event-id": "-1e999" } })).status
      )
  ],
  [
    "header over 16 KB",
    ({ port }) => raw(port, `POST /api/react HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`)
  ],
  [
    "10 000 headers",
    ({ port }) =>
      raw(
        port,
        `POST /api/react HTTP/1.1\r\nHost: x\r\n${
          Array.from({ length: 10_000 }, (_, i) => `X-H${i}: v`).join("\r\n")
        }\r\n\r\n`
      )
  ],
  ["garbage request line", ({ port }) => raw(port, "\u0000\u0001GARBAGE \u00ff\r\n\r\n")],
  [
    "Content-Length lies (claims more than sent)",
    // the server rightly waits for the promised bytes; the client gives up and closes
    ({ port }) =>
      Effect.map(
        raw(
          port,
          "POST /api/react HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{\"query\":\"q\"}",
          1500
        ),
        (s) => (s === "waiting" ? "closed" : s)
      )
  ],
  [
    "two Content-Length headers",
    ({ port }) =>
      raw(
        port,
        "POST /api/react HTTP/1.1\r\nHost: x\r\nContent-Length: 13\r\nContent-Length: 5\r\n\r\n{\"query\":\"q\"}"
      )
  ],
  [
    "Content-Length and chunked together",
    ({ port }) =>
      raw(
        port,
        "POST /api/react HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\nzzzz\r\n"
      )
  ],
  [
    "malformed chunked encoding",
    ({ port }) =>
      raw(
        port,
        "POST /api/react HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nnot-hex\r\n{}\r\n0\r\n\r\n"
      )
  ],
  [
    "invalid UTF-8 bytes in the body",
    ({ api }) =>
      status(
        post(
          api,
          Buffer.concat([Buffer.from("{\"query\":\""), Buffer.from([0xff, 0xfe, 0xc3, 0x28]), Buffer.from("\"}")])
        )
      )
  ],
  [
    "form body on a JSON route",
    ({ api }) => status(post(api, "query=hello", { "content-type": "application/x-www-form-urlencoded" }))
  ],
  [
    "deeply nested object inside a field (5k levels)",
    ({ api }) => status(post(api, `{"query":${"{\"a\":".repeat(5000)}1${"}".repeat(5000)}}`))
  ]
]

const attack = (run: Hostile) =>
  Effect.gen(function*() {
    const fake = yield* FakeOpenAi.scoped(() => FakeOpenAi.completion({ content: "ok" }))
    const server = yield* startServer({ llmUrl: fake.url, settings: { maxBodyBytes: 64 * 1024 } })
    const port = Number(new URL(server.url).port)
    const result = yield* run({ api: `${server.url}/api/react`, port })
    const h = yield* health(server.url)
    assert.strictEqual(h.status, 200, "/health after the request")
    assert.strictEqual(h.body.status, "ok", "/health body after the request")
    assert.isTrue(is4xxOrClosed(result), `expected a 4xx or a closed connection, got ${result}`)
    assert.strictEqual(fake.requests.length, 0, "no LLM work started")
    // and a normal request still runs end to end
    const ok = yield* post(`${server.url}/api/react`, JSON.stringify({ query: "hello" }))
    assert.strictEqual(ok.status, 200)
    assert.include(ok.text, "event: done")
  })

describe("hostile HTTP inputs → 4xx, server stays healthy", () => {
  for (const [name, run] of hostile) it.scopedLive(name, () => attack(run), 30_000)
})

describe("client disconnect", () => {
  it.scopedLive(
    "with detach grace 0 a dropped client cancels its run: LLM request aborted, no active run left",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped([FakeOpenAi.hang])
        const server = yield* startServer({ llmUrl: fake.url, settings: { detachGraceMs: 0 } })
        const controller = new AbortController()
        const response = yield* Effect.promise(() =>
          fetch(`${server.url}/api/react`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ query: "hang please" }),
            signal: controller.signal
          })
        )
        const conversationId = response.headers.get("x-conversation-id")!
        assert.isTrue(yield* Effect.promise(() => fake.waitForRequests(1, 5000)), "the LLM was called")
        controller.abort()
        assert.isTrue(yield* Effect.promise(() => fake.waitForClientAbort(5000)), "the LLM request was aborted")
        // the run is gone: nothing to cancel, nothing to inject into
        let cancel = 0
        for (let i = 0; i < 50; i++) {
          cancel =
            (yield* post(`${server.url}/api/react/cancel`, JSON.stringify({ conversation_id: conversationId }))).status
          if (cancel === 404) break
          yield* Effect.sleep("100 millis")
        }
        assert.strictEqual(cancel, 404)
        const inject = yield* post(
          `${server.url}/api/react/inject`,
          JSON.stringify({ conversation_id: conversationId, content: "x" })
        )
        assert.strictEqual(inject.status, 404)
        assert.strictEqual((yield* health(server.url)).status, 200)
      }),
    30_000
  )

  it.scopedLive("a tool running when the client drops is interrupted", () =>
    Effect.gen(function*() {
      let started = 0
      let interrupted = 0
      let finished = 0
      const slow = Tool.make({
        name: "slow",
        description: "Takes 20 s.",
        parameters: Schema.Struct({}),
        timeout: "60 seconds",
        handler: () =>
          Effect.sync(() => void started++).pipe(
            Effect.zipRight(Effect.sleep("20 seconds")),
            Effect.zipRight(Effect.sync(() => void finished++)),
            Effect.as("done"),
            Effect.onInterrupt(() => Effect.sync(() => void interrupted++))
          )
      })
      const fake = yield* FakeOpenAi.scoped([
        FakeOpenAi.completion({ content: "", toolCalls: [{ id: "call_1", name: "slow", arguments: "{}" }] })
      ])
      const server = yield* startServer({ llmUrl: fake.url, settings: { detachGraceMs: 0 }, tools: [slow] })
      const controller = new AbortController()
      const response = yield* Effect.promise(() =>
        fetch(`${server.url}/api/react`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ query: "run the slow tool" }),
          signal: controller.signal
        })
      )
      assert.strictEqual(response.status, 200)
      for (let i = 0; i < 100 && started === 0; i++) yield* Effect.sleep("50 millis")
      assert.strictEqual(started, 1, "the tool started")
      controller.abort()
      for (let i = 0; i < 100 && interrupted === 0; i++) yield* Effect.sleep("50 millis")
      assert.strictEqual(interrupted, 1, "the tool was interrupted")
      assert.strictEqual(finished, 0)
      assert.strictEqual((yield* health(server.url)).status, 200)
    }), 30_000)
})
