/**
 * DAG mode out of the box on the web page: headless Chromium against the real
 * server on the offline demo model and the built-in tools
 * (test/utils/demoAppServer.ts) — nothing scripted, no LLM configured. A
 * question with an arithmetic part and a time part is drawn as a plan graph of
 * two parallel step cards, each with its own tool card, and one answer.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Chromium, ChromiumLive, openPage, pw } from "../utils/browser.js"
import { demoAppServer } from "../utils/demoAppServer.js"

layer(ChromiumLive, { timeout: "90 seconds", excludeTestServices: true })(
  "DAG mode on the demo model, on the web page",
  (it) => {
    it.scoped("the plan graph: steps calc and time side by side, each done with its tool, then the answer", () =>
      Effect.gen(function*() {
        // the demo's own pacing (150 ms per call, 15 ms per streamed word): the page renders as it would out of the box
        const { url } = yield* demoAppServer()
        const browser = yield* Chromium
        const { errors, page } = yield* openPage(browser)
        yield* pw(() => page.goto(url))
        yield* pw(() => page.waitForSelector("#demo-banner", { state: "visible" }))
        yield* pw(async () => {
          await page.selectOption("#mode", "dag")
          await page.fill("#composer-input", "What is (17 + 25) * 3 and what time is it in Tokyo?")
          await page.keyboard.press("Enter")
        })
        yield* pw(() => page.waitForSelector(".dag-step[data-step-id='time']", { timeout: 20_000 }))
        yield* pw(() =>
          page.waitForSelector(".turn:last-child > .run > .run-footer:not([hidden])", { timeout: 30_000 })
        )
        const cards = yield* pw(() =>
          page.$$eval(".dag-step", (els) =>
            els.map((c) => ({
              id: c.getAttribute("data-step-id"),
              task: c.querySelector(".dag-task")?.textContent,
              done: c.classList.contains("done"),
              level: c.closest(".dag-level")?.getAttribute("data-level"),
              top: c.getBoundingClientRect().top,
              result: c.querySelector(".dag-result")?.textContent ?? ""
            })))
        )
        assert.deepStrictEqual(cards.map((c) => [c.id, c.level, c.done]), [["calc", "0", true], ["time", "0", true]])
        assert.deepStrictEqual(cards.map((c) => c.task), ["Calculate (17 + 25) * 3", "What time is it in Asia/Tokyo?"])
        assert.approximately(cards[0].top, cards[1].top, 1, "parallel steps side by side")
        assert.include(cards[0].result, "126")
        assert.include(cards[1].result, "Asia/Tokyo")
        // independent steps: no edges
        assert.strictEqual(yield* pw(() => page.locator(".dag-edge").count()), 0)
        // each card opens to its own tool card
        for (const [id, tool] of [["calc", "calculator"], ["time", "current_time"]]) {
          yield* pw(() => page.click(`.dag-step[data-step-id='${id}'] > summary`))
          const name = yield* pw(() => page.textContent(`.dag-step[data-step-id='${id}'] .card .tool-name`))
          assert.strictEqual(name, tool)
        }
        // no fallback to ReAct; one answer with both results
        assert.strictEqual(yield* pw(() => page.locator(".dag-phase.fallback").count()), 0)
        const answer = yield* pw(() => page.textContent(".turn:last-child > .run > .answer"))
        assert.include(answer, "(17 + 25) * 3 = 126")
        assert.include(answer, "The current time in Asia/Tokyo is")
        assert.deepStrictEqual(errors, [])
      }))
  }
)
