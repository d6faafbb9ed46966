/**
 * The per-conversation money limit over HTTP (SPEC §21,
 * `REACT_CONVERSATION_BUDGET_USD`): the real server process and an
 * OpenAI-compatible fake that calls a tool four times per turn, then answers.
 *
 * A calibration server without the limit measures what two turns of one
 * conversation cost. The limited server gets the first turn's cost plus half
 * the second's: the first run fits whole; the second starts from what the
 * first left, so it hits `budget_exhausted` early (fewer model calls than the
 * calibration's second run), still answers, and the runs' `cost_usd` — and
 * what the fake billed — never sum to more than the limit.
 */
import { assert, describe, it } from "@effect/vitest"
import { join } from "node:path"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { modelEnv } from "../utils/killMatrix.js"
import { billOf, PRICE, setup, startupErrorWithoutPrice, usdOf } from "../utils/pricedFake.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { openSse } from "../utils/sse.js"

const TOOL_CALLS_PER_TURN = 4

/** Tool results since the turn's query: the loop calls the tool until it has four. */
const toolResultsThisTurn = (messages: ReadonlyArray<any>): number => {
  let lastUser = -1
  messages.forEach((m, i) => {
    if (m.role === "user") lastUser = i
  })
  return messages.slice(lastUser + 1).filter((m) => m.role === "tool").length
}

const startFake = async () => {
  const billed: Array<{ prompt: number; completion: number }> = []
  const fake = await FakeOpenAi.start((body, index) => {
    if (body.stream === true) {
      const usage = billOf(body, 12)
      billed.push(usage)
      return FakeOpenAi.sseText("Here is what I found.", { usage })
    }
    const usage = billOf(body, 20)
    billed.push(usage)
    return toolResultsThisTurn(body.messages) >= TOOL_CALLS_PER_TURN
      ? FakeOpenAi.completion({ content: "The sums are done.", usage })
      : FakeOpenAi.completion({
        toolCalls: [{
          id: FakeOpenAi.freshCallId(index),
          name: "calculator",
          arguments: JSON.stringify({ expression: `${index}+1` })
        }],
        usage
      })
  })
  return { fake, billed }
}

const QUERY = "Add up a few numbers for me, one calculator call at a time, and tell me the result. ".repeat(4)

interface Turn {
  readonly events: ReadonlyArray<any>
  readonly done: any
  readonly calls: number
  readonly billedUsd: number
}

/** Two turns of one conversation; each with its model calls and what the fake billed for them. */
const twoTurns = async (
  url: string,
  fake: FakeOpenAi.FakeOpenAiServer,
  billed: Array<{ prompt: number; completion: number }>
) => {
  const turns: Array<Turn> = []
  let conversationId: string | undefined
  for (let i = 0; i < 2; i++) {
    const before = { calls: fake.requests.length, billed: billed.length }
    const { events } = await openSse(`${url}/api/react`, {
      body: { query: QUERY, ...(conversationId !== undefined ? { conversation_id: conversationId } : {}) },
      timeoutMs: 60_000
    })
    const done = events[events.length - 1]
    assert.strictEqual(done.event, "done", events.map((e) => e.event).join(","))
    conversationId = done.data.conversation_id
    turns.push({
      events,
      done,
      calls: fake.requests.length - before.calls,
      billedUsd: billed.slice(before.billed).reduce((s, u) => s + usdOf(u), 0)
    })
  }
  return turns
}

const exhaustedIn = (turn: Turn) =>
  turn.events.filter((e) => e.event === "phase" && e.data.phase === "budget_exhausted")

describe("server conversation budget", () => {
  it(
    "REACT_CONVERSATION_BUDGET_USD: the second run starts from what the first left, stops early and answers",
    async () => {
      const { billed, fake } = await startFake()
      const env = (dir: string, pricesFile: string) => ({
        DATABASE_PATH: join(dir, "react.sqlite"),
        ...modelEnv(fake.url),
        // a small worst case per call, so that reservations stay near what calls cost
        LLM_MAX_OUTPUT_TOKENS: "64",
        MODEL_PRICES_FILE: pricesFile
      })
      try {
        // calibration: the same two turns without the limit
        const a = setup({ "fake-model": PRICE })
        const calibration = await startServerProcess(env(a.dir, a.pricesFile))
        let free: Array<Turn>
        try {
          free = await twoTurns(calibration.url, fake, billed)
        } finally {
          await calibration.kill("SIGTERM")
        }
        for (const turn of free) {
          assert.strictEqual(exhaustedIn(turn).length, 0)
          assert.strictEqual(turn.done.data.answer, "Here is what I found.")
          // four loop calls with the tool, the final loop reply, the synthesis
          assert.strictEqual(turn.calls, TOOL_CALLS_PER_TURN + 2)
          assert.approximately(turn.done.data.usage.cost_usd, turn.billedUsd, 1e-9)
        }
        const [cost1, cost2] = free.map((t) => t.done.data.usage.cost_usd as number)

        const limit = Number((cost1 + cost2 / 2).toFixed(6))
        const b = setup({ "fake-model": PRICE })
        const server = await startServerProcess({
          ...env(b.dir, b.pricesFile),
          REACT_CONVERSATION_BUDGET_USD: String(limit)
        })
        try {
          const [first, second] = await twoTurns(server.url, fake, billed)
          // the first run fits whole
          assert.strictEqual(exhaustedIn(first).length, 0, first.events.map((e) => e.event).join(","))
          assert.strictEqual(first.calls, TOOL_CALLS_PER_TURN + 2)
          assert.strictEqual(first.done.data.answer, "Here is what I found.")
          // the second is held to what the first left: it stops early and still answers
          const exhausted = exhaustedIn(second)
          assert.strictEqual(exhausted.length, 1, second.events.map((e) => e.event).join(","))
          assert.isTrue(
            exhausted[0].data.limit_usd <= limit - first.done.data.usage.cost_usd + 1e-9,
            JSON.stringify(exhausted[0].data)
          )
          assert.isTrue(second.calls < free[1].calls, `${second.calls} model calls, ${free[1].calls} without the limit`)
          assert.isTrue(typeof second.done.data.answer === "string" && second.done.data.answer.length > 0)
          // together, never over the limit: as reported and as billed
          const reported = first.done.data.usage.cost_usd + second.done.data.usage.cost_usd
          assert.isTrue(reported <= limit, `reported $${reported} of $${limit}`)
          assert.isTrue(
            first.billedUsd + second.billedUsd <= limit,
            `billed $${first.billedUsd + second.billedUsd} of $${limit}`
          )
          console.log(
            `conversation budget $${limit}: calibration runs $${cost1} (${free[0].calls} calls) + $${cost2} (${
              free[1].calls
            } calls); ` +
              `limited runs $${first.done.data.usage.cost_usd} (${first.calls} calls) + $${second.done.data.usage.cost_usd} (${second.calls} calls), ` +
              `exhausted ${JSON.stringify(exhausted[0].data)}`
          )
        } finally {
          await server.kill("SIGTERM")
        }
      } finally {
        await fake.close()
      }
    },
    120_000
  )

  it("a conversation budget without a price for the model in use stops start-up naming the model", async () => {
    const error = await startupErrorWithoutPrice("REACT_CONVERSATION_BUDGET_USD")
    assert.match(error, /the server exited while starting/)
    assert.match(error, /price for model fake-model/)
  }, 90_000)
})
