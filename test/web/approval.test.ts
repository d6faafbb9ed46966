/**
 * Tool approval on the web page in headless Chromium against the REAL
 * server (test/utils/webAppServer.ts): the `approve` script makes two `deploy`
 * calls in one round, each waiting for the user.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { copyFileSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import type { Page } from "playwright-core"
import { Chromium, ChromiumLive, openPage, pw, screenshot } from "../utils/browser.js"
import { webAppServer } from "../utils/webAppServer.js"

const ask = (page: Page, text: string) =>
  pw(async () => {
    await page.fill("#composer-input", text)
    await page.keyboard.press("Enter")
  })

const card = (id: string) => `.turn:last-child .card[data-key="id:${id}"]`

const setup = Effect.gen(function*() {
  const server = yield* webAppServer()
  const browser = yield* Chromium
  const opened = yield* openPage(browser)
  yield* pw(() => opened.page.goto(server.url))
  return { ...server, ...opened }
})

layer(ChromiumLive, { timeout: "60 seconds", excludeTestServices: true })("web page: tool approval", (it) => {
  it.scoped("Approve with the mouse, Deny with a reason from the keyboard; the list says the run waits", () =>
    Effect.gen(function*() {
      const { errors, page } = yield* setup
      yield* ask(page, "approve: deploy to staging and production")
      yield* pw(() => page.waitForSelector(`${card("call_stage")}.awaiting .approval button.approve`))
      yield* pw(() => page.waitForSelector(`${card("call_prod")}.awaiting .approval button.approve`))
      assert.strictEqual(yield* pw(() => page.textContent(`${card("call_stage")} .elapsed`)), "waiting for approval")
      assert.include(yield* pw(() => page.textContent(".turn:last-child .status-line")), "Waiting for your approval")
      // the conversation list marks the waiting run
      yield* pw(() =>
        page.waitForSelector("#conversation-list a[aria-current] .badge.waiting:has-text('Waiting for approval')")
      )
      yield* pw(() => page.locator(`${card("call_stage")}`).scrollIntoViewIfNeeded())
      const shot = yield* screenshot(page, "approval-waiting")
      if (process.env.UPDATE_DOCS_SCREENSHOT === "1") {
        mkdirSync(join(process.cwd(), "docs", "images"), { recursive: true })
        copyFileSync(shot, join(process.cwd(), "docs", "images", "approval.png"))
      }

      yield* pw(() => page.click(`${card("call_stage")} button.approve`))
      yield* pw(() => page.waitForSelector(`${card("call_stage")} .approval-outcome.approved`))
      // keyboard: the reason field, then Tab past Approve to Deny, Enter
      yield* pw(() => page.focus(`${card("call_prod")} .approval-reason`))
      yield* pw(() => page.keyboard.type("not on a Friday"))
      yield* pw(() => page.keyboard.press("Tab"))
      yield* pw(() => page.keyboard.press("Tab"))
      assert.strictEqual(yield* pw(() => page.evaluate(() => document.activeElement?.textContent)), "Deny")
      yield* pw(() => page.keyboard.press("Enter"))
      yield* pw(() => page.waitForSelector(".turn:last-child .run-footer:not([hidden])", { timeout: 20_000 }))

      const stage = yield* pw(() =>
        page.$eval(card("call_stage"), (c) => ({
          ok: c.classList.contains("ok"),
          obs: c.querySelector("pre.observation")?.textContent,
          outcome: c.querySelector(".approval-outcome")?.textContent,
          buttons: c.querySelectorAll(".approval button").length
        }))
      )
      assert.deepStrictEqual(stage, { ok: true, obs: "Deployed to staging.", outcome: "Approved.", buttons: 0 })
      const prod = yield* pw(() =>
        page.$eval(card("call_prod"), (c) => ({
          failed: c.classList.contains("failed"),
          error: c.querySelector("pre.error")?.textContent,
          outcome: c.querySelector(".approval-outcome")?.textContent
        }))
      )
      assert.deepStrictEqual(prod, {
        failed: true,
        error: "the user denied this call: not on a Friday",
        outcome: "Denied: not on a Friday"
      })
      // the run is over: the list no longer says it waits
      yield* pw(() => page.waitForSelector("#conversation-list a[aria-current]:not(:has(.badge.waiting))"))
      assert.deepStrictEqual(errors, [])
    }))

  it.scoped("a reload while a call waits shows the buttons again (the run waited, no client needed); they still work", () =>
    Effect.gen(function*() {
      const { errors, page } = yield* setup
      yield* ask(page, "approve: deploy again")
      yield* pw(() => page.waitForSelector(`${card("call_prod")}.awaiting .approval`))
      yield* pw(() => page.reload())
      yield* pw(() => page.waitForSelector(`${card("call_stage")}.awaiting .approval button.approve`))
      yield* pw(() => page.waitForSelector(`${card("call_prod")}.awaiting .approval button.deny`))
      // one card each, after the replay
      assert.strictEqual(yield* pw(() => page.locator(".turn:last-child .card").count()), 2)
      yield* pw(() => page.click(`${card("call_prod")} button.deny`))
      yield* pw(() => page.click(`${card("call_stage")} button.approve`))
      yield* pw(() => page.waitForSelector(".turn:last-child .run-footer:not([hidden])", { timeout: 20_000 }))
      assert.strictEqual(yield* pw(() => page.textContent(`${card("call_prod")} .approval-outcome`)), "Denied.")
      assert.strictEqual(
        yield* pw(() => page.textContent(`${card("call_stage")} pre.observation`)),
        "Deployed to staging."
      )
      // the only console noise allowed: the 404 of a conversation not stored until its first turn ends
      assert.deepStrictEqual(errors.filter((e) => !e.includes("404")), [])
    }))
})
