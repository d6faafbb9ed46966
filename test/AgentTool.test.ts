import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as AgentTool from "../src/AgentTool.js"
import * as Approvals from "../src/Approvals.js"
import * as DagAgent from "../src/DagAgent.js"
import * as Hooks from "../src/Hooks.js"
import { textOf } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import * as Usage from "../src/Usage.js"
import { addTool, makeAgent, writer } from "./utils/agentLayers.js"
import { makeDag, planReply, stepText } from "./utils/dagLayers.js"

const quiet = { completionCheck: false, selfReflectionInterval: 0 }
const u = (prompt: number, completion: number) => ({ usage: { prompt, completion } })

/** The agent service of a harness layer, built in the test's scope. */
const agentOf = <A extends ReactAgent.ReactAgent | DagAgent.DagAgent>(
  tag: Context.Tag<A, Context.Tag.Service<A>>,
  layer: Layer.Layer<A, never, never>
) => Effect.map(Layer.build(layer), (context) => Context.get(context, tag))

const without = ({ by_phase: _, ...usage }: Usage.RunUsage): Usage.Usage => usage

/** A sub-agent (add 2+3, then answer) on its own scripted model. */
const subScript = [
  ScriptedLlm.toolCall("add", { a: 2, b: 3 }, u(7, 3)),
  ScriptedLlm.text("five", u(11, 2)),
  ScriptedLlm.text("The sum is 5.", u(13, 4))
]

describe("ReactAgent.asTool", () => {
  it.scoped("the call runs the sub-agent on the query; its usage rolls up into by_phase.subagents exactly", () =>
    Effect.gen(function*() {
      const sub = makeAgent(subScript, { tools: [addTool], agent: quiet })
      const subAgent = yield* agentOf(ReactAgent.ReactAgent, sub.layer)
      const seen: Array<readonly [string, string | undefined, string]> = []
      const research = ReactAgent.asTool(subAgent, {
        name: "research",
        description: "Researches a question",
        onEvent: (event, subRun) => Effect.sync(() => seen.push([event._tag, subRun.toolCallId, subRun.conversationId]))
      })
      const parent = makeAgent([
        ScriptedLlm.toolCall("research", { query: "what is 2+3?" }, { id: "call_r1", ...u(20, 5) }),
        ScriptedLlm.text("5", u(30, 1)),
        ScriptedLlm.text("It is 5.", u(40, 3))
      ], { tools: [research], agent: quiet })
      const result = yield* Effect.flatMap(
        ReactAgent.ReactAgent,
        (a) => a.runCollect({ query: "2+3?", conversationId: "parent" })
      ).pipe(
        Effect.provide(parent.layer)
      )

      // the sub-run got the model's query, on a fresh conversation
      const subQuery = sub.requests()[0].request.messages.filter((m) => m.role === "user").map((m) => textOf(m.content))
      assert.deepStrictEqual(subQuery, ["what is 2+3?"])
      const subConversation = seen[0][2]
      assert.match(subConversation, /^parent\/research\/[0-9a-f]{8}$/)

      // its answer is the parent's observation
      const step = result.steps[0]
      assert.strictEqual(step.tool_name, "research")
      assert.strictEqual(step.observation, "The sum is 5.")
      assert.isNull(step.error)
      assert.strictEqual(result.answer, "It is 5.")

      // every sub-run event was observed, nested under the parent's call id
      const subDone = seen.filter(([tag]) => tag === "Done")
      assert.strictEqual(subDone.length, 1)
      assert.deepStrictEqual([...new Set(seen.map(([, id]) => id))], ["call_r1"])
      assert.deepStrictEqual(seen.map(([tag]) => tag).filter((t) => t.startsWith("Tool")), ["ToolStart", "ToolDone"])

      // sub-run: loop 18+5 (2 calls) + synthesis 13+4 (1 call)
      const subUsage = Usage.make(31, 9, { calls: 3 })
      assert.deepStrictEqual(step.usage, subUsage)
      assert.deepStrictEqual(result.usage.by_phase, {
        loop: Usage.make(50, 6, { calls: 2 }),
        synthesis: Usage.make(40, 3, { calls: 1 }),
        subagents: subUsage
      })
      assert.deepStrictEqual(without(result.usage), Usage.make(121, 18, { calls: 6 }))
    }))

  it.scoped("two levels deep: the grandchild's usage is in the child's total, and so in the parent's", () =>
    Effect.gen(function*() {
      const leaf = yield* agentOf(
        ReactAgent.ReactAgent,
        makeAgent([ScriptedLlm.text("leaf", u(1, 1)), ScriptedLlm.text("leaf answer", u(2, 2))], { agent: quiet }).layer
      )
      const middle = makeAgent([
        ScriptedLlm.toolCall("leaf", { query: "deeper" }, u(3, 3)),
        ScriptedLlm.text("mid", u(4, 4)),
        ScriptedLlm.text("middle answer", u(5, 5))
      ], { tools: [ReactAgent.asTool(leaf, { name: "leaf", description: "leaf agent" })], agent: quiet })
      const middleAgent = yield* agentOf(ReactAgent.ReactAgent, middle.layer)
      const top = makeAgent([
        ScriptedLlm.toolCall("middle", { query: "go" }, u(6, 6)),
        ScriptedLlm.text("top", u(7, 7)),
        ScriptedLlm.text("top answer", u(8, 8))
      ], { tools: [ReactAgent.asTool(middleAgent, { name: "middle", description: "middle agent" })], agent: quiet })
      const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "start" })).pipe(
        Effect.provide(top.layer)
      )
      // middle = its own 3+4+5 (3 calls) + leaf 1+2 (2 calls)
      assert.deepStrictEqual(result.usage.by_phase.subagents, Usage.make(15, 15, { calls: 5 }))
      assert.deepStrictEqual(without(result.usage), Usage.make(36, 36, { calls: 8 }))
      assert.strictEqual(result.steps[0].observation, "middle answer")
    }))

  it.effect("cancelling the parent mid-call interrupts the sub-run (its running tool too)", () =>
    Effect.gen(function*() {
      let interrupted = false
      const stuck = Tool.make({
        name: "stuck",
        description: "Never ends",
        parameters: Schema.Struct({}),
        handler: () => Effect.never.pipe(Effect.onInterrupt(() => Effect.sync(() => (interrupted = true))))
      })
      const sub = makeAgent([ScriptedLlm.toolCall("stuck", {})], { tools: [stuck], agent: quiet })
      const subAgent = yield* agentOf(ReactAgent.ReactAgent, sub.layer)
      const cancel = yield* Deferred.make<void>()
      const research = ReactAgent.asTool(subAgent, {
        name: "research",
        description: "Researches",
        // the sub-run's tool started: cancel the parent now
        onEvent: (event) => (event._tag === "ToolStart" ? Deferred.succeed(cancel, undefined) : Effect.void)
      })
      const parent = makeAgent([ScriptedLlm.toolCall("research", { query: "q" }, { id: "call_x" })], {
        tools: [research],
        agent: quiet
      })
      const result = yield* Effect.flatMap(
        ReactAgent.ReactAgent,
        (a) => a.runCollect({ query: "go", cancel: Deferred.await(cancel) })
      ).pipe(
        Effect.provide(parent.layer)
      )
      assert.isTrue(interrupted)
      assert.strictEqual(result.answer, "")
      assert.strictEqual(sub.requests().length, 1)
      const toolMessage = result.messages.find((m) => m.role === "tool")
      assert.deepStrictEqual(toolMessage && textOf(toolMessage.content), "Error: interrupted")
    }).pipe(Effect.scoped))

  it.scoped("the parent's hooks apply to the call: a blocked call never starts the sub-run", () =>
    Effect.gen(function*() {
      const sub = makeAgent(subScript, { tools: [addTool], agent: quiet })
      const subAgent = yield* agentOf(ReactAgent.ReactAgent, sub.layer)
      const parent = makeAgent([
        ScriptedLlm.toolCall("research", { query: "q" }),
        ScriptedLlm.text("no research"),
        ScriptedLlm.text("No research today.")
      ], {
        tools: [ReactAgent.asTool(subAgent, { name: "research", description: "Researches" })],
        agent: quiet,
        hooks: Hooks.layer([
          Hooks.pre({
            name: "no-research",
            matcher: "research",
            run: () => Effect.succeed({ allow: false, reason: "not today" })
          })
        ])
      })
      const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "go" })).pipe(
        Effect.provide(parent.layer)
      )
      assert.strictEqual(sub.requests().length, 0)
      assert.strictEqual(result.steps[0].error, "Blocked by no-research: not today")
      assert.isUndefined(result.usage.by_phase.subagents)
    }))

  it.scoped("a failed sub-run is the call's error; an empty query is refused before it runs", () =>
    Effect.gen(function*() {
      const sub = makeAgent([ScriptedLlm.fail("Auth", "bad key")], { agent: quiet, llm: { model: "sub" } })
      const subAgent = yield* agentOf(ReactAgent.ReactAgent, sub.layer)
      const parent = makeAgent([
        ScriptedLlm.toolCalls([{ id: "a", name: "research", arguments: { query: "q" } }, {
          id: "b",
          name: "research",
          arguments: { query: " " }
        }]),
        ScriptedLlm.text("gave up"),
        ScriptedLlm.text("Gave up.")
      ], { tools: [ReactAgent.asTool(subAgent, { name: "research", description: "Researches" })], agent: quiet })
      const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "go" })).pipe(
        Effect.provide(parent.layer)
      )
      const byId = Object.fromEntries(result.steps.map((s) => [s.tool_call_id, s.error]))
      assert.match(byId.a ?? "", /^Sub-agent research failed: LLM error \(Auth\): bad key/)
      assert.include(byId.b ?? "", "query must not be empty")
      assert.strictEqual(sub.requests().length, 1)
      assert.isUndefined(result.usage.by_phase.subagents)
    }))

  it.effect("outside a run the tool still works (no parent call: toolCallId undefined)", () =>
    Effect.gen(function*() {
      const sub = makeAgent(subScript, { tools: [addTool], agent: quiet })
      const subAgent = yield* agentOf(ReactAgent.ReactAgent, sub.layer)
      const ids: Array<string | undefined> = []
      const tool = ReactAgent.asTool(subAgent, {
        name: "research",
        description: "Researches",
        onEvent: (_e: RunEvent, s: AgentTool.SubRun) => Effect.sync(() => ids.push(s.toolCallId))
      })
      const output = yield* Tool.execute(tool, { query: "2+3" })
      assert.deepStrictEqual(Tool.toRich(output).content, "The sum is 5.")
      assert.deepStrictEqual([...new Set(ids)], [undefined])
    }).pipe(Effect.scoped))
})

describe("DagAgent.asTool", () => {
  it.scoped("a DAG sub-run as a tool: its answer and its whole usage (plan, steps, analysis, synthesis) roll up", () =>
    Effect.gen(function*() {
      const dag = makeDag({
        plan: () => planReply([{ id: 1, task: "find A" }, { id: 2, task: "find B" }]),
        step: (id) => stepText(`result of ${id}`)
      })
      const dagAgent = yield* agentOf(DagAgent.DagAgent, dag.layer)
      const steps: Array<string> = []
      const planner = DagAgent.asTool(dagAgent, {
        name: "planner",
        description: "Plans and runs",
        onEvent: (event, subRun) =>
          Effect.sync(() =>
            event._tag === "DagStep" && steps.push(`${event.status}:${event.step_id}@${subRun.toolCallId}`)
          )
      })
      const parent = makeAgent([
        ScriptedLlm.toolCall("planner", { query: "find A and B" }, { id: "call_p", ...u(10, 10) }),
        ScriptedLlm.text("done", u(10, 10)),
        ScriptedLlm.text("Both found.", u(10, 10))
      ], { tools: [planner], agent: quiet })
      const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "go" })).pipe(
        Effect.provide(parent.layer)
      )
      assert.strictEqual(result.steps[0].observation, "final answer")
      assert.includeMembers(steps, ["done:1@call_p", "done:2@call_p"])
      // every call the DAG sub-run made is in `subagents`: the main model served them all
      const subCalls = dag.main.requests.length
      const sub = result.usage.by_phase.subagents
      assert.isDefined(sub)
      assert.strictEqual(sub!.llm_calls, subCalls)
      assert.deepStrictEqual(result.steps[0].usage, sub)
      assert.deepStrictEqual(without(result.usage), Usage.add(Usage.make(30, 30, { calls: 3 }), sub!))
    }))
})

describe("ReactAgent.asTool: approvals", () => {
  it.scoped("a sub-run's call that needs approval surfaces on the parent run; the parent's user approves it there", () =>
    Effect.gen(function*() {
      // one Approvals for both agents: the parent's user answers through the parent's agent
      const approvals = yield* Approvals.make
      const { ran, tool: write } = writer()
      const sub = yield* agentOf(
        ReactAgent.ReactAgent,
        makeAgent([
          ScriptedLlm.toolCall("write", { path: "a.txt" }, { id: "sub_call" }),
          ScriptedLlm.text("written"),
          ScriptedLlm.text("The file is written.")
        ], { tools: [write], agent: quiet, approvals }).layer
      )
      const delegate = ReactAgent.asTool(sub, { name: "writer_agent", description: "Writes files" })
      const parent = yield* agentOf(
        ReactAgent.ReactAgent,
        makeAgent([
          ScriptedLlm.toolCall("writer_agent", { query: "write a.txt" }, { id: "parent_call" }),
          ScriptedLlm.text("done"),
          ScriptedLlm.text("The sub-agent wrote a.txt.")
        ], { tools: [delegate], agent: quiet, approvals }).layer
      )
      const events: Array<RunEvent> = []
      yield* parent.run({ query: "please write a.txt", conversationId: "parent-conv" }).pipe(
        Stream.runForEach((event) => {
          events.push(event)
          if (event._tag !== "ApprovalRequested") return Effect.void
          assert.deepStrictEqual(ran, [], "nothing runs before the approval")
          return Effect.orDie(
            parent.approve({ conversationId: "parent-conv", approvalId: event.approval_id, decision: "approve" })
          )
        })
      )
      const requested = events.find((e) => e._tag === "ApprovalRequested")
      assert.strictEqual(requested?._tag === "ApprovalRequested" ? requested.tool_name : "", "write")
      assert.isTrue(events.some((e) => e._tag === "ApprovalDecided" && e.status === "approved"))
      assert.deepStrictEqual(ran, ["a.txt"])
      const done = events[events.length - 1]
      assert.strictEqual(done._tag === "Done" ? done.answer : "", "The sub-agent wrote a.txt.")
    }))
})
