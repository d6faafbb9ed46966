/**
 * A model that gives two parallel calls the SAME id (a provider quirk) must not
 * make them one call: each runs once (in a durable run, each is an activity of its
 * own, named after its call id), and the stored conversation — what the next turn
 * sends to the model — keeps both outcomes, each paired with its own call.
 * (SPEC §3.3; the loop replaces a repeated or empty id, `normaliseIds` in
 * src/internal/reactAgent/native.ts.)
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Tool from "../../src/Tool.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { getJson, openSse } from "../utils/sse.js"

/** `lookup` knows about tides and fails for anything else; every real execution is logged. */
const recordingLookup = () => {
  const ran: Array<string> = []
  const tool = Tool.make({
    name: "lookup",
    description: "Looks a topic up",
    parameters: Schema.Struct({ topic: Schema.String }),
    handler: ({ topic }) =>
      Effect.suspend(() => {
        ran.push(topic)
        return topic === "tides"
          ? Effect.succeed("Facts about tides.")
          : Effect.fail(new Tool.ToolError({ message: `no facts about ${topic}` }))
      })
  })
  return { tool, ran }
}

const hasToolResult = (body: any) => (body?.messages ?? []).some((m: any) => m.role === "tool")

/** Two parallel calls, both with id `call_dup`, whose outcomes differ; then an answer. */
const duplicateRound: FakeOpenAi.FakeResponder = (body) => {
  if (body?.stream) return FakeOpenAi.sseText("Tides follow the moon; nothing is known about the rest.")
  return hasToolResult(body)
    ? FakeOpenAi.completion({ content: "Tides follow the moon." })
    : FakeOpenAi.completion({
      toolCalls: [
        { id: "call_dup", name: "lookup", arguments: "{\"topic\":\"tides\"}" },
        { id: "call_dup", name: "lookup", arguments: "{\"topic\":\"nothing\"}" }
      ]
    })
}

/**
 * The one tool-call group of a message list, as `[id, topic, tool message content]`,
 * after checking it: distinct non-empty ids, each answered by exactly one tool
 * message, right after the assistant message and in call order.
 */
const pairedOutcomes = (messages: ReadonlyArray<any>): Array<[string, string, string]> => {
  const groups = messages.flatMap((m, i) => (m.role === "assistant" && (m.tool_calls ?? []).length > 0 ? [i] : []))
  assert.strictEqual(groups.length, 1, "one assistant message with tool calls")
  const at = groups[0]
  const calls: Array<any> = messages[at].tool_calls
  const ids = calls.map((c) => c.id)
  assert.strictEqual(ids.length, 2)
  assert.notInclude(ids, "")
  assert.strictEqual(new Set(ids).size, 2, `distinct ids: ${JSON.stringify(ids)}`)
  const tools = messages.filter((m) => m.role === "tool")
  for (const id of ids) {
    assert.strictEqual(tools.filter((m) => m.tool_call_id === id).length, 1, `one tool message for ${id}`)
  }
  return calls.map((c, k) => {
    const answer = messages[at + 1 + k]
    assert.strictEqual(answer.role, "tool")
    assert.strictEqual(answer.tool_call_id, c.id, "tool messages in call order right after their calls")
    return [c.id, JSON.parse(c.function.arguments).topic, answer.content]
  })
}

describe("two parallel calls with the same id", () => {
  it.scopedLive(
    "each runs once; the model and the stored conversation get both outcomes, each paired with its own call",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(duplicateRound)
        const lookup = recordingLookup()
        const { url } = yield* startServer({ llmUrl: fake.url, tools: [lookup.tool] })
        const result = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, { body: { query: "tides?", conversation_id: "dup" } })
        )
        const done = result.events[result.events.length - 1]
        assert.strictEqual(done.event, "done")
        assert.isFalse(result.events.some((e) => e.event === "error"))
        // two real executions, one per call (a call sharing the other's activity would not run)
        assert.deepStrictEqual([...lookup.ran].sort(), ["nothing", "tides"])
        // loop, loop, synthesis: no request repeated
        assert.deepStrictEqual(fake.requests.map((r) => r.body.stream === true), [false, false, true])

        const expected = (outcomes: Array<[string, string, string]>) => {
          assert.strictEqual(outcomes[0][0], "call_dup", "the first call keeps the model's id")
          assert.deepStrictEqual(outcomes.map(([, topic, content]) => [topic, content]), [
            ["tides", "Facts about tides."],
            ["nothing", "Error: no facts about nothing"]
          ])
        }
        // what the model was sent after the round
        const sent = pairedOutcomes(fake.requests[1].body.messages)
        expected(sent)
        // what is stored (the next turn's history)
        const stored = yield* Effect.promise(() => getJson(`${url}/api/conversations/dup`))
        assert.strictEqual(stored.status, 200)
        const kept = pairedOutcomes(stored.body.messages)
        expected(kept)
        assert.deepStrictEqual(kept, sent, "the stored ids are the ones the model saw")
      }),
    30_000
  )
})
