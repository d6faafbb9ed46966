/**
 * Budgets over HTTP (SPEC §21): the real server process, configured from the
 * environment (`REACT_RUN_BUDGET_USD`, `MODEL_PRICES_FILE`), against an
 * OpenAI-compatible fake that would call tools forever. The run must end with
 * `phase budget_exhausted`, an answer and `done` whose `usage.cost_usd` is
 * within the limit; a money budget without a price for the model stops
 * start-up naming the model.
 */
import { assert, describe, it } from "@effect/vitest"
import { join } from "node:path"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { modelEnv } from "../utils/killMatrix.js"
import { billOf, PRICE, setup, startupErrorWithoutPrice } from "../utils/pricedFake.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { openSse } from "../utils/sse.js"

describe("server budget", () => {
  it("REACT_RUN_BUDGET_USD with a price file: the run ends with budget_exhausted, an answer and its cost", async () => {
    const billed: Array<{ prompt: number; completion: number }> = []
    const fake = await FakeOpenAi.start((body, index) => {
      if (body.stream === true) {
        const usage = billOf(body, 12)
        billed.push(usage)
        return FakeOpenAi.sseText("Here is what I found so far.", { usage })
      }
      const usage = billOf(body, 20)
      billed.push(usage)
      return FakeOpenAi.completion({
        toolCalls: [{
          id: FakeOpenAi.freshCallId(index),
          name: "calculator",
          arguments: JSON.stringify({ expression: `${index}+1` })
        }],
        usage
      })
    })
    const { dir, pricesFile } = setup({ "fake-model": PRICE })
    const limit = 0.02
    const server = await startServerProcess({
      DATABASE_PATH: join(dir, "react.sqlite"),
      ...modelEnv(fake.url),
      REACT_RUN_BUDGET_USD: String(limit),
      MODEL_PRICES_FILE: pricesFile
    })
    try {
      const { events } = await openSse(`${server.url}/api/react`, {
        body: { query: "count forever" },
        timeoutMs: 60_000
      })
      const exhausted = events.filter((e) => e.event === "phase" && e.data.phase === "budget_exhausted")
      assert.strictEqual(exhausted.length, 1, events.map((e) => e.event).join(","))
      assert.strictEqual(exhausted[0].data.limit_usd, limit)
      assert.isTrue(exhausted[0].data.spent_usd <= limit)
      const done = events[events.length - 1]
      assert.strictEqual(done.event, "done")
      assert.strictEqual(done.data.answer, "Here is what I found so far.")
      // what the provider billed, at the prices, never went over the limit; done reports it
      const cost = billed.reduce((s, u) => s + (u.prompt * PRICE.input + u.completion * PRICE.output) / 1e6, 0)
      assert.isTrue(cost <= limit, `billed $${cost}`)
      assert.approximately(done.data.usage.cost_usd, cost, 1e-9)
      assert.isTrue(billed.length > 3, `the loop ran a while first (${billed.length} calls)`)
      // every loop request asked for no more than the output it was reserved
      assert.isTrue(fake.requests.every((r) => typeof r.body.max_tokens === "number"))
    } finally {
      await server.kill("SIGTERM")
      await fake.close()
    }
  }, 90_000)

  it("a money budget without a price for the model in use stops start-up naming the model", async () => {
    const error = await startupErrorWithoutPrice("REACT_RUN_BUDGET_USD")
    assert.match(error, /the server exited while starting/)
    assert.match(error, /price for model fake-model/)
  }, 90_000)
})
