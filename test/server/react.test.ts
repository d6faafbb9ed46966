import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { getJson, labels, openSse } from "../utils/sse.js"

const hasToolResult = (body: any) => (body?.messages ?? []).some((m: any) => m.role === "tool")

/** A model that calls the calculator once, then answers; synthesis streams three chunks. */
const calculatorRound: FakeOpenAi.FakeResponder = (body) => {
  if (body?.stream) {
    return FakeOpenAi.sse([
      FakeOpenAi.chunk.role(),
      FakeOpenAi.chunk.content("2 + 3 "),
      FakeOpenAi.chunk.content("is **5**"),
      FakeOpenAi.chunk.content("."),
      FakeOpenAi.chunk.finish("stop"),
      FakeOpenAi.chunk.usage(30, 6)
    ])
  }
  return hasToolResult(body)
    ? FakeOpenAi.completion({ content: "The result is 5.", usage: { prompt: 40, completion: 5 } })
    : FakeOpenAi.completion({
      content: "",
      reasoningContent: "I should compute it.",
      toolCalls: [{ id: "call_1", name: "calculator", arguments: JSON.stringify({ expression: "2+3" }) }],
      usage: { prompt: 20, completion: 8 }
    })
}

describe("POST /api/react", () => {
  it.scopedLive("streams a full tool round as SSE, in order, with ids and usage", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(calculatorRound)
      const server = yield* startServer({ llmUrl: fake.url })
      const result = yield* Effect.promise(() =>
        openSse(`${server.url}/api/react`, { body: { query: "What is 2+3?" } })
      )
      assert.strictEqual(result.status, 200)
      assert.strictEqual(result.headers.get("content-type"), "text/event-stream")
      assert.strictEqual(result.headers.get("cache-control"), "no-cache")
      assert.strictEqual(result.headers.get("x-accel-buffering"), "no")
      const conversationId = result.headers.get("x-conversation-id")
      assert.isString(conversationId)
      assert.include(result.comments, "ping")

      assert.deepStrictEqual(labels(result.events), [
        "step:thinking:start",
        "step:thinking:done",
        "step:iteration:start",
        "step:iteration:done",
        "step:thinking:start",
        "step:thinking:done",
        "step:answer:start",
        "answer:start",
        "answer:delta",
        "answer:delta",
        "answer:delta",
        "answer:done",
        "done"
      ])
      // ids: 1, 2, 3… per run
      assert.deepStrictEqual(result.events.map((e) => e.id), result.events.map((_, i) => String(i + 1)))
      const [t1, t1done, toolStart, toolDone] = result.events
      assert.deepStrictEqual(t1.data, { type: "thinking", status: "start", iteration: 1 })
      assert.strictEqual(t1done.data.reasoning, "I should compute it.")
      assert.strictEqual(toolStart.data.tool_name, "calculator")
      assert.deepStrictEqual(toolStart.data.tool_args, { expression: "2+3" })
      assert.strictEqual(toolStart.data.tool_call_id, "call_1")
      assert.include(toolDone.data.observation, "5")
      assert.isNull(toolDone.data.error)
      const deltas = result.events.filter((e) => e.event === "answer" && e.data.status === "delta")
      assert.strictEqual(deltas.map((e) => e.data.content).join(""), "2 + 3 is **5**.")
      const done = result.events[result.events.length - 1].data
      assert.strictEqual(done.answer, "2 + 3 is **5**.")
      assert.strictEqual(done.conversation_id, conversationId)
      assert.strictEqual(done.usage.llm_calls, 3)
      assert.strictEqual(done.usage.prompt_tokens, 20 + 40 + 30)
      assert.deepStrictEqual(done.pending_injections, [])
      assert.isUndefined(done.messages)

      // the turn is stored: query, tool call + tool message, answer
      const stored = yield* Effect.promise(() => getJson(`${server.url}/api/conversations/${conversationId}`))
      assert.strictEqual(stored.status, 200)
      const roles = stored.body.messages.map((m: any) => m.role)
      assert.deepStrictEqual(roles.slice(0, 3), ["user", "assistant", "tool"])
      assert.strictEqual(roles[roles.length - 1], "assistant")
      assert.strictEqual(stored.body.messages[0].content, "What is 2+3?")
      assert.strictEqual(stored.body.messages[1].tool_calls[0].id, "call_1")
      assert.strictEqual(stored.body.messages[2].tool_call_id, "call_1")
      assert.strictEqual(stored.body.messages[stored.body.messages.length - 1].content, "2 + 3 is **5**.")
      // the loop's own final reply is replaced by the synthesized answer
      assert.deepStrictEqual(roles, ["user", "assistant", "tool", "assistant"])

      const list = yield* Effect.promise(() => getJson(`${server.url}/api/conversations`))
      assert.strictEqual(list.status, 200)
      assert.deepStrictEqual(
        list.body.conversations.map((c: any) => [c.id, c.title, c.turns]),
        [[conversationId, "What is 2+3?", 1]]
      )

      const health = yield* Effect.promise(() => getJson(`${server.url}/health`))
      assert.deepStrictEqual(health.body, { status: "ok", model: "fake-model", demo: false, tools: 2 })
    }), 30_000)
})
