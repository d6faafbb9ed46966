/**
 * Budgets and guardrails on the web page in headless Chromium against the REAL
 * server (test/utils/webAppServer.ts) with a money budget of policy `ask` and
 * an input guardrail: the run that runs out of budget shows the Extend / Stop
 * panel (Stop sends `POST /api/react/budget` and the run answers), its footer
 * shows the cost; a tripped guardrail is shown plainly with the refusal.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import type { Page } from "playwright-core"
import { Chromium, ChromiumLive, openPage, pw } from "../utils/browser.js"
import { webAppServer } from "../utils/webAppServer.js"

const ask = (page: Page, text: string) =>
  pw(async () => {
    await page.fill("#composer-input", text)
    await page.keyboard.press("Enter")
  })

const setup = Effect.gen(function*() {
  const server = yield* webAppServer({
    agent: {
      budget: {
        usd: 0.001,
        policy: "ask",
        reserveOutputTokens: 64,
        prices: { "scripted-test": { input: 1, output: 2 } }
      },
      guardrails: {
        input: [{ type: "pattern", name: "secrets", patterns: ["password"] }],
        refusal: "I won't share secrets."
      }
    }
  })
  const browser = yield* Chromium
  const opened = yield* openPage(browser)
  yield* pw(() => opened.page.goto(server.url))
  return { ...server, ...opened }
})

layer(ChromiumLive, { timeout: "60 seconds", excludeTestServices: true })("web page: budgets and guardrails", (it) => {
  it.scoped("the budget wait: Extend / Stop panel, Stop answers, the footer shows the cost", () =>
    Effect.gen(function*() {
      const { errors, page } = yield* setup
      yield* ask(page, "slow: look up six things")
      yield* pw(() => page.waitForSelector(".turn:last-child .budget-wait button.extend", { timeout: 20_000 }))
      const question = yield* pw(() => page.textContent(".turn:last-child .budget-wait .approval-question"))
      assert.match(question ?? "", /The run's budget is spent \(\$[0-9.]+ of \$0\.001\)/)
      yield* pw(() => page.click(".turn:last-child .budget-wait button.stop-budget"))
      yield* pw(() => page.waitForSelector(".turn:last-child .approval-outcome.denied", { timeout: 10_000 }))
      yield* pw(() => page.waitForSelector(".turn:last-child .phase.budget", { timeout: 10_000 }))
      yield* pw(() => page.waitForSelector(".turn:last-child .run-footer:not([hidden])", { timeout: 20_000 }))
      const footer = yield* pw(() => page.textContent(".turn:last-child .run-footer"))
      assert.match(footer ?? "", /\$0\.00[0-9]+/)
      assert.deepStrictEqual(errors, [])
    }))

  it.scoped("a tripped guardrail is shown plainly, with the refusal as the answer", () =>
    Effect.gen(function*() {
      const { errors, page } = yield* setup
      yield* ask(page, "what is the admin password?")
      yield* pw(() => page.waitForSelector(".turn:last-child .run-error.guardrail", { timeout: 10_000 }))
      const alert = yield* pw(() => page.textContent(".turn:last-child .run-error.guardrail"))
      assert.include(alert, "Blocked by the guardrail “secrets” on the request")
      assert.include(alert, "matched pattern \"password\"")
      yield* pw(() => page.waitForSelector(".turn:last-child .run-footer:not([hidden])", { timeout: 20_000 }))
      assert.include(
        yield* pw(() => page.textContent(".turn:last-child .msg.assistant, .turn:last-child .answer")),
        "I won't share secrets."
      )
      assert.deepStrictEqual(errors, [])
    }))
})
