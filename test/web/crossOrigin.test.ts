/**
 * Cross-site requests in a real Chromium: a page served from another origin
 * (another port on 127.0.0.1) tries to start a run on the REAL server
 * (test/utils/serverHarness.ts) — a `no-cors` text/plain POST (no preflight), a
 * JSON POST (preflighted), a form submission. None may start a run or store a
 * turn. With that origin in `CORS_ORIGINS`, the same page can run on purpose and
 * read the stream. Nor may it frame the server's page (clickjacking).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { launchBrowser } from "../utils/browser.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { getJson } from "../utils/sse.js"

// test/utils/browser.ts finds a browser (CHROMIUM_PATH, the system chromium, the bundled
// build) and launches it with the usual flags — the same-origin policy stays on.
const launch = launchBrowser

/** A page on its own origin: http://127.0.0.1:<another port>/ */
const attackerSite = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ readonly origin: string; readonly close: () => void }>((resolve) => {
      const server = createServer((_, res) => {
        res.writeHead(200, { "content-type": "text/html" })
        res.end("<!doctype html><title>elsewhere</title><iframe name=sink></iframe>")
      })
      server.listen(0, "127.0.0.1", () =>
        resolve({
          origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
          close: () => server.close()
        }))
    })
  ),
  (site) => Effect.sync(site.close)
)

const answer: FakeOpenAi.FakeResponder = (body) =>
  body?.stream ? FakeOpenAi.sseText("ran on purpose") : FakeOpenAi.completion({ content: "ok" })

describe("a page on another origin", () => {
  it.scopedLive("cannot start a run (no-cors text/plain, preflighted JSON, form post)", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(answer)
      const server = yield* startServer({ llmUrl: fake.url })
      const site = yield* attackerSite
      const browser = yield* launch
      const page = yield* Effect.promise(() => browser.newPage())
      yield* Effect.promise(() => page.goto(site.origin))
      const api = `${server.url}/api/react`
      const outcome = yield* Effect.promise(() =>
        page.evaluate(async (api) => {
          const body = (id: string) => JSON.stringify({ query: "steal", conversation_id: id })
          const out: Record<string, string> = {}
          try {
            const r = await fetch(api, {
              method: "POST",
              mode: "no-cors",
              headers: { "content-type": "text/plain" },
              body: body("csrf-nocors")
            })
            out.noCors = r.type // opaque: the page cannot see the status, the server must refuse it
          } catch (e) {
            out.noCors = `error: ${e}`
          }
          try {
            const r = await fetch(api, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: body("csrf-json")
            })
            out.json = String(r.status)
          } catch (e) {
            out.json = `error: ${e}`
          }
          const form = document.createElement("form")
          form.method = "POST"
          form.action = api
          form.enctype = "text/plain"
          form.target = "sink"
          const field = document.createElement("input")
          field.name = "{\"query\":\"steal\",\"conversation_id\":\"csrf-form\",\"x\":\""
          field.value = "\"}"
          form.appendChild(field)
          document.body.appendChild(form)
          const loaded = new Promise((r) =>
            document.querySelector("iframe")!.addEventListener("load", r, { once: true })
          )
          form.submit()
          await loaded
          return out
        }, api)
      )
      assert.strictEqual(outcome.noCors, "opaque")
      assert.match(outcome.json, /^error: TypeError/, "the preflight is refused")
      yield* Effect.sleep("300 millis")
      const list = yield* Effect.promise(() => getJson(`${server.url}/api/conversations`))
      assert.deepStrictEqual(list.body.conversations, [], "no turn stored")
      assert.strictEqual(fake.requests.length, 0, "no LLM call")
    }), 60_000)

  it.scopedLive("with its origin in CORS_ORIGINS, it can run and read the stream", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(answer)
      const site = yield* attackerSite
      const server = yield* startServer({ llmUrl: fake.url, settings: { corsOrigins: [site.origin] } })
      const browser = yield* launch
      const page = yield* Effect.promise(() => browser.newPage())
      yield* Effect.promise(() => page.goto(site.origin))
      const result = yield* Effect.promise(() =>
        page.evaluate(async (api) => {
          const r = await fetch(api, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ query: "hello", conversation_id: "allowed" })
          })
          return { status: r.status, conversation: r.headers.get("x-conversation-id"), text: await r.text() }
        }, `${server.url}/api/react`)
      )
      assert.strictEqual(result.status, 200)
      assert.strictEqual(result.conversation, "allowed")
      assert.include(result.text, "event: done")
      assert.include(result.text, "ran on purpose")
    }), 60_000)

  it.scopedLive("cannot frame the server's page", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(answer)
      const server = yield* startServer({ llmUrl: fake.url })
      const site = yield* attackerSite
      const browser = yield* launch
      const page = yield* Effect.promise(() => browser.newPage())
      yield* Effect.promise(() => page.goto(site.origin))
      yield* Effect.promise(() =>
        page.evaluate((target) =>
          new Promise<void>((resolve) => {
            const frame = document.querySelector("iframe")!
            frame.addEventListener("load", () => resolve(), { once: true })
            frame.src = target
          }), `${server.url}/`)
      )
      const framed = page.frames().find((f) => f !== page.mainFrame())!
      // a blocked frame shows the browser's error page, not the app
      assert.isNull(yield* Effect.promise(() => framed.$("#composer-input")))
      assert.notStrictEqual(framed.url(), `${server.url}/`)
    }), 60_000)
})
