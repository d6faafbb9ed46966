/**
 * A round's tool calls under a journal that stores (a durable host's) and
 * under the in-process one (round.ts, the mutation audit's survivors): the
 * activities a call that needs approval is split into and their names, what a
 * call in flight at a crash comes to (`onRestart` for a call that is not
 * idempotent, `exclusive` for one that is), an unknown tool, and the
 * `execute_tool` spans of either path. In process over `ScriptedLlm`, with a
 * journal that records every activity as it runs and an approvals store whose
 * answers are scripted.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type * as Approvals from "../src/Approvals.js"
import { textOf } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import type * as RunJournal from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import { echoTool, jsonLlm, makeAgent, writer } from "./utils/agentLayers.js"
import { makeSpanRecorder } from "./utils/spans.js"

const CID = "conv-journal"
const RESTART_ERROR = "interrupted by a server restart; not retried"

/**
 * A storing host's journal: records each activity (name, options) as it runs.
 * `crashed(name)`: the activity was in flight when the process died — its
 * `onRestart` runs when it has one, else it runs again with `restarted: true`.
 */
const hostJournal = (crashed: (name: string) => boolean = () => false) => {
  const ran: Array<string> = []
  const options = new Map<string, RunJournal.ActivityOptions<any, any, any, any>>()
  const events: Array<RunEvent> = []
  const journal: RunJournal.RunJournal = {
    activity: (o) =>
      Effect.suspend(() => {
        ran.push(o.name)
        options.set(o.name, o)
        if (!crashed(o.name)) return o.execute({ restarted: false })
        return o.onRestart !== undefined ? o.onRestart() : o.execute({ restarted: true })
      }),
    emit: (event) => Effect.sync(() => void events.push(event))
  }
  return { journal, ran, options, events }
}

/** An approvals store that approves every request once it is stored. */
const approving: Approvals.ApprovalsService = {
  request: (req) =>
    Effect.as(req.onStored ?? Effect.void, {
      approvalId: req.approvalId,
      argsHash: req.argsHash,
      decision: "approve" as const
    }),
  decide: () => Effect.die("unused"),
  pending: () => Effect.succeed([])
}

const execute = (journal: RunJournal.RunJournal) =>
  Effect.flatMap(ReactAgent.ReactAgent, (agent) => agent.execute({ query: "q", conversationId: CID }, journal))

const callActivities = (ran: ReadonlyArray<string>) =>
  ran.filter((n) => n.startsWith("tool/") || n.startsWith("approval/"))

const toolDone = (events: ReadonlyArray<RunEvent>, id?: string) =>
  events.find((e) => e._tag === "ToolDone" && e.tool_call_id === id) as
    | Extract<RunEvent, { _tag: "ToolDone" }>
    | undefined

/** An idempotent tool that records its runs. */
const idempotent = () => {
  const ran: Array<number> = []
  const tool = Tool.make({
    name: "lookup",
    description: "Looks a number up",
    parameters: Schema.Struct({ n: Schema.Number }),
    idempotent: true,
    handler: ({ n }) => Effect.sync(() => (ran.push(n), `found ${n}`))
  })
  return { tool, ran }
}

describe("ReactAgent calls under a storing journal", () => {
  it.effect("a call that needs approval: its step stops before the tool, the wait, then the decided step (native and JSON mode)", () =>
    Effect.gen(function*() {
      for (const mode of ["native", "json"] as const) {
        const w = writer()
        const script = mode === "native"
          ? [ScriptedLlm.toolCall("write", { path: "a" }, { id: "c" }), ScriptedLlm.text("x"), ScriptedLlm.text("y")]
          : [ScriptedLlm.jsonToolCall("write", { path: "a" }), ScriptedLlm.jsonFinal("done"), ScriptedLlm.text("y")]
        const h = makeAgent(script, {
          tools: [w.tool],
          approvals: approving,
          ...(mode === "json" ? { llm: jsonLlm } : {}),
          agent: { completionCheck: false }
        })
        const host = hostJournal()
        yield* execute(host.journal).pipe(Effect.provide(h.layer))
        const id = mode === "native" ? "c" : "json"
        assert.deepStrictEqual(callActivities(host.ran), [
          `tool/1/${id}`,
          "approval/run",
          `approval/1/${id}`,
          `tool/1/${id}/decided`
        ], mode)
        assert.deepStrictEqual(w.ran, ["a"], mode)
        assert.include(toolDone(host.events, mode === "native" ? "c" : undefined), {
          observation: "wrote a",
          error: null
        }, mode)
      }
    }))

  it.effect("a call in flight at a crash: not idempotent → answered RESTART_ERROR, never run; idempotent → run again, exclusive", () => {
    const w = writer("send", false)
    const look = idempotent()
    const h = makeAgent([
      ScriptedLlm.toolCalls([{ id: "s", name: "send", arguments: { path: "mail" } }, {
        id: "l",
        name: "lookup",
        arguments: { n: 7 }
      }]),
      ScriptedLlm.text("x"),
      ScriptedLlm.text("y")
    ], { tools: [w.tool, look.tool], agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const host = hostJournal((name) => name.startsWith("tool/1/"))
      yield* execute(host.journal)
      assert.deepStrictEqual(w.ran, [])
      assert.deepStrictEqual(look.ran, [7])
      assert.include(toolDone(host.events, "s"), { error: RESTART_ERROR, observation: `Error: ${RESTART_ERROR}` })
      assert.deepStrictEqual(toolDone(host.events, "s")!.tool_args, undefined)
      assert.include(toolDone(host.events, "l"), { error: null, observation: "found 7" })
      assert.strictEqual(host.options.get("tool/1/l")?.exclusive, true)
      assert.isUndefined(host.options.get("tool/1/l")?.onRestart)
      assert.isUndefined(host.options.get("tool/1/s")?.exclusive)
      const messages = h.requests()[1].request.messages.flatMap((
        m
      ) => (m.role === "tool" ? [[m.tool_call_id, textOf(m.content)]] : []))
      assert.deepStrictEqual(messages, [["s", `Error: ${RESTART_ERROR}`], ["l", "found 7"]])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a crash after the approval: the decided step of a call that is not idempotent is answered RESTART_ERROR", () => {
    const w = writer()
    const h = makeAgent([
      ScriptedLlm.toolCall("write", { path: "a" }, { id: "c" }),
      ScriptedLlm.text("x"),
      ScriptedLlm.text("y")
    ], {
      tools: [w.tool],
      approvals: approving,
      agent: { completionCheck: false }
    })
    return Effect.gen(function*() {
      const host = hostJournal((name) => name === "tool/1/c/decided")
      yield* execute(host.journal)
      assert.deepStrictEqual(w.ran, [])
      assert.include(toolDone(host.events, "c"), { error: RESTART_ERROR })
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("an unknown tool is answered (its step has no tool to ask whether it is idempotent)", () => {
    const h = makeAgent([
      ScriptedLlm.toolCalls([{ id: "n", name: "nope", arguments: {} }, {
        id: "e",
        name: "echo",
        arguments: { text: "hi" }
      }]),
      ScriptedLlm.text("x"),
      ScriptedLlm.text("y")
    ], { tools: [echoTool], agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const host = hostJournal()
      yield* execute(host.journal)
      assert.include(toolDone(host.events, "n"), { error: "Unknown tool \"nope\". Available tools: echo" })
      assert.include(toolDone(host.events, "e"), { observation: "echo: hi" })
      const done = host.events[host.events.length - 1]
      assert.isTrue(done._tag === "Done" && done.answer === "y")
    }).pipe(Effect.provide(h.layer))
  })
})

describe("ReactAgent execute_tool spans of either path", () => {
  const spansOf = (recorder: ReturnType<typeof makeSpanRecorder>) =>
    recorder.spans().filter((s) => s.name.startsWith("execute_tool")).map((s) => ({
      name: s.name,
      id: s.attributes["gen_ai.tool.call.id"],
      iteration: s.attributes["react_engine.iteration"],
      /** 1: ok (`SpanStatusCode.OK`). */
      status: s.status.code
    }))

  it.effect("storing journal: a span per step, named and labelled after the call (the approval's two steps: two spans)", () => {
    const recorder = makeSpanRecorder()
    const w = writer()
    const h = makeAgent([
      ScriptedLlm.toolCalls([{ id: "c", name: "write", arguments: { path: "a" } }, {
        id: "e",
        name: "echo",
        arguments: { text: "hi" }
      }]),
      ScriptedLlm.text("x"),
      ScriptedLlm.text("y")
    ], { tools: [w.tool, echoTool], approvals: approving, agent: { completionCheck: false } })
    return Effect.gen(function*() {
      yield* execute(hostJournal().journal)
      const spans = spansOf(recorder)
      assert.deepStrictEqual(spans.filter((s) => s.id === "e"), [{
        name: "execute_tool echo",
        id: "e",
        iteration: 1,
        status: 1
      }])
      assert.deepStrictEqual(spans.filter((s) => s.id === "c").map((s) => s.name), [
        "execute_tool write",
        "execute_tool write"
      ])
    }).pipe(Effect.provide(h.layer), Effect.provide(recorder.layer))
  })

  it.effect("in process the same: a call that waits for approval has a span for its checks and one once decided", () => {
    const recorder = makeSpanRecorder()
    const w = writer()
    const h = makeAgent([
      ScriptedLlm.toolCall("write", { path: "a" }, { id: "c" }),
      ScriptedLlm.text("x"),
      ScriptedLlm.text("y")
    ], {
      tools: [w.tool],
      approvals: approving,
      agent: { completionCheck: false }
    })
    return Effect.gen(function*() {
      const agent = yield* ReactAgent.ReactAgent
      yield* Stream.runDrain(agent.run({ query: "q", conversationId: CID }))
      assert.deepStrictEqual(w.ran, ["a"])
      assert.deepStrictEqual(spansOf(recorder), [
        { name: "execute_tool write", id: "c", iteration: 1, status: 1 },
        { name: "execute_tool write", id: "c", iteration: 1, status: 1 }
      ])
    }).pipe(Effect.provide(h.layer), Effect.provide(recorder.layer))
  })
})
