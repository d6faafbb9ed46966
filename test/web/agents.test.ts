/**
 * Sub-agents on the page (SPEC §27), in a real browser against the page's test
 * server replaying the wire events of a run with a child: the child's steps are
 * drawn inside the card of the call that started it, open while it works,
 * collapsed when it is done; its answer stays in its own view (the run's answer
 * is the parent's); a grandchild nests inside the child's card.
 */
import { assert, layer } from "@effect/vitest"
import { Effect } from "effect"
import { Chromium, ChromiumLive, openPage, pw } from "../utils/browser.js"
import { fakeWebServer, type ScriptedEvent } from "../utils/webFakeServer.js"

const usage = { prompt_tokens: 120, completion_tokens: 30, total_tokens: 150, llm_calls: 3 }
const child = { name: "research", run_id: "run_child", parent_run_id: "run_top", depth: 1, tool_call_id: "call_r1" }
const grandchild = { name: "leaf", run_id: "run_leaf", parent_run_id: "run_child", depth: 2, tool_call_id: "call_l1" }

const step = (data: Record<string, unknown>, delay = 0): ScriptedEvent => ({ event: "step", data, delay })
const answer = (content: string, agent?: object): ReadonlyArray<ScriptedEvent> => [
  { event: "answer", data: { status: "start", ...(agent ? { agent } : {}) } },
  { event: "answer", data: { status: "delta", content, ...(agent ? { agent } : {}) }, delay: 10 },
  { event: "answer", data: { status: "done", ...(agent ? { agent } : {}) } }
]

const script = (): ReadonlyArray<ScriptedEvent> => [
  step({ type: "thinking", status: "start", iteration: 1 }),
  step({ type: "thinking", status: "done", iteration: 1, reasoning: "delegate" }, 10),
  step({
    type: "iteration",
    status: "start",
    iteration: 1,
    tool_name: "research",
    tool_args: { query: "2+3?" },
    tool_call_id: "call_r1"
  }),
  { event: "agent", data: { type: "agent", status: "start", agent: child, query: "2+3?" } },
  step({ type: "thinking", status: "start", iteration: 1, agent: child }),
  step({
    type: "iteration",
    status: "start",
    iteration: 1,
    tool_name: "add",
    tool_args: { a: 2, b: 3 },
    tool_call_id: "call_a1",
    agent: child
  }),
  step({
    type: "iteration",
    status: "done",
    iteration: 1,
    tool_name: "add",
    observation: "5",
    error: null,
    iter_elapsed: 0.01,
    tool_call_id: "call_a1",
    agent: child
  }, 10),
  step({
    type: "iteration",
    status: "start",
    iteration: 2,
    tool_name: "leaf",
    tool_args: { query: "check" },
    tool_call_id: "call_l1",
    agent: child
  }),
  { event: "agent", data: { type: "agent", status: "start", agent: grandchild, query: "check" } },
  ...answer("leaf says yes", grandchild),
  {
    event: "agent",
    data: {
      type: "agent",
      status: "done",
      agent: grandchild,
      answer: "leaf says yes",
      iterations: 1,
      usage,
      elapsed: 0.2
    }
  },
  step({
    type: "iteration",
    status: "done",
    iteration: 2,
    tool_name: "leaf",
    observation: "leaf says yes",
    error: null,
    iter_elapsed: 0.2,
    tool_call_id: "call_l1",
    agent: child
  }),
  ...answer("CHILD ANSWER", child),
  // the child is still working here: the test looks at the page before it ends
  {
    event: "agent",
    data: { type: "agent", status: "done", agent: child, answer: "CHILD ANSWER", iterations: 2, usage, elapsed: 1.5 },
    delay: 1500
  },
  step({
    type: "iteration",
    status: "done",
    iteration: 1,
    tool_name: "research",
    observation: "CHILD ANSWER",
    error: null,
    iter_elapsed: 1.6,
    tool_call_id: "call_r1",
    content_type: "markdown"
  }),
  step({ type: "answer", status: "start" }),
  ...answer("PARENT ANSWER"),
  { event: "done", data: { answer: "PARENT ANSWER", iterations: 2, usage, elapsed: 2, pending_injections: [] } }
]

layer(ChromiumLive, { timeout: "60 seconds", excludeTestServices: true })("sub-agents on the page", (it) => {
  it.scoped("a child's steps nest in the calling card, open while it works, collapsed when done; the answer is the parent's", () =>
    Effect.gen(function*() {
      const server = yield* fakeWebServer(script)
      const browser = yield* Chromium
      const { errors, page } = yield* openPage(browser)
      yield* pw(() => page.goto(server.url))
      yield* pw(() => page.fill("#composer-input", "what is 2+3?"))
      yield* pw(() => page.keyboard.press("Enter"))
      // while the child works: its section is open in the research card, with its own tool card inside
      const nested = `.card[data-key="id:call_r1"] details.agent[data-run-id="run_child"]`
      yield* pw(() => page.waitForSelector(`${nested}[open] .card[data-tool="add"]`))
      assert.isTrue(
        yield* pw(() => page.locator(`.card[data-key="id:call_r1"]`).evaluate((e) => (e as HTMLDetailsElement).open))
      )
      assert.include(yield* pw(() => page.textContent(`${nested} .agent-state`)), "working")
      // the grandchild nests in the child's card of its call
      const leaf = `${nested} .card[data-key="id:call_l1"] details.agent[data-run-id="run_leaf"]`
      assert.strictEqual(yield* pw(() => page.locator(leaf).count()), 1)
      assert.strictEqual(yield* pw(() => page.getAttribute(leaf, "data-depth")), "2")

      yield* pw(() => page.waitForSelector("#transcript > article.turn > section.run > .run-footer:not([hidden])"))
      // done: collapsed, with what it took
      assert.isFalse(yield* pw(() => page.locator(nested).evaluate((e) => (e as HTMLDetailsElement).open)))
      assert.include(yield* pw(() => page.getAttribute(nested, "class")) ?? "", "ok")
      assert.include(yield* pw(() => page.textContent(`${nested} .agent-state`)), "2 iterations")
      // the child's answer is in its own view; the run's answer is the parent's alone
      assert.include(
        yield* pw(() => page.textContent(`${nested} > article.turn > section.run > .answer`)),
        "CHILD ANSWER"
      )
      const runAnswer = yield* pw(() => page.textContent("#transcript > article.turn > section.run > .answer"))
      assert.strictEqual(runAnswer?.trim(), "PARENT ANSWER")
      // no spinner or running card left anywhere
      assert.strictEqual(
        yield* pw(() => page.locator(".card.running, details.agent.running, .thinking.active").count()),
        0
      )
      assert.deepStrictEqual(errors, [])
    }))
})
