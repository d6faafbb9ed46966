/**
 * The `agent` field of a child run's events (SPEC §27) on the wire: every channel
 * carries it in the payload, `fromWire` gives the same event back, the run's own
 * events are unchanged (no `agent` key), and a child's start and end travel on the
 * `agent` channel.
 */
import { assert, describe, it } from "@effect/vitest"
import * as RunEvent from "../../src/RunEvent.js"
import * as EventWire from "../../src/server/EventWire.js"

const agent: RunEvent.AgentRef = {
  name: "researcher",
  run_id: "run_child",
  parent_run_id: "run_parent",
  depth: 1,
  tool_call_id: "call_1"
}
const usage = { prompt_tokens: 3, completion_tokens: 2, total_tokens: 5, llm_calls: 1, by_phase: {} }

const forwarded: ReadonlyArray<RunEvent.RunEvent> = [
  { _tag: "ThinkingStart", iteration: 1, agent },
  { _tag: "ThinkingDone", iteration: 1, reasoning: "r", agent },
  {
    _tag: "ToolStart",
    iteration: 1,
    tool_name: "calculator",
    tool_args: { expression: "1+1" },
    tool_call_id: "c",
    agent
  },
  { _tag: "ToolDone", iteration: 1, tool_name: "calculator", observation: "2", error: null, iter_elapsed: 0.1, agent },
  { _tag: "AnswerStart", agent },
  { _tag: "AnswerDelta", content: "two", agent },
  { _tag: "AnswerDone", agent },
  { _tag: "AnswerReset", agent },
  { _tag: "AnswerSignal", agent },
  { _tag: "Compact", original_messages: 9, kept_messages: 4, agent },
  { _tag: "Inject", content: "more", id: "i1", agent },
  { _tag: "Resumed", agent },
  { _tag: "LlmRetry", attempt: 1, reason: "RateLimited", delay_ms: 10, agent },
  { _tag: "GuardrailTripped", stage: "output", name: "n", reason: "why", agent },
  { _tag: "AgentStart", agent, query: "find it" },
  { _tag: "AgentDone", agent, answer: "found", iterations: 2, usage, elapsed: 0.5 },
  { _tag: "AgentDone", agent, answer: "", iterations: 1, usage, elapsed: 0.5, error: "boom" }
]

describe("EventWire: the agent field", () => {
  it("every forwarded event carries agent on the wire and comes back whole", () => {
    for (const event of forwarded) {
      const wire = EventWire.toWire(event)
      assert.deepStrictEqual(wire.data.agent, agent, event._tag)
      assert.deepStrictEqual(EventWire.fromWire(wire.channel, JSON.parse(JSON.stringify(wire.data))), event, event._tag)
    }
  })

  it("a child's start and end are on the agent channel", () => {
    assert.deepStrictEqual(EventWire.toWire({ _tag: "AgentStart", agent, query: "q" }), {
      channel: "agent",
      data: { type: "agent", status: "start", agent, query: "q" }
    })
    const done = EventWire.toWire({ _tag: "AgentDone", agent, answer: "a", iterations: 1, usage, elapsed: 1 })
    assert.strictEqual(done.channel, "agent")
    assert.strictEqual(done.data.status, "done")
  })

  it("the run's own events have no agent key", () => {
    const own: RunEvent.RunEvent = { _tag: "ToolStart", iteration: 1, tool_name: "t", tool_args: {} }
    assert.isFalse("agent" in EventWire.toWire(own).data)
    assert.isTrue(RunEvent.isOwn(own))
    assert.isFalse(RunEvent.isOwn(forwarded[0]!))
    assert.isUndefined(RunEvent.agentOf({ _tag: "RunFailed", message: "m", retryable: false }))
  })
})

describe("EventWire: every event comes back from the wire", () => {
  it("budget and guardrail events too (a stored run read again for a cassette keeps them)", () => {
    const events: ReadonlyArray<RunEvent.RunEvent> = [
      { _tag: "BudgetExhausted", spent_tokens: 10, limit_tokens: 20 },
      { _tag: "BudgetStatus", status: "extended", spent_usd: 0.1, limit_usd: 0.2 },
      { _tag: "GuardrailTripped", stage: "input", name: "secrets", reason: "a key" },
      { _tag: "DagPhase", phase: "analyzing", round: 1 },
      { _tag: "Resumed" }
    ]
    for (const event of events) {
      const wire = EventWire.toWire(event)
      assert.deepStrictEqual(EventWire.fromWire(wire.channel, JSON.parse(JSON.stringify(wire.data))), event, event._tag)
    }
  })
})
