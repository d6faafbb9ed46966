/**
 * Browser safety of the REAL server (test/utils/serverHarness.ts), with raw
 * `node:http` requests so that `Host` and `Origin` can be set freely:
 * JSON-only bodies (415), foreign origins refused (403) with real CORS answers
 * for `CORS_ORIGINS`, and Host names other than loopback / the bound address
 * refused on a loopback server (421), `ALLOWED_HOSTS` widening it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import { request as httpRequest } from "node:http"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"

interface Reply {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly text: string
}

/** One request with exactly these headers (no `Host` added unless given). */
const send = (
  base: string,
  options: {
    readonly method?: string
    readonly path: string
    readonly headers?: Record<string, string>
    readonly body?: string
  }
) =>
  Effect.promise(() =>
    new Promise<Reply>((resolve, reject) => {
      const url = new URL(base)
      const req = httpRequest({
        host: "127.0.0.1",
        port: Number(url.port),
        method: options.method ?? (options.body === undefined ? "GET" : "POST"),
        path: options.path,
        setHost: false,
        headers: { host: url.host, ...options.headers }
      }, (res) => {
        const parts: Array<Buffer> = []
        res.on("data", (c: Buffer) => parts.push(c))
        res.on(
          "end",
          () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(parts).toString("utf8") })
        )
      })
      req.on("error", reject)
      req.end(options.body)
    })
  )

const answer: FakeOpenAi.FakeResponder = (body) =>
  body?.stream ? FakeOpenAi.sseText("ok") : FakeOpenAi.completion({ content: "ok" })

const json = { "content-type": "application/json" }
const run = (conversation: string) => JSON.stringify({ query: "hi", conversation_id: conversation })

const storedIds = (base: string) =>
  Effect.map(send(base, { path: "/api/conversations" }), (r) => JSON.parse(r.text).conversations.map((c: any) => c.id))

describe("browser safety", () => {
  it.scopedLive(
    "bodies must be application/json: text/plain, form and multipart bodies get 415 and start nothing",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(answer)
        const { url } = yield* startServer({ llmUrl: fake.url })
        for (const type of ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""]) {
          const reply = yield* send(url, {
            path: "/api/react",
            headers: type === "" ? {} : { "content-type": type },
            body: run("c415")
          })
          assert.strictEqual(reply.status, 415, type)
          assert.strictEqual(JSON.parse(reply.text).error, "unsupported_media_type")
        }
        for (const path of ["/api/react/inject", "/api/react/inject/recall", "/api/react/cancel"]) {
          const reply = yield* send(url, { path, headers: { "content-type": "text/plain" }, body: "{}" })
          assert.strictEqual(reply.status, 415, path)
        }
        assert.strictEqual(fake.requests.length, 0)
        assert.deepStrictEqual(yield* storedIds(url), [])
        // parameters are fine
        const ok = yield* send(url, {
          path: "/api/react",
          headers: { "content-type": "Application/JSON; charset=utf-8" },
          body: run("c200")
        })
        assert.strictEqual(ok.status, 200)
        assert.include(ok.text, "event: done")
      }),
    30_000
  )

  it.scopedLive(
    "a foreign Origin is refused with 403 on every route; the server's own origin passes",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(answer)
        const { url } = yield* startServer({
          llmUrl: fake.url,
          settings: { apiToken: Option.some(Redacted.make("tok")) }
        })
        const auth = { authorization: "Bearer tok" }
        for (const origin of ["http://evil.example", "null", "http://127.0.0.1:1"]) {
          const post = yield* send(url, {
            path: "/api/react",
            headers: { ...json, ...auth, origin },
            body: run("csrf")
          })
          assert.strictEqual(post.status, 403, origin)
          assert.strictEqual(JSON.parse(post.text).error, "origin_not_allowed")
          assert.isUndefined(post.headers["access-control-allow-origin"])
          // before auth: the refusal does not depend on the token
          assert.strictEqual((yield* send(url, { path: "/api/conversations", headers: { origin } })).status, 403)
          assert.strictEqual(
            (yield* send(url, { path: "/api/conversations", headers: { ...auth, origin } })).status,
            403
          )
          const preflight = yield* send(url, {
            method: "OPTIONS",
            path: "/api/react",
            headers: {
              origin,
              "access-control-request-method": "POST",
              "access-control-request-headers": "content-type"
            }
          })
          assert.strictEqual(preflight.status, 403)
          assert.isUndefined(preflight.headers["access-control-allow-origin"])
        }
        assert.strictEqual(fake.requests.length, 0)
        const own = yield* send(url, {
          path: "/api/react",
          headers: { ...json, ...auth, origin: url },
          body: run("mine")
        })
        assert.strictEqual(own.status, 200)
        assert.include(own.text, "event: done")
        const viaLocalhost = yield* send(url, {
          path: "/api/conversations",
          headers: { ...auth, host: `localhost:${new URL(url).port}`, origin: `http://localhost:${new URL(url).port}` }
        })
        assert.strictEqual(viaLocalhost.status, 200)
        assert.deepStrictEqual(JSON.parse(viaLocalhost.text).conversations.map((c: any) => c.id), ["mine"])
      }),
    30_000
  )

  it.scopedLive(
    "CORS_ORIGINS: an allowed origin gets a preflight answer and CORS headers, and can run",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(answer)
        const app = "http://app.example:8080"
        const { url } = yield* startServer({ llmUrl: fake.url, settings: { corsOrigins: [app] } })
        const preflight = yield* send(url, {
          method: "OPTIONS",
          path: "/api/react",
          headers: {
            origin: app,
            "access-control-request-method": "POST",
            "access-control-request-headers": "content-type,authorization"
          }
        })
        assert.strictEqual(preflight.status, 204)
        assert.strictEqual(preflight.headers["access-control-allow-origin"], app)
        assert.include(String(preflight.headers["access-control-allow-methods"]), "POST")
        assert.include(String(preflight.headers["access-control-allow-headers"]), "content-type")
        assert.include(String(preflight.headers["access-control-allow-headers"]), "authorization")
        assert.include(String(preflight.headers["vary"]), "Origin")
        const post = yield* send(url, { path: "/api/react", headers: { ...json, origin: app }, body: run("cors") })
        assert.strictEqual(post.status, 200)
        assert.strictEqual(post.headers["access-control-allow-origin"], app)
        assert.include(String(post.headers["access-control-expose-headers"]), "x-conversation-id")
        assert.include(post.text, "event: done")
        // still JSON only, and other origins still refused
        assert.strictEqual(
          (yield* send(url, {
            path: "/api/react",
            headers: { "content-type": "text/plain", origin: app },
            body: run("x")
          })).status,
          415
        )
        assert.strictEqual(
          (yield* send(url, {
            path: "/api/react",
            headers: { ...json, origin: "http://app.example:8081" },
            body: run("y")
          })).status,
          403
        )
      }),
    30_000
  )

  it.scopedLive(
    "the page may not be framed by another site: CSP frame-ancestors 'none' and X-Frame-Options DENY",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(answer)
        const { url } = yield* startServer({ llmUrl: fake.url })
        const page = yield* send(url, { path: "/" })
        assert.strictEqual(page.status, 200)
        assert.include(String(page.headers["content-security-policy"]), "frame-ancestors 'none'")
        assert.strictEqual(page.headers["x-frame-options"], "DENY")
      }),
    30_000
  )

  it.scopedLive(
    "DNS rebinding: on a loopback server a foreign Host gets 421 everywhere; loopback names pass",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(answer)
        const { url } = yield* startServer({ llmUrl: fake.url })
        const port = new URL(url).port
        yield* send(url, { path: "/api/react", headers: json, body: run("secret-talk") })
        for (
          const host of [
            `attacker.example:${port}`,
            "attacker.example",
            `127.0.0.1.attacker.example:${port}`,
            "x@127.0.0.1",
            ""
          ]
        ) {
          for (const path of ["/api/conversations", "/api/conversations/secret-talk", "/health", "/"]) {
            const reply = yield* send(url, { path, headers: { host } })
            assert.strictEqual(reply.status, 421, `${host} ${path}`)
            assert.notInclude(reply.text, "secret-talk")
          }
        }
        const rebound = yield* send(url, {
          path: "/api/react",
          headers: { ...json, host: `attacker.example:${port}` },
          body: run("rb")
        })
        assert.strictEqual(rebound.status, 421)
        assert.strictEqual(JSON.parse(rebound.text).error, "host_not_allowed")
        for (
          const host of [
            `127.0.0.1:${port}`,
            `localhost:${port}`,
            "localhost",
            `app.localhost:${port}`,
            `[::1]:${port}`,
            `127.0.0.2:${port}`
          ]
        ) {
          assert.strictEqual((yield* send(url, { path: "/api/conversations", headers: { host } })).status, 200, host)
        }
        assert.deepStrictEqual(yield* storedIds(url), ["secret-talk"])
      }),
    30_000
  )

  it.scopedLive(
    "ALLOWED_HOSTS widens the Host check; a non-loopback binding without it accepts any Host",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(answer)
        const proxied = yield* startServer({
          llmUrl: fake.url,
          settings: { allowedHosts: ["agent.example.com", ".corp.example"] }
        })
        for (
          const [host, status] of [["agent.example.com", 200], ["a.corp.example:443", 200], ["corp.example", 200], [
            "evil.example",
            421
          ], ["example.com", 421]] as const
        ) {
          assert.strictEqual((yield* send(proxied.url, { path: "/health", headers: { host } })).status, status, host)
        }
        // bound to every interface (as far as the policy knows) and no list: no Host check
        const open = yield* startServer({ llmUrl: fake.url, settings: { host: "0.0.0.0" } })
        assert.strictEqual(
          (yield* send(open.url, { path: "/health", headers: { host: "anything.example" } })).status,
          200
        )
        const restricted = yield* startServer({
          llmUrl: fake.url,
          settings: { host: "0.0.0.0", allowedHosts: ["agent.example.com"] }
        })
        assert.strictEqual(
          (yield* send(restricted.url, { path: "/health", headers: { host: "anything.example" } })).status,
          421
        )
        assert.strictEqual(
          (yield* send(restricted.url, { path: "/health", headers: { host: "agent.example.com" } })).status,
          200
        )
      }),
    30_000
  )
})
