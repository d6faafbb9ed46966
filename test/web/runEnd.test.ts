/**
 * The page tells the truth about how a run ends — stopped while thinking, stopped
 * during the answer, failed, retried — live and after a reload; the tools panel;
 * the first Tab stop and the demo banner on a phone. Headless Chromium against
 * the REAL server over a scripted model (test/utils/webAppServer.ts).
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { Chromium, ChromiumLive, openPage, pw, screenshot } from "../utils/browser.js"
import { webAppServer } from "../utils/webAppServer.js"

const ask = (page: Page, text: string) =>
  pw(async () => {
    await page.fill("#composer-input", text)
    await page.keyboard.press("Enter")
  })

const waitEnded = (page: Page, timeout = 15_000) =>
  pw(() => page.waitForSelector(".turn:last-child .run-footer:not([hidden])", { timeout }))

const count = (page: Page, selector: string) => pw(() => page.locator(selector).count())
const text = (page: Page, selector: string) => pw(() => page.textContent(selector).then((t) => t ?? ""))
const focusedId = (page: Page) => pw(() => page.evaluate(() => document.activeElement?.id ?? ""))

/** Nothing in the turn still spins: no spinner, no active thinking, no streaming cursor, no running card. */
const assertSettled = (page: Page) =>
  Effect.gen(function*() {
    assert.strictEqual(yield* count(page, ".turn:last-child .spinner"), 0, "a spinner is left")
    assert.strictEqual(yield* count(page, ".turn:last-child .thinking.active"), 0, "a thinking indicator is left")
    assert.strictEqual(yield* count(page, ".turn:last-child .answer.streaming"), 0, "the answer still streams")
    assert.strictEqual(yield* count(page, ".turn:last-child .card.running"), 0, "a card still runs")
    assert.strictEqual(yield* count(page, ".turn:last-child .phase.active"), 0, "a phase line is still active")
    assert.isFalse(yield* pw(() => page.isVisible(".turn:last-child .status-line")), "the status line still shows")
    // what a screen reader hears last is not a step that is over ("Thinking (step 2)…")
    assert.notMatch(yield* text(page, ".turn:last-child .sr-only[role=status]"), /Thinking|Running/, "the live status")
  })

const setup = (
  options: Parameters<typeof webAppServer>[0] & { readonly width?: number; readonly height?: number } = {}
) =>
  Effect.gen(function*() {
    const server = yield* webAppServer(options)
    const browser = yield* Chromium
    const opened = yield* openPage(browser, {
      ...(options.width ? { width: options.width } : {}),
      ...(options.height ? { height: options.height } : {})
    })
    yield* pw(() => opened.page.goto(server.url))
    return { ...server, ...opened }
  })

layer(ChromiumLive, { timeout: "60 seconds", excludeTestServices: true })("how a run ends, on the page", (it) => {
  it.scoped("stop while thinking: one thinking indicator, then no spinner, a stopped marker, focus in the message box; the same after a reload", () =>
    Effect.gen(function*() {
      const { page, errors } = yield* setup()
      yield* ask(page, "think: take your time")
      yield* pw(() => page.waitForSelector(".turn:last-child .thinking.active .spinner"))
      // one indicator: the step's, not a second "Thinking…" line under the run
      const thinkingTexts = yield* pw(() =>
        page.$$eval(
          ".turn:last-child *",
          (els) =>
            els.filter((e) =>
              e.children.length === 0 && /thinking/i.test(e.textContent ?? "") && e.closest(".sr-only") === null &&
              (e as HTMLElement).offsetParent !== null
            ).length
        )
      )
      assert.strictEqual(thinkingTexts, 1)
      yield* pw(() => page.click("#stop"))
      yield* waitEnded(page)
      yield* assertSettled(page)
      assert.match(yield* text(page, ".turn:last-child .run-footer"), /^Stopped while thinking·1 iteration·/)
      assert.strictEqual(yield* focusedId(page), "composer-input", "focus after Stop")
      assert.isTrue(yield* pw(() => page.isHidden("#stop")))
      // the stored turn says the same after a reload
      yield* pw(() => page.reload())
      yield* pw(() => page.waitForSelector(".turn.past .end-marker.stopped"))
      assert.strictEqual(yield* count(page, ".turn.past .spinner"), 0)
      assert.include(yield* text(page, ".turn.past .msg.user"), "think: take your time")
      assert.deepStrictEqual(errors.filter((e) => !e.includes("404")), [])
    }))

  it.scoped("stop during the answer: the cut-off answer is kept and marked, no cursor, no normal-looking footer", () =>
    Effect.gen(function*() {
      const { page } = yield* setup()
      yield* ask(page, "slowanswer: tell me a lot")
      yield* pw(() =>
        page.waitForFunction(() =>
          (document.querySelector(".turn:last-child .answer")?.textContent ?? "").includes("word3")
        )
      )
      yield* pw(() => page.click("#stop"))
      yield* waitEnded(page)
      yield* assertSettled(page)
      const answer = yield* text(page, ".turn:last-child .answer")
      assert.include(answer, "word3")
      assert.notInclude(answer, "word59")
      assert.strictEqual(yield* count(page, ".turn:last-child .answer.cut"), 1)
      assert.match(yield* text(page, ".turn:last-child .run-footer"), /^Stopped during the answer·2 iterations·/)
      assert.strictEqual(yield* focusedId(page), "composer-input")
      yield* screenshot(page, "web-stopped-answer")
      yield* pw(() => page.reload())
      yield* pw(() => page.waitForSelector(".turn.past .end-marker.stopped"))
      assert.include(yield* text(page, ".turn.past .answer.cut"), "word3")
    }))

  it.scoped("a failed run shows its error and no spinner; after a reload the turn is marked failed", () =>
    Effect.gen(function*() {
      const { page } = yield* setup()
      yield* ask(page, "fail: please")
      yield* waitEnded(page)
      yield* assertSettled(page)
      assert.include(yield* text(page, ".turn:last-child .run-error"), "the model is down (scripted)")
      assert.match(yield* text(page, ".turn:last-child .run-footer"), /^Failed while thinking·1 iteration·/)
      assert.strictEqual(yield* count(page, ".turn:last-child .end-marker.failed"), 1)
      assert.isTrue(yield* pw(() => page.isHidden("#stop")))
      yield* screenshot(page, "web-failed-run")
      yield* pw(() => page.reload())
      yield* pw(() => page.waitForSelector(".turn.past .end-marker.failed"))
      assert.strictEqual(yield* count(page, ".turn.past .spinner"), 0)
    }))

  it.scoped("a run whose model call is retried says so while it waits, and what happened afterwards", () =>
    Effect.gen(function*() {
      const { page } = yield* setup()
      yield* ask(page, "busy: hello")
      yield* pw(() => page.waitForSelector(".turn:last-child .phase.retry.active"))
      // under the step that waits for the model
      assert.strictEqual(
        yield* count(page, ".turn:last-child .iteration[data-iteration='1'] .thinking.active + .phase.retry"),
        1
      )
      assert.match(
        yield* text(page, ".turn:last-child .phase.retry"),
        /^The model is busy \(rate limited\): retry 1 in 1\.50 s…$/
      )
      yield* waitEnded(page)
      yield* assertSettled(page)
      assert.strictEqual(yield* text(page, ".turn:last-child .phase.retry"), "Model call retried 1× (rate limited)")
      assert.match(yield* text(page, ".turn:last-child .run-footer"), /^1 iteration·/)
    }))

  it.scoped("a normal run: no marker, and no bare step label before the answer", () =>
    Effect.gen(function*() {
      const { page } = yield* setup()
      yield* ask(page, "full: go")
      yield* waitEnded(page)
      yield* assertSettled(page)
      assert.strictEqual(yield* count(page, ".turn:last-child .end-marker"), 0)
      assert.strictEqual(yield* count(page, ".turn:last-child .answer.cut"), 0)
      const bare = yield* pw(() =>
        page.$$eval(".turn:last-child .iteration", (its) =>
          its.filter((it) =>
            it.querySelector(".card") === null && it.querySelector(".step-label, .reasoning") !== null
          ).length)
      )
      assert.strictEqual(bare, 0)
      // steps with tools keep their heading
      assert.strictEqual(yield* count(page, ".turn:last-child .iteration:has(.card) .step-label"), 2)
    }))

  it.scoped("text the model writes before calling a tool shows while it streams, then is withdrawn: the answer is the final reply alone", () =>
    Effect.gen(function*() {
      const { page, errors } = yield* setup()
      yield* ask(page, "preamble: what is the density of France?")
      // synthesis policy auto: the loop reply streams as the answer until its tool call arrives
      yield* pw(() =>
        page.waitForFunction(() =>
          document.querySelector(".turn:last-child .answer:not([hidden])")?.textContent?.includes("Let me")
        )
      )
      yield* waitEnded(page)
      yield* assertSettled(page)
      const answer = yield* text(page, ".turn:last-child .answer")
      assert.include(answer, "123 people per km²")
      assert.notInclude(answer, "Let me look")
      // the withdrawn text is the step's reasoning, next to its tool card
      assert.include(
        yield* text(page, ".turn:last-child .iteration[data-iteration='1'] details.reasoning"),
        "Let me look that up first."
      )
      assert.strictEqual(yield* count(page, ".turn:last-child .card"), 1)
      assert.deepStrictEqual(errors, [])
    }))

  it.scoped("the tools panel lists every tool with its source, and the MCP servers that did not start", () =>
    Effect.gen(function*() {
      const { page } = yield* setup({
        mcp: {
          servers: [{ name: "docs", tools: ["lookup"] }],
          failed: [{ name: "github", error: "cannot start: spawn github-mcp ENOENT" }]
        }
      })
      yield* pw(() => page.waitForSelector("#tools-panel:not([hidden])"))
      assert.strictEqual(yield* text(page, "#tools-panel summary"), "Tools (4) · 1 server failed")
      assert.isFalse(yield* pw(() => page.isVisible("#tools-panel .tool-list")), "collapsed at first")
      yield* pw(() => page.click("#tools-panel summary"))
      const rows = yield* pw(() =>
        page.$$eval(
          "#tools-panel li.tool:not(.failed)",
          (lis) =>
            lis.map((
              li
            ) => [
              li.querySelector(".tool-name")?.textContent,
              li.querySelector(".source")?.textContent,
              li.querySelector(".description")?.textContent
            ])
        )
      )
      assert.deepStrictEqual(rows, [
        ["calculator", "builtin", "Adds two numbers"],
        ["lookup", "mcp:docs", "Looks a topic up (slowly)"],
        ["deploy", "builtin", "Deploys to a target (a person approves each call)"],
        ["chart", "builtin", "Renders an HTML chart"]
      ])
      assert.include(yield* text(page, "#tools-panel li.tool.failed"), "github")
      assert.include(yield* text(page, "#tools-panel li.tool.failed"), "spawn github-mcp ENOENT")
      yield* screenshot(page, "web-tools-panel")
    }))

  it.scoped("the skip link is the first Tab stop and leads to the message box", () =>
    Effect.gen(function*() {
      const { page } = yield* setup()
      yield* pw(() => page.waitForFunction(() => document.getElementById("model")?.textContent !== ""))
      yield* pw(() => page.keyboard.press("Tab"))
      const first = yield* pw(() =>
        page.evaluate(() => ({ cls: document.activeElement?.className, text: document.activeElement?.textContent }))
      )
      assert.deepStrictEqual(first, { cls: "skip", text: "Skip to the message box" })
      assert.isTrue(yield* pw(() => page.isVisible(".skip")))
      yield* pw(() => page.keyboard.press("Enter"))
      assert.strictEqual(yield* focusedId(page), "composer-input")
    }))

  it.scoped("at 375 px the demo banner keeps the sentence on how to connect a model, without sideways scrolling", () =>
    Effect.gen(function*() {
      const { page } = yield* setup({ demo: true, width: 375, height: 720 })
      yield* pw(() => page.waitForSelector("#demo-banner", { state: "visible" }))
      assert.isTrue(yield* pw(() => page.isVisible("#demo-banner .more")))
      const banner = yield* text(page, "#demo-banner")
      for (const name of ["LLM_BASE_URL", "LLM_API_KEY", "LLM_MODEL"]) assert.include(banner, name)
      assert.isAtMost(yield* pw(() => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth)), 0)
      yield* screenshot(page, "web-demo-banner-375")
    }))
})
