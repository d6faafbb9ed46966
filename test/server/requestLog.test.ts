/**
 * No credential reaches a log line or a span: the REAL server with `API_TOKEN`
 * and its request logger on, its log output captured by a logfmt logger and its
 * spans by an OpenTelemetry in-memory exporter (@effect/opentelemetry NodeSdk).
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { assert, describe, it } from "@effect/vitest"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { redactUrl } from "../../src/server/RequestLog.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { getJson, openSse } from "../utils/sse.js"

const TOKEN = "s3cr3t-t0ken-value"

describe("RequestLog", () => {
  it("redactUrl replaces credential values and user info, and keeps everything else", () => {
    assert.strictEqual(
      redactUrl("/api/react/events?conversation_id=c1&access_token=abc&after=3"),
      "/api/react/events?conversation_id=c1&access_token=REDACTED&after=3"
    )
    assert.strictEqual(
      redactUrl("/x?access%5Ftoken=abc&API_KEY=k&token&password=p#frag"),
      "/x?access%5Ftoken=REDACTED&API_KEY=REDACTED&token=REDACTED&password=REDACTED#frag"
    )
    assert.strictEqual(redactUrl("http://user:pw@host:1/p?q=1"), "http://REDACTED@host:1/p?q=1")
    assert.strictEqual(redactUrl("/api/conversations/c1"), "/api/conversations/c1")
    assert.strictEqual(redactUrl("/?conversation_id=c&after=1&"), "/?conversation_id=c&after=1&")
  })

  it.scopedLive(
    "with API_TOKEN, neither ?access_token= nor the Authorization header reaches the log or a span",
    () =>
      Effect.gen(function*() {
        const lines: Array<string> = []
        const exporter = new InMemorySpanExporter()
        const capture = Layer.mergeAll(
          Logger.replace(Logger.defaultLogger, Logger.map(Logger.logfmtLogger, (line) => void lines.push(line))),
          NodeSdk.layer(() => ({
            resource: { serviceName: "request-log-test" },
            spanProcessor: new SimpleSpanProcessor(exporter)
          }))
        )
        const fake = yield* FakeOpenAi.scoped((
          body
        ) => (body?.stream ? FakeOpenAi.sseText("ok") : FakeOpenAi.completion({ content: "ok" })))
        const server = yield* startServer({
          llmUrl: fake.url,
          settings: { apiToken: Option.some(Redacted.make(TOKEN)) },
          serve: { disableLogger: false },
          provide: Layer.orDie(capture)
        })
        const bearer = { authorization: `Bearer ${TOKEN}` }
        yield* Effect.promise(async () => {
          const run = await openSse(`${server.url}/api/react`, {
            body: { query: "hi", conversation_id: "logged" },
            headers: bearer
          })
          assert.strictEqual(run.events[run.events.length - 1].event, "done")
          // the documented EventSource route: the token in the query
          const replay = await openSse(
            `${server.url}/api/react/events?conversation_id=logged&after=0&access_token=${TOKEN}`
          )
          assert.strictEqual(replay.status, 200)
          assert.strictEqual((await getJson(`${server.url}/api/conversations?access%5Ftoken=${TOKEN}`)).status, 200)
          assert.strictEqual((await getJson(`${server.url}/api/conversations?access_token=wrong-${TOKEN}`)).status, 401)
          assert.strictEqual(
            (await getJson(`${server.url}/api/conversations`, { authorization: `Bearer wrong-${TOKEN}` })).status,
            401
          )
        })
        // the exporter forgets its spans when the SDK shuts down with the server
        yield* Effect.sleep("200 millis")
        const spans = exporter.getFinishedSpans().filter((s) => s.name.startsWith("http.server"))
        yield* server.stop
        const log = lines.join("\n")
        assert.isAtLeast(lines.filter((l) => l.includes("Sent HTTP response")).length, 5, log)
        assert.include(log, "access_token=REDACTED")
        assert.include(log, "conversation_id=logged")
        assert.notInclude(log, TOKEN)
        assert.isAtLeast(spans.length, 5)
        const attributes = JSON.stringify(spans.map((s) => s.attributes))
        assert.notInclude(attributes, TOKEN)
        assert.include(attributes, "access_token=REDACTED")
        assert.include(attributes, "\"http.request.header.authorization\":\"<redacted>\"")
      }),
    30_000
  )
})
