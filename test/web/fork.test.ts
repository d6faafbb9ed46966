/**
 * "Fork from here" on the web page (SPEC §22): after a run, a tool card offers
 * the fork; clicking it makes the fork on the server, opens the new
 * conversation, follows its run to the end and shows where it comes from.
 */
import { assert, describe, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Chromium, ChromiumLive, openPage, pw } from "../utils/browser.js"
import { webAppServer } from "../utils/webAppServer.js"

layer(ChromiumLive, { timeout: "90 seconds", excludeTestServices: true })("fork from here", (it) => {
  it.scoped(
    "a finished run's tool card forks the run: the page opens the fork, its run and its origin",
    () =>
      Effect.gen(function*() {
        const server = yield* webAppServer({ demo: true })
        const browser = yield* Chromium
        const { page } = yield* openPage(browser, {})
        yield* pw(() => page.goto(server.url + "/"))
        yield* pw(async () => {
          await page.fill("#composer-input", "full report on France")
          await page.keyboard.press("Enter")
        })
        yield* pw(() => page.waitForSelector(".turn:last-child .run-footer:not([hidden])", { timeout: 30_000 }))
        const original = yield* pw(() => page.evaluate(() => decodeURIComponent(location.hash.replace(/^#c=/, ""))))
        assert.isNotEmpty(original)
        // the button shows once the run is over, on the card of the step it forks at
        const button = yield* pw(() =>
          page.waitForSelector(".turn:last-child .card[data-tool='calculator'] button.fork:not([hidden])", {
            timeout: 10_000
          })
        )
        const at = Number(yield* pw(() => button.getAttribute("data-at")))
        assert.isAbove(at, 0)
        yield* pw(() => button.click())

        // the fork opens: its origin above its turns, its run followed to the end
        const origin = yield* pw(() => page.waitForSelector(".fork-origin", { timeout: 15_000 }))
        assert.strictEqual(
          yield* pw(() => origin.textContent()),
          "Forked from “full report on France” at step 1 · calculator"
        )
        assert.strictEqual(
          yield* pw(() => origin.$eval("a", (a) => a.getAttribute("href"))),
          `#c=${encodeURIComponent(original)}`
        )
        const fork = yield* pw(() => page.evaluate(() => decodeURIComponent(location.hash.replace(/^#c=/, ""))))
        assert.match(fork, /^conv_/)
        assert.notStrictEqual(fork, original)
        yield* pw(() => page.waitForSelector(".turn:last-child .run-footer:not([hidden])", { timeout: 30_000 }))
        const turn = yield* pw(() =>
          page.evaluate(() => {
            const last = document.querySelector(".turn:last-child")!
            return {
              query: last.querySelector(".msg.user .bubble")?.textContent,
              tools: [...last.querySelectorAll(".card")].map((c) => c.getAttribute("data-tool")),
              answer: last.querySelector(".answer")?.textContent ?? ""
            }
          })
        )
        assert.strictEqual(turn.query, "full report on France")
        assert.deepStrictEqual(turn.tools.sort(), ["calculator", "chart", "lookup"])
        assert.include(turn.answer, "people per km²")
        // what the server says about it
        const detail = yield* pw(() =>
          page.evaluate(async (id) => (await fetch(`/api/conversations/${id}`)).json(), fork)
        )
        assert.deepStrictEqual(
          { conversation_id: detail.forked_from.conversation_id, at: detail.forked_from.at },
          { conversation_id: original, at }
        )
        // the original is still there, unforked
        yield* pw(() => origin.$eval("a", (a) => (a as HTMLAnchorElement).click()))
        yield* pw(() => page.waitForFunction((id) => location.hash === `#c=${encodeURIComponent(id)}`, original))
        yield* pw(() => page.waitForSelector(".turn.past", { timeout: 10_000 }))
        assert.strictEqual(yield* pw(() => page.$$eval(".fork-origin", (els) => els.length)), 0)

        // a stored turn's cards fork too (at their call's `iteration done`)
        yield* pw(() => page.click(".turn.past .card[data-tool='calculator'] button.fork"))
        yield* pw(() =>
          page.waitForFunction((ids) => !ids.includes(decodeURIComponent(location.hash.replace(/^#c=/, ""))), [
            original,
            fork
          ])
        )
        const second = yield* pw(() => page.waitForSelector(".fork-origin", { timeout: 15_000 }))
        assert.strictEqual(
          yield* pw(() => second.textContent()),
          "Forked from “full report on France” at step 1 · calculator"
        )
        yield* pw(() => page.waitForSelector(".turn:last-child .run-footer:not([hidden])", { timeout: 30_000 }))
        const again = yield* pw(() => page.evaluate(() => decodeURIComponent(location.hash.replace(/^#c=/, ""))))
        const detail2 = yield* pw(() =>
          page.evaluate(async (id) => (await fetch(`/api/conversations/${id}`)).json(), again)
        )
        assert.deepStrictEqual(
          { conversation_id: detail2.forked_from.conversation_id, at: detail2.forked_from.at },
          { conversation_id: original, at }
        )
      }),
    90_000
  )
})
void describe
