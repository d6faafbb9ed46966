/**
 * DAG mode on the web page in headless Chromium against the REAL server (routes,
 * run registry, SSE, DagAgent, step ReactAgents, tools) over a scripted model
 * with delays (test/utils/webDagScript.ts): the plan is drawn as a graph of step
 * cards that fill in live, re-plans as rounds.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { copyFileSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import type { Page } from "playwright-core"
import { Chromium, ChromiumLive, openPage, pw, screenshot } from "../utils/browser.js"
import { webAppServer } from "../utils/webAppServer.js"

const askInMode = (page: Page, mode: string, text: string) =>
  pw(async () => {
    await page.selectOption("#mode", mode)
    await page.fill("#composer-input", text)
    await page.keyboard.press("Enter")
  })

const waitDone = (page: Page) =>
  pw(() => page.waitForSelector(".turn:last-child > .run > .run-footer:not([hidden])", { timeout: 30_000 }))

const setup = (size: { readonly width?: number; readonly height?: number } = {}) =>
  Effect.gen(function*() {
    const server = yield* webAppServer()
    const browser = yield* Chromium
    const opened = yield* openPage(browser, size)
    yield* pw(() => opened.page.goto(server.url))
    return { ...server, ...opened }
  })

layer(ChromiumLive, { timeout: "90 seconds", excludeTestServices: true })("DAG mode on the web page", (it) => {
  it.scoped("a 3-step plan: two parallel steps, then their dependent; cards fill in live, edges follow the dependencies", () =>
    Effect.gen(function*() {
      const { errors, page } = yield* setup()
      const posted = page.waitForRequest((r) => r.url().endsWith("/api/react") && r.method() === "POST")
      yield* askInMode(page, "dag", "dag: compare the populations of Lyon and Porto")
      assert.deepInclude((yield* pw(() => posted)).postDataJSON(), { mode: "dag" })
      // planning, then the graph appears with every step waiting or running
      yield* pw(() => page.waitForSelector(".dag-step[data-step-id='3']"))
      // live: the two independent steps run at the same time, their dependent waits
      yield* pw(() =>
        page.waitForFunction(() => document.querySelectorAll(".dag-step.running").length === 2, undefined, {
          timeout: 10_000
        })
      )
      const live = yield* pw(() =>
        page.$$eval(
          ".dag-step",
          (cards) => Object.fromEntries(cards.map((c) => [c.getAttribute("data-step-id"), c.className]))
        )
      )
      assert.include(live["1"], "running")
      assert.include(live["2"], "running")
      assert.include(live["3"], "pending")
      yield* waitDone(page)
      const cards = yield* pw(() =>
        page.$$eval(".dag-step", (els) =>
          els.map((c) => ({
            id: c.getAttribute("data-step-id"),
            task: c.querySelector(".dag-task")?.textContent,
            state: c.querySelector(".dag-state")?.textContent ?? "",
            done: c.classList.contains("done"),
            level: c.closest(".dag-level")?.getAttribute("data-level"),
            top: c.getBoundingClientRect().top,
            result: c.querySelector(".dag-result")?.textContent ?? ""
          })))
      )
      assert.deepStrictEqual(cards.map((c) => [c.id, c.level, c.done]), [["1", "0", true], ["2", "0", true], [
        "3",
        "1",
        true
      ]])
      assert.strictEqual(cards[0].task, "Look up the population of Lyon")
      assert.approximately(cards[0].top, cards[1].top, 1, "parallel steps side by side")
      assert.isAbove(cards[2].top, cards[0].top + 30, "the dependent below")
      for (const c of cards) assert.match(c.state, /^done · \d+\.\d+ s$/)
      assert.include(cards[0].result, "Lyon has about 522,000 inhabitants.")
      assert.include(cards[2].result, "290,000 more inhabitants")
      // one edge per dependency, from the dependency's bottom to the dependent's top
      const edges = yield* pw(() =>
        page.$$eval(
          ".dag-edge",
          (paths) => paths.map((p) => `${p.getAttribute("data-from")}->${p.getAttribute("data-to")}`)
        )
      )
      assert.deepStrictEqual(edges.sort(), ["1->3", "2->3"])
      // a card opens to its own tool cards (the step's ReAct events, by step_id)
      yield* pw(() => page.click(".dag-step[data-step-id='1'] > summary"))
      const tool = yield* pw(() =>
        page.$eval(".dag-step[data-step-id='1'] .card", (c) => ({
          tool: c.querySelector(".tool-name")?.textContent,
          ok: c.classList.contains("ok"),
          obs: c.querySelector(".observation")?.textContent
        }))
      )
      assert.deepStrictEqual(tool, { tool: "lookup", ok: true, obs: "Facts about Lyon: it is well documented." })
      assert.strictEqual(yield* pw(() => page.locator(".dag-step[data-step-id='2'] .card").count()), 1)
      // the steps' tool cards are inside their steps, not in the run's own list
      assert.strictEqual(yield* pw(() => page.locator(".turn:last-child > .run > .iteration").count()), 0)
      // the answer: streamed markdown, one answer only
      assert.strictEqual(yield* pw(() => page.locator(".turn:last-child > .run > .answer table").count()), 1)
      assert.include(yield* pw(() => page.textContent(".turn:last-child > .run > .answer")), "Lyon is larger")
      assert.strictEqual(yield* pw(() => page.locator(".turn:last-child > .run > .answer").count()), 1)
      assert.isTrue(yield* pw(() => page.isHidden(".dag-phase")))
      assert.deepStrictEqual(errors, [])
      // the picture for docs/dag-mode.md: the graph done, step 3 open
      yield* pw(async () => {
        await page.click(".dag-step[data-step-id='1'] > summary")
        await page.click(".dag-step[data-step-id='3'] > summary")
        await page.setViewportSize({ width: 1200, height: 820 })
        await page.$eval("#transcript", (t) => t.scrollTo(0, 0))
        await page.waitForTimeout(150)
      })
      const shot = yield* screenshot(page, "web-dag")
      if (process.env.UPDATE_DOCS_SCREENSHOT === "1") {
        mkdirSync(join(process.cwd(), "docs", "images"), { recursive: true })
        copyFileSync(shot, join(process.cwd(), "docs", "images", "dag.png"))
      }
    }))

  it.scoped("a re-plan is a new round below the first, with the analyzer's reason; the first round folds", () =>
    Effect.gen(function*() {
      const { errors, page } = yield* setup()
      yield* askInMode(page, "dag", "dagreplan: compare the populations of Lyon and Porto")
      // shown while the run re-plans (hidden again once the next round starts): attached is enough
      yield* pw(() =>
        page.waitForSelector(".dag-phase:text-matches('Re-planning')", { state: "attached", timeout: 20_000 })
      )
      yield* waitDone(page)
      const rounds = yield* pw(() =>
        page.$$eval(".dag-round", (els) =>
          els.map((r) => ({
            round: r.getAttribute("data-round"),
            open: r.hasAttribute("open"),
            steps: r.querySelectorAll(".dag-step").length,
            reason: r.querySelector(".dag-reason")?.textContent ?? ""
          })))
      )
      assert.deepStrictEqual(rounds.map((r) => [r.round, r.open, r.steps]), [["1", false, 3], ["2", true, 1]])
      assert.include(rounds[1].reason, "metropolitan area is needed")
      assert.include(yield* pw(() => page.textContent(".dag-round[data-round='2'] .dag-result")), "1.7 million")
      assert.deepStrictEqual(errors, [])
    }))
})
