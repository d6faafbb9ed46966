/**
 * `LLM_PROVIDER=anthropic`: the real server process (what `npm start` runs) over
 * the real `@effect/ai-anthropic` client, against the fake Anthropic Messages
 * API over HTTP. A tool-using conversation end to end: the model calls the
 * calculator, gets its result back as a `tool_result` for the id the fake gave,
 * answers; a second turn of the same conversation reads the prefix the first
 * wrote (cache usage reaches `done.usage`). A bad provider value, a refused
 * provider and a missing key are start-up errors saying what to do.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as FakeAnthropic from "../utils/fakeAnthropicServer.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { openSse } from "../utils/sse.js"

const toolResults = (body: any): Array<any> =>
  (body.messages ?? []).flatMap((
    m: any
  ) => (Array.isArray(m.content) ? m.content.filter((c: any) => c.type === "tool_result") : []))

const anthropicEnv = (url: string, extra: Record<string, string> = {}) => ({
  LLM_PROVIDER: "anthropic",
  LLM_MODEL: "claude-test",
  ANTHROPIC_API_KEY: "sk-ant-test",
  LLM_BASE_URL: url,
  DATABASE_PATH: join(mkdtempSync(join(tmpdir(), "react-anthropic-")), "react.sqlite"),
  ...extra
})

describe("LLM_PROVIDER=anthropic (server process, fake Messages API)", () => {
  it.live(
    "a tool-using conversation end to end, two turns, cache usage in done.usage",
    () =>
      Effect.promise(async () => {
        // a turn's first request calls the calculator; once its result is in, the model answers
        const fake = await FakeAnthropic.start((body) => {
          const last = body.messages.at(-1)
          const answered = Array.isArray(last.content) && last.content.some((c: any) => c.type === "tool_result")
          if (answered) return FakeAnthropic.text(`The result is ${JSON.parse(toolResults(body).at(-1).content)}.`)
          return FakeAnthropic.toolUse([{
            name: "calculator",
            input: { expression: body.messages.length > 1 ? "6*7+1" : "6*7" }
          }])
          // the engine's default system prompt and two built-in tools are under 1,024 tokens: a lower threshold here
        }, { minCacheTokens: 64 })
        const server = await startServerProcess(anthropicEnv(fake.url))
        try {
          const turn = async (query: string) => {
            const result = await openSse(`${server.url}/api/react`, {
              body: { query, conversation_id: "claude-e2e" },
              timeoutMs: 60_000
            })
            const done = result.events.at(-1)
            assert.strictEqual(done?.event, "done", JSON.stringify(result.events.slice(-3)))
            return { events: result.events, done: done!.data }
          }
          const first = await turn("What is 6*7?")
          const tool = first.events.find((e) =>
            e.event === "step" && e.data.type === "iteration" && e.data.status === "done"
          )
          assert.strictEqual(tool?.data.observation, "6*7 = 42", "the calculator ran with the model's arguments")
          assert.strictEqual(
            first.done.answer,
            "The result is 6*7 = 42.",
            "the answer the model gave after seeing the result"
          )
          // every request went to /v1/messages with the key, and the tool result answered the fake's own id
          assert.isTrue(
            fake.requests.every((r) => r.path.startsWith("/v1/messages") && r.headers["x-api-key"] === "sk-ant-test")
          )
          const second = fake.requests[1].body
          const use = second.messages.at(-2).content.find((c: any) => c.type === "tool_use")
          assert.strictEqual(toolResults(second)[0].tool_use_id, use.id)
          assert.strictEqual(use.id, "toolu_1_0")
          const turn2 = await turn("And 6*7+1?")
          assert.strictEqual(turn2.done.answer, "The result is 6*7+1 = 43.")
          const usage = turn2.done.usage
          assert.isAbove(usage.cached_input_tokens, 0, "the second turn reads the conversation's cached prefix")
          assert.isAtLeast(usage.cache_write_input_tokens, 0)
          assert.strictEqual(
            usage.cached_input_tokens,
            fake.requests.slice(-2).reduce((s, r) => s + r.usage!.cache_read_input_tokens, 0),
            "done.usage reports what the API reported"
          )
        } finally {
          await server.kill("SIGTERM")
          await fake.close()
        }
      }),
    120_000
  )

  it.live(
    "start-up errors: a refused provider says why, a missing key names the variable",
    () =>
      Effect.promise(async () => {
        const refused = await startServerProcess(anthropicEnv("http://127.0.0.1:9", { LLM_PROVIDER: "google" }), 30_000)
          .then(
            () => assert.fail("the server started"),
            (e: Error) => e.message
          )
        assert.include(refused, "LLM_PROVIDER=google is not supported")
        assert.include(refused, "@effect/ai ^0.36")
        const noKey = await startServerProcess(anthropicEnv("http://127.0.0.1:9", { ANTHROPIC_API_KEY: "" }), 30_000)
          .then(
            () => assert.fail("the server started"),
            (e: Error) => e.message
          )
        assert.include(noKey, "ANTHROPIC_API_KEY")
      }),
    120_000
  )
})
