/**
 * The run's cassette link on the web page: after a run its footer offers the
 * download, and what the link serves is that run's cassette.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Chromium, ChromiumLive, openPage, pw } from "../utils/browser.js"
import { webAppServer } from "../utils/webAppServer.js"

layer(ChromiumLive, { timeout: "60 seconds", excludeTestServices: true })("cassette link", (it) => {
  it.scoped("a finished run's footer links to its cassette, which downloads as a cassette of that run", () =>
    Effect.gen(function*() {
      const server = yield* webAppServer({ demo: true })
      const browser = yield* Chromium
      const { page } = yield* openPage(browser, {})
      yield* pw(() => page.goto(server.url + "/"))
      yield* pw(async () => {
        await page.fill("#composer-input", "What is 6 * 7?")
        await page.keyboard.press("Enter")
      })
      const link = yield* pw(() =>
        page.waitForSelector(".turn:last-child .run-footer:not([hidden]) a.cassette", { timeout: 30_000 })
      )
      const href = yield* pw(() => link.getAttribute("href"))
      assert.match(href ?? "", /^\/api\/conversations\/[^/]+\/runs\/latest\/cassette$/)
      assert.strictEqual(yield* pw(() => link.getAttribute("download")), "")
      const cassette = yield* pw(() =>
        page.evaluate(async (url) => {
          const res = await fetch(url)
          return { status: res.status, body: await res.json() }
        }, href!)
      )
      assert.strictEqual(cassette.status, 200)
      assert.strictEqual(cassette.body.format, "react-engine-cassette")
      assert.strictEqual(cassette.body.input.query, "What is 6 * 7?")
      assert.strictEqual(cassette.body.events[cassette.body.events.length - 1]._tag, "Done")
      assert.isAbove(cassette.body.model_calls.length, 0)
    }))
})
void describe
