/**
 * The web page in headless Chromium against the REAL server (routes, run
 * registry, SSE, SQLite store, agent loop, tools) over a scripted model with
 * delays (test/utils/webAppServer.ts).
 */
import { assert, describe, layer } from "@effect/vitest"
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

const waitDone = (page: Page, timeout = 20_000) =>
  pw(() => page.waitForSelector(".turn:last-child .run-footer:not([hidden])", { timeout }))

/** Every card key appears once: no duplicate cards after replays. */
const cardKeys = (page: Page) =>
  pw(() => page.$$eval(".turn:last-child .card", (cards) => cards.map((c) => c.getAttribute("data-key") ?? "")))

const setup = (
  options: {
    readonly demo?: boolean
    readonly apiToken?: string
    readonly path?: string
    readonly width?: number
    readonly height?: number
    readonly colorScheme?: "light" | "dark"
  } = {}
) =>
  Effect.gen(function*() {
    const server = yield* webAppServer({
      demo: options.demo ?? false,
      ...(options.apiToken ? { apiToken: options.apiToken } : {})
    })
    const browser = yield* Chromium
    const opened = yield* openPage(browser, options)
    yield* pw(() => opened.page.goto(server.url + (options.path ?? "/")))
    return { ...server, ...opened }
  })

layer(ChromiumLive, { timeout: "60 seconds", excludeTestServices: true })("web page against the real server", (it) => {
  it.scoped("a full run: thinking, parallel tool cards, sandboxed preview, streamed markdown answer, footer", () =>
    Effect.gen(function*() {
      const { page, errors } = yield* setup()
      // in flight: a running card with a live timer. The cards run for 0.25-0.4 s, too
      // short to be sure to catch by polling on a loaded machine: a MutationObserver
      // records every running-card timer text the page shows
      yield* pw(() =>
        page.evaluate(() => {
          const seen: Array<string> = []
          ;(window as unknown as { runningTexts: Array<string> }).runningTexts = seen
          new MutationObserver(() => {
            for (const el of document.querySelectorAll(".card.running .elapsed")) seen.push(el.textContent ?? "")
          }).observe(document.body, { subtree: true, childList: true, characterData: true })
        })
      )
      yield* ask(page, "full: what is the population density of France, and 2 + 3?")
      yield* waitDone(page)
      const running = yield* pw(() =>
        page.evaluate(() => (window as unknown as { runningTexts: Array<string> }).runningTexts)
      )
      assert.isTrue(running.some((t) => /^running/.test(t)), JSON.stringify(running))
      const cards = yield* pw(() =>
        page.$$eval(".turn:last-child .card", (els) =>
          els.map((c) => ({
            tool: c.querySelector(".tool-name")?.textContent,
            args: c.querySelector("pre.args")?.textContent,
            obs: c.querySelector("pre.observation")?.textContent ?? null,
            elapsed: c.querySelector(".elapsed")?.textContent,
            ok: c.classList.contains("ok"),
            iteration: c.closest(".iteration")?.getAttribute("data-iteration")
          })))
      )
      assert.deepStrictEqual(cards.map((c) => c.tool), ["calculator", "lookup", "chart"])
      assert.strictEqual(cards[0].args, JSON.stringify({ a: 2, b: 3 }, null, 2))
      assert.strictEqual(cards[0].obs, "5")
      assert.include(cards[1].obs ?? "", "Facts about France")
      for (const c of cards) {
        assert.isTrue(c.ok)
        assert.match(c.elapsed ?? "", /^\d+\.\d+ s$/)
      }
      // the parallel round is one iteration, laid out side by side
      assert.strictEqual(cards[0].iteration, cards[1].iteration)
      const [a, b] = yield* pw(() =>
        page.$$eval(".turn:last-child .card", (els) => els.slice(0, 2).map((e) => e.getBoundingClientRect().top))
      )
      assert.approximately(a, b, 2)
      // reasoning shown for the step that had it
      assert.include(yield* pw(() => page.textContent(".turn:last-child .reasoning")), "both at once")
      // the HTML result is a sandboxed srcdoc preview
      const frame = yield* pw(() =>
        page.$eval(
          ".card[data-tool=chart] iframe",
          (f) => ({ sandbox: f.getAttribute("sandbox"), srcdoc: (f as HTMLIFrameElement).srcdoc })
        )
      )
      assert.strictEqual(frame.sandbox, "")
      assert.include(frame.srcdoc, "Density by region")
      // the answer is markdown (a table, bold), streamed then finished
      assert.strictEqual(yield* pw(() => page.locator(".turn:last-child .answer table").count()), 1)
      assert.include(yield* pw(() => page.innerHTML(".turn:last-child .answer")), "<strong>123 people per km²</strong>")
      assert.isFalse(yield* pw(() => page.locator(".answer.streaming").count().then((n) => n > 0)))
      const footer = yield* pw(() => page.textContent(".turn:last-child .run-footer"))
      assert.match(footer ?? "", /^3 iterations·[\d,]+ tokens·\d+\.\d+ s·cassette$/)
      assert.isTrue(yield* pw(() => page.isHidden("#stop")))
      assert.deepStrictEqual(errors, [])
      // the picture for docs/web.md: the whole run, first card open
      yield* pw(async () => {
        await page.setViewportSize({ width: 1200, height: 1320 })
        await page.click(".card[data-tool=calculator] summary")
        await page.$eval("#transcript", (t) => t.scrollTo(0, 0))
      })
      const shot = yield* screenshot(page, "web-full-run")
      // refresh the committed picture only on request, so test runs leave the tree clean
      if (process.env.UPDATE_DOCS_SCREENSHOT === "1") {
        mkdirSync(join(process.cwd(), "docs", "images"), { recursive: true })
        copyFileSync(shot, join(process.cwd(), "docs", "images", "web.png"))
      }
    }))

  it.scoped("a follow-up typed mid-run goes through inject and shows as an interrupt bubble the agent takes in", () =>
    Effect.gen(function*() {
      const { page, errors } = yield* setup()
      yield* ask(page, "slow: research three parts")
      yield* pw(() => page.waitForSelector(".card.running"))
      assert.strictEqual(yield* pw(() => page.textContent("#send")), "Send follow-up")
      const injected = page.waitForRequest((r) => r.url().endsWith("/api/react/inject") && r.method() === "POST")
      yield* ask(page, "also mention Lyon")
      const request = yield* pw(() => injected)
      assert.deepInclude(request.postDataJSON(), { content: "also mention Lyon" })
      yield* pw(() => page.waitForSelector(".msg.inject.taken"))
      yield* waitDone(page)
      assert.strictEqual(yield* pw(() => page.locator(".msg.inject").count()), 1)
      assert.include(yield* pw(() => page.textContent(".msg.inject")), "also mention Lyon")
      // the agent took it in: the model saw it and the answer mentions it
      assert.include(yield* pw(() => page.textContent(".turn:last-child .answer")), "Lyon")
      // only one user bubble: the follow-up did not start a second run
      assert.strictEqual(yield* pw(() => page.locator(".msg.user").count()), 1)
      assert.deepStrictEqual(errors, [])
    }))

  it.scoped("reloading mid-run resumes the stream without duplicate cards", () =>
    Effect.gen(function*() {
      const { page, errors } = yield* setup()
      yield* ask(page, "slow: six lookups")
      yield* pw(() => page.waitForSelector(".card.ok"))
      yield* pw(() => page.reload())
      yield* pw(() => page.waitForSelector(".card"))
      yield* waitDone(page)
      const keys = yield* cardKeys(page)
      assert.strictEqual(keys.length, 6)
      assert.strictEqual(new Set(keys).size, 6)
      assert.strictEqual(yield* pw(() => page.locator(".msg.user").count()), 1)
      assert.strictEqual(yield* pw(() => page.locator(".turn:last-child .answer").count()), 1)
      assert.match((yield* pw(() => page.textContent(".turn:last-child .run-footer"))) ?? "", /^7 iterations/)
      assert.include(yield* pw(() => page.textContent(".msg.user")), "slow: six lookups")
      // the only console noise allowed: the 404 of a conversation not stored until its first turn ends
      assert.deepStrictEqual(errors.filter((e) => !e.includes("404")), [])
    }))

  it.scoped("a dropped connection resumes from the last event id without duplicating cards or answer text", () =>
    Effect.gen(function*() {
      const { page } = yield* setup()
      yield* ask(page, "slow: six lookups")
      yield* pw(() => page.waitForSelector(".card.ok"))
      const resumed = page.waitForRequest((r) => r.url().includes("/api/react/events") && /after=\d+/.test(r.url()))
      yield* pw(() =>
        page.evaluate(() =>
          (window as unknown as { reactPage: { dropConnection: () => void } }).reactPage.dropConnection()
        )
      )
      yield* pw(() => resumed)
      yield* waitDone(page)
      const keys = yield* cardKeys(page)
      assert.strictEqual(keys.length, 6)
      assert.strictEqual(new Set(keys).size, 6)
      const answer = yield* pw(() => page.textContent(".turn:last-child .answer"))
      assert.strictEqual((answer ?? "").split("123 people per km²").length, 2)
    }))

  it.scoped("stop cancels the run: it ends with done, cards stop, the composer is ready again", () =>
    Effect.gen(function*() {
      const { page } = yield* setup()
      yield* ask(page, "slow: six lookups")
      yield* pw(() => page.waitForSelector(".card.running"))
      const cancel = page.waitForRequest((r) => r.url().endsWith("/api/react/cancel"))
      yield* pw(() => page.click("#stop"))
      yield* pw(() => cancel)
      yield* waitDone(page, 8000)
      assert.isBelow((yield* cardKeys(page)).length, 6)
      assert.strictEqual(yield* pw(() => page.locator(".card.running").count()), 0)
      assert.isTrue(yield* pw(() => page.isHidden("#stop")))
      assert.strictEqual(yield* pw(() => page.textContent("#send")), "Send")
      // the footer says it was stopped, and while doing what
      assert.match(
        (yield* pw(() => page.textContent(".turn:last-child .run-footer"))) ?? "",
        /^Stopped (?:while running lookup|while thinking)·/
      )
    }))

  it.scoped("model output with HTML is rendered as text, not HTML", () =>
    Effect.gen(function*() {
      const { page, dialogs, errors } = yield* setup()
      yield* ask(page, "hostile: show me")
      yield* waitDone(page)
      const answer = yield* pw(() => page.innerHTML(".turn:last-child .answer"))
      assert.include(answer, "&lt;img src=x onerror=alert(1)&gt;")
      assert.include(answer, "&lt;script&gt;alert(2)&lt;/script&gt;")
      assert.include(answer, "<strong>bold</strong>")
      assert.strictEqual(yield* pw(() => page.locator(".run img, .run script, .run b").count()), 0)
      assert.include(yield* pw(() => page.textContent(".turn:last-child .card .args")), "<b>bold</b>")
      assert.deepStrictEqual(dialogs, [])
      assert.deepStrictEqual(errors, [])
    }))

  it.scoped("the offline-demo banner shows when /health says demo", () =>
    Effect.gen(function*() {
      const { page } = yield* setup({ demo: true })
      yield* pw(() => page.waitForSelector("#demo-banner", { state: "visible" }))
      assert.strictEqual(yield* pw(() => page.textContent("#model")), "demo")
      const other = yield* setup({ demo: false })
      yield* pw(() =>
        other.page.waitForFunction(() => document.getElementById("model")?.textContent === "scripted-test")
      )
      assert.isTrue(yield* pw(() => other.page.isHidden("#demo-banner")))
    }))

  it.scoped("with API_TOKEN set: ?token= is kept in localStorage and sent as a bearer token; without it the page asks", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup({ apiToken: "s3cret", path: "/?token=s3cret" })
      yield* pw(() => page.waitForFunction(() => !location.search.includes("token")))
      yield* ask(page, "full: with a token")
      yield* waitDone(page)
      assert.strictEqual(yield* pw(() => page.evaluate(() => localStorage.getItem("react.token"))), "s3cret")
      const browser = yield* Chromium
      const other = yield* openPage(browser)
      yield* pw(() => other.page.goto(url))
      yield* pw(() => other.page.waitForSelector("#token-form", { state: "visible" }))
      yield* pw(() => other.page.fill("#token-input", "s3cret"))
      yield* pw(() => other.page.keyboard.press("Enter"))
      yield* pw(() => other.page.waitForSelector("#token-form", { state: "hidden" }))
      yield* pw(() => other.page.waitForSelector("#conversation-list a:has-text('full: with a token')"))
    }))

  it.scoped("the conversation list comes from the database and reopens a past conversation", () =>
    Effect.gen(function*() {
      const { page } = yield* setup()
      yield* ask(page, "full: first question")
      yield* waitDone(page)
      yield* pw(() => page.waitForSelector("#conversation-list a:has-text('full: first question')"))
      yield* pw(() => page.click("#new-chat"))
      assert.strictEqual(yield* pw(() => page.locator(".turn").count()), 0)
      yield* pw(() => page.click("#conversation-list a:has-text('full: first question')"))
      yield* pw(() => page.waitForSelector(".turn.past .answer"))
      assert.strictEqual(yield* pw(() => page.locator(".turn.past .card").count()), 3)
      assert.include(yield* pw(() => page.textContent(".turn.past .msg.user")), "full: first question")
      assert.include(yield* pw(() => page.textContent(".turn.past .answer")), "123 people per km²")
      // a second turn continues the same conversation
      const started = page.waitForRequest((r) => r.url().endsWith("/api/react"))
      yield* ask(page, "hostile: and now?")
      assert.isString((yield* pw(() => started)).postDataJSON().conversation_id)
      yield* waitDone(page)
      assert.strictEqual(yield* pw(() => page.locator(".msg.user").count()), 2)
    }))

  it.scoped("keyboard only: focus with /, send with Enter, open a card with Enter, stop with Escape", () =>
    Effect.gen(function*() {
      const { page } = yield* setup()
      yield* pw(() => page.locator("body").focus())
      yield* pw(() => page.evaluate(() => (document.activeElement as HTMLElement | null)?.blur()))
      yield* pw(() => page.keyboard.press("/"))
      assert.strictEqual(yield* pw(() => page.evaluate(() => document.activeElement?.id)), "composer-input")
      yield* pw(() => page.keyboard.type("full: keyboard"))
      yield* pw(() => page.keyboard.press("Shift+Enter"))
      yield* pw(() => page.keyboard.type("second line"))
      assert.strictEqual(yield* pw(() => page.inputValue("#composer-input")), "full: keyboard\nsecond line")
      yield* pw(() => page.keyboard.press("Enter"))
      yield* waitDone(page)
      // tab to the first card's summary and open it with Enter
      yield* pw(() => page.focus(".card summary"))
      yield* pw(() => page.keyboard.press("Enter"))
      assert.isTrue(yield* pw(() => page.$eval(".card", (d) => (d as HTMLDetailsElement).open)))
      yield* pw(() => page.focus("#composer-input"))
      yield* pw(() => page.keyboard.type("slow: then stop"))
      yield* pw(() => page.keyboard.press("Enter"))
      yield* pw(() => page.waitForSelector(".turn:last-child .card.running"))
      yield* pw(() => page.keyboard.press("Escape"))
      yield* waitDone(page, 8000)
      assert.isBelow((yield* cardKeys(page)).length, 6)
    }))

  it.scoped("readable at phone width: no horizontal overflow while streaming, no layout jumps above the answer", () =>
    Effect.gen(function*() {
      const { page } = yield* setup({ width: 390, height: 844, colorScheme: "dark" })
      yield* ask(page, "full: phone")
      yield* pw(() => page.waitForSelector(".answer:not([hidden])"))
      const before = yield* pw(() => page.$eval(".turn:last-child .card", (c) => c.getBoundingClientRect().height))
      const overflowDuring = yield* pw(() =>
        page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
      )
      yield* waitDone(page)
      const after = yield* pw(() => page.$eval(".turn:last-child .card", (c) => c.getBoundingClientRect().height))
      const overflowAfter = yield* pw(() =>
        page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)
      )
      assert.isAtMost(overflowDuring, 0)
      assert.isAtMost(overflowAfter, 0)
      assert.strictEqual(before, after)
      // the sidebar is a drawer on phones, opened and closed from the keyboard
      assert.isFalse(yield* pw(() => page.isVisible("#sidebar")))
      yield* pw(() => page.click("#toggle-sidebar"))
      yield* pw(() => page.waitForSelector("#sidebar", { state: "visible" }))
      yield* pw(() => page.keyboard.press("Escape"))
      yield* pw(() => page.waitForSelector("#sidebar", { state: "hidden" }))
      yield* screenshot(page, "web-phone-dark")
    }))
})

describe("web page assets", () => {
  layer(ChromiumLive, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.scoped("serves the page and assets with content types and cache headers", () =>
      Effect.gen(function*() {
        const { url } = yield* webAppServer({})
        const get = (path: string, headers?: Record<string, string>) =>
          Effect.promise(() => fetch(url + path, headers ? { headers } : {}))
        const index = yield* get("/")
        assert.strictEqual(index.status, 200)
        assert.strictEqual(index.headers.get("content-type"), "text/html; charset=utf-8")
        assert.strictEqual(index.headers.get("cache-control"), "no-cache")
        assert.include(index.headers.get("content-security-policy") ?? "", "script-src 'self'")
        const etag = index.headers.get("etag") ?? ""
        assert.strictEqual((yield* get("/", { "if-none-match": etag })).status, 304)
        const md = yield* get("/assets/markdown-it.min.js")
        assert.strictEqual(md.status, 200)
        assert.strictEqual(md.headers.get("content-type"), "text/javascript; charset=utf-8")
        assert.include(md.headers.get("cache-control") ?? "", "max-age")
        assert.strictEqual((yield* get("/assets/styles.css")).headers.get("content-type"), "text/css; charset=utf-8")
        assert.strictEqual((yield* get("/assets/nope.js")).status, 404)
      }))
  })
})
