/**
 * Budget policy `ask` across a `kill -9` (SPEC §21, §15): the real server
 * process on a SQLite file, configured from the environment
 * (`REACT_RUN_BUDGET_USD`, `REACT_BUDGET_POLICY=ask`, `MODEL_PRICES_FILE`),
 * against an OpenAI-compatible fake that would call tools forever. The run
 * waits with `budget {status:"exhausted"}`; the server is killed while it
 * waits and restarted on the same file; the wait is still there, `POST
 * /api/react/budget` extends it, the loop goes on, waits again, `stop` ends it
 * with an answer. The route refuses a bad body (400) and a conversation that
 * does not wait (404).
 */
import { assert, describe, it } from "@effect/vitest"
import { mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { modelEnv, resume, waitUntil } from "../utils/killMatrix.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { openSse, postJson, type SseEvent } from "../utils/sse.js"

const PRICE = { input: 2, output: 8 }

const isBudget = (e: SseEvent, status: string) => e.event === "budget" && e.data.status === status

describe("budget policy ask, durable", () => {
  it("the wait survives kill -9; extend resumes the loop; stop ends it with an answer", async () => {
    const fake = await FakeOpenAi.start((body, index) =>
      body.stream === true
        ? FakeOpenAi.sseText("Answer from what I have.", { usage: { prompt: 300, completion: 6 } })
        : FakeOpenAi.completion({
          toolCalls: [{
            id: FakeOpenAi.freshCallId(index),
            name: "calculator",
            arguments: JSON.stringify({ expression: `${index}*2` })
          }],
          usage: {
            prompt: Math.ceil(JSON.stringify(body.messages).length / 4),
            completion: Math.min(20, body.max_tokens ?? 20)
          }
        })
    )
    const dir = mkdtempSync(join(tmpdir(), "react-budget-ask-"))
    const pricesFile = join(dir, "prices.json")
    writeFileSync(pricesFile, JSON.stringify({ "fake-model": PRICE }))
    const env = {
      DATABASE_PATH: join(dir, "react.sqlite"),
      RUN_DETACH_GRACE_MS: "60000",
      ...modelEnv(fake.url),
      REACT_RUN_BUDGET_USD: "0.03",
      REACT_BUDGET_POLICY: "ask",
      MODEL_PRICES_FILE: pricesFile
    }
    const first = await startServerProcess(env)
    let second: Awaited<ReturnType<typeof startServerProcess>> | undefined
    try {
      // the run reaches its budget and waits; the client reads until it sees the wait, then the server dies
      const before: Array<SseEvent> = []
      await openSse(`${first.url}/api/react`, {
        body: { query: "count forever", conversation_id: "ask-kill" },
        timeoutMs: 60_000,
        until: (e) => isBudget(e, "exhausted"),
        onEvent: (e) => void before.push(e)
      })
      const exhausted = before.find((e) => isBudget(e, "exhausted"))!
      assert.strictEqual(exhausted.data.limit_usd, 0.03)
      assert.isTrue(exhausted.data.spent_usd <= 0.03)
      const requestsBefore = fake.requests.length
      assert.isAbove(requestsBefore, 2, "the loop ran a while before the wait")
      // the route: a bad body, a conversation that does not wait
      assert.strictEqual(
        (await postJson(`${first.url}/api/react/budget`, { conversation_id: "ask-kill", decision: "extend" })).status,
        400
      )
      assert.strictEqual(
        (await postJson(`${first.url}/api/react/budget`, { conversation_id: "nobody", decision: "stop" })).status,
        404
      )
      await first.kill("SIGKILL")

      second = await startServerProcess({ ...env, PORT: String(first.port) })
      const url = second.url
      // the restarted run waits again (no model request while it waits): extend answers it
      let extended = { status: 0, body: undefined as unknown }
      let requestsAtExtend = -1
      await waitUntil(
        async () => {
          requestsAtExtend = fake.requests.length
          extended = await postJson(`${url}/api/react/budget`, {
            conversation_id: "ask-kill",
            decision: "extend",
            add_usd: 0.01
          })
          return extended.status !== 404
        },
        30_000,
        "the wait after the restart"
      )
      assert.strictEqual(extended.status, 200, JSON.stringify(extended.body))
      // it waited where it was: no model request between the kill and the person's answer
      assert.strictEqual(requestsAtExtend, requestsBefore, "the restarted run made no model call before the extension")
      // it waits again once the extension is spent: stop
      let stopped = { status: 0, body: undefined as unknown }
      await waitUntil(
        async () => {
          stopped = await postJson(`${url}/api/react/budget`, { conversation_id: "ask-kill", decision: "stop" })
          return stopped.status !== 404
        },
        30_000,
        "the second wait"
      )
      assert.strictEqual(stopped.status, 200, JSON.stringify(stopped.body))

      const after = await resume(url, "ask-kill", before[before.length - 1].id)
      const statuses = after.filter((e) => e.event === "budget").map((e) => e.data.status)
      assert.deepStrictEqual(statuses, ["extended", "exhausted", "stopped"], after.map((e) => e.event).join(","))
      const extendedEvent = after.find((e) => isBudget(e, "extended"))!
      assert.strictEqual(extendedEvent.data.limit_usd, 0.04)
      // the wait after the restart is the wait from before it: same spending
      assert.strictEqual(extendedEvent.data.spent_usd, exhausted.data.spent_usd)
      // the loop went on after the extension: tool rounds, more model requests
      assert.isTrue(after.some((e) => e.event === "step" && e.data.type === "iteration" && e.data.status === "start"))
      assert.isAbove(fake.requests.length, requestsBefore)
      const done = after[after.length - 1]
      assert.strictEqual(done.event, "done")
      assert.strictEqual(done.data.answer, "Answer from what I have.")
      assert.isTrue(done.data.usage.cost_usd <= 0.04, `cost ${done.data.usage.cost_usd}`)
    } finally {
      if (second !== undefined) await second.kill("SIGTERM")
      else await first.kill("SIGKILL").catch(() => undefined)
      await fake.close()
    }
  }, 180_000)
})
