/**
 * The page's memory panel (docs/web.md, docs/memory.md): the user id field is
 * sent as `user_id` with the run, the panel then shows what the server's
 * memory holds of the user (the remembered turn), and Forget… asks for
 * confirmation before it deletes it. Headless Chromium against the REAL server
 * over a scripted model, its memory in process with the local embedder.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Chromium, ChromiumLive, openPage, pw } from "../utils/browser.js"
import { webAppServer } from "../utils/webAppServer.js"

layer(ChromiumLive, { timeout: "90 seconds", excludeTestServices: true })("the page's memory panel", (it) => {
  it.scoped("a run with the user id is remembered; Forget… asks, then deletes it", () =>
    Effect.gen(function*() {
      const server = yield* webAppServer({ memory: true })
      const browser = yield* Chromium
      const { dialogs, errors, page } = yield* openPage(browser)
      yield* pw(() => page.goto(server.url))
      const status = "#memory-panel .memory-status"
      yield* pw(() => page.waitForFunction((s) => document.querySelector(s)?.textContent?.includes("No user"), status))
      yield* pw(async () => {
        await page.locator("#memory-panel summary").click()
        await page.fill("#memory-panel .memory-user", "ada")
        await page.press("#memory-panel .memory-user", "Enter")
        await page.locator("#memory-panel .memory-user").blur()
      })
      yield* pw(() =>
        page.waitForFunction((s) => document.querySelector(s)?.textContent?.includes("0 remembered turns"), status)
      )
      yield* pw(async () => {
        await page.fill("#composer-input", "full: what about France?")
        await page.keyboard.press("Enter")
      })
      yield* pw(() => page.waitForSelector(".turn:last-child .run-footer:not([hidden])", { timeout: 30_000 }))
      yield* pw(() =>
        page.waitForFunction((s) => document.querySelector(s)?.textContent?.includes("1 remembered turn"), status)
      )
      assert.include(
        yield* pw(() => page.textContent("#memory-panel .memory-items").then((t) => t ?? "")),
        "what about France?"
      )
      const stored = yield* Effect.promise(() => fetch(`${server.url}/api/users/ada/memory`).then((r) => r.json()))
      assert.strictEqual(stored.items.length, 1, "the run was sent with user_id ada")

      // Forget… asks first: dismissed, nothing is deleted; accepted, the memory is gone
      // (the page's dialogs are dismissed unless the test says otherwise)
      yield* pw(() => page.click("#memory-panel .memory-forget"))
      yield* pw(() => page.waitForFunction(() => true))
      yield* Effect.sleep("300 millis")
      assert.deepStrictEqual(dialogs, ["Forget everything remembered about this user (ada)? This cannot be undone."])
      const kept = yield* Effect.promise(() => fetch(`${server.url}/api/users/ada/memory`).then((r) => r.json()))
      assert.strictEqual(kept.items.length, 1, "a dismissed confirmation deletes nothing")
      page.removeAllListeners("dialog")
      page.once("dialog", (dialog) => void dialog.accept())
      yield* pw(() => page.click("#memory-panel .memory-forget"))
      yield* pw(() => page.waitForFunction((s) => document.querySelector(s)?.textContent === "Forgotten.", status))
      const gone = yield* Effect.promise(() => fetch(`${server.url}/api/users/ada/memory`).then((r) => r.json()))
      assert.deepStrictEqual(gone, { working_memory: {}, items: [] })
      assert.deepStrictEqual(errors.filter((e) => !e.includes("404")), [])
    }))
})
