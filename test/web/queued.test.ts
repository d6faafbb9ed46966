/**
 * A run that waits for a free slot says so on the page (issue 45 item 1): with one
 * slot taken by another client's run, the page's run shows "Waiting for a free slot
 * (0 ahead)…" from its first event (`phase queued`), and the line goes once the run
 * begins and its own events come. Headless Chromium against the REAL server over a
 * scripted model (test/utils/webAppServer.ts), `REACT_MAX_ACTIVE_RUNS` 1.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Chromium, ChromiumLive, openPage, pw } from "../utils/browser.js"
import { webAppServer } from "../utils/webAppServer.js"

const post = (url: string, body: unknown, signal?: AbortSignal) =>
  Effect.promise(() =>
    fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      ...(signal ? { signal } : {})
    })
  )

layer(ChromiumLive, { timeout: "90 seconds", excludeTestServices: true })(
  "a run waiting for a free slot, on the page",
  (it) => {
    it.scoped("shows its place in the queue until it begins, then the run as usual", () =>
      Effect.gen(function*() {
        const server = yield* webAppServer({ maxActiveRuns: 1 })
        // another client's run takes the only slot: its first model call takes 20 s
        const holder = new AbortController()
        yield* Effect.addFinalizer(() => Effect.sync(() => holder.abort()))
        const held = yield* post(`${server.url}/api/react`, {
          query: "think: hold the slot",
          conversation_id: "holder"
        }, holder.signal)
        assert.strictEqual(held.status, 200)

        const browser = yield* Chromium
        const { page, errors } = yield* openPage(browser)
        yield* pw(() => page.goto(server.url))
        yield* pw(async () => {
          await page.fill("#composer-input", "full: what about France?")
          await page.keyboard.press("Enter")
        })
        const status = ".turn:last-child .status-line"
        yield* pw(() => page.waitForSelector(`${status}:not([hidden])`, { timeout: 20_000 }))
        assert.strictEqual((yield* pw(() => page.textContent(status)))?.trim(), "Waiting for a free slot (0 ahead)…")
        assert.strictEqual(yield* pw(() => page.locator(".turn:last-child .card").count()), 0, "nothing of the run yet")

        // the slot frees: the page's run begins, its waiting line goes, its steps and answer come
        const cancelled = yield* post(`${server.url}/api/react/cancel`, { conversation_id: "holder" })
        assert.strictEqual(cancelled.status, 200)
        yield* pw(() => page.waitForSelector(".turn:last-child .card", { timeout: 30_000 }))
        assert.notInclude(
          yield* pw(() => page.textContent(status).then((t) => t ?? "")),
          "Waiting for a free slot",
          "once the run began"
        )
        yield* pw(() => page.waitForSelector(".turn:last-child .run-footer:not([hidden])", { timeout: 30_000 }))
        assert.isAbove(yield* pw(() => page.locator(".turn:last-child .card").count()), 0, "the run's tool cards")
        assert.notInclude(
          yield* pw(() => page.textContent(".turn:last-child").then((t) => t ?? "")),
          "Waiting for a free slot"
        )
        assert.isFalse(yield* pw(() => page.isVisible(status)), "the status line is gone")
        assert.deepStrictEqual(errors.filter((e) => !e.includes("404")), [])
      }))
  }
)
