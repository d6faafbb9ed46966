/**
 * Edges of tool approval and of a tool call's parts, in process over
 * `ScriptedLlm` (the mutation audit's survivors in approval.ts and
 * toolCall.ts): what the events and the tool messages say when a decision has
 * no reason or an empty one, a `needsApproval` check that dies, a stored
 * decision for another approval, JSON mode's call ids, what the approvals
 * service and a tool handler are given, the unknown-tool message, and
 * `ToolDone` after a hook that rewrote the arguments to equal ones.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Approvals from "../src/Approvals.js"
import * as Hooks from "../src/Hooks.js"
import type { ChatMessage } from "../src/Message.js"
import { textOf } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import { addTool, echoTool, jsonLlm, makeAgent, writer } from "./utils/agentLayers.js"

const CID = "conv-edges"

/** Runs the agent; `onEvent` sees each event as it comes (and may answer approvals). */
const runWith = (
  onEvent: (event: RunEvent, agent: ReactAgent.ReactAgentService) => Effect.Effect<void, unknown> = () => Effect.void
) =>
  Effect.gen(function*() {
    const agent = yield* ReactAgent.ReactAgent
    const events: Array<RunEvent> = []
    yield* agent.run({ query: "q", conversationId: CID }).pipe(
      Stream.runForEach((event) => {
        events.push(event)
        return Effect.orDie(onEvent(event, agent))
      })
    )
    return events
  })

const approveAll = (event: RunEvent, agent: ReactAgent.ReactAgentService) =>
  event._tag === "ApprovalRequested"
    ? Effect.asVoid(agent.approve({ conversationId: CID, approvalId: event.approval_id, decision: "approve" }))
    : Effect.void

const toolMessages = (messages: ReadonlyArray<ChatMessage>) =>
  messages.flatMap((m) => (m.role === "tool" ? [{ id: m.tool_call_id, text: textOf(m.content) }] : []))

/** An approvals service whose store answers `decision` (a durable store need not normalise what it keeps). */
const storeAnswering = (
  decision: (
    req: Approvals.ApprovalRequest
  ) => Omit<Approvals.Decision, "approvalId" | "argsHash"> & Partial<Approvals.Decision>
) => {
  const requests: Array<Approvals.ApprovalRequest> = []
  const service: Approvals.ApprovalsService = {
    request: (req) =>
      Effect.gen(function*() {
        requests.push(req)
        if (req.onStored !== undefined) yield* req.onStored
        return { approvalId: req.approvalId, argsHash: req.argsHash, ...decision(req) }
      }),
    decide: () => Effect.die("unused"),
    pending: () => Effect.succeed([])
  }
  return { service, requests }
}

const oneCall = (id?: string) => [
  ScriptedLlm.toolCall("write", { path: "a" }, id !== undefined ? { id } : {}),
  ScriptedLlm.text("x"),
  ScriptedLlm.text("y")
]

describe("ReactAgent approval edges", () => {
  it.effect("a denial with an empty reason reads like one without: no `: ` after the message", () => {
    const w = writer()
    const store = storeAnswering(() => ({ decision: "deny", reason: "" }))
    const h = makeAgent(oneCall("c"), { tools: [w.tool], approvals: store.service, agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const events = yield* runWith()
      assert.deepStrictEqual(w.ran, [])
      assert.deepStrictEqual(toolMessages(h.requests()[1].request.messages), [{
        id: "c",
        text: "Error: the user denied this call"
      }])
      assert.include(events.find((e) => e._tag === "ToolDone"), { error: "the user denied this call" })
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a denial without a reason: the decided event has no reason field at all", () => {
    const w = writer()
    const h = makeAgent(oneCall("c"), { tools: [w.tool], agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const events = yield* runWith((event, agent) =>
        event._tag === "ApprovalRequested"
          ? Effect.asVoid(agent.approve({ conversationId: CID, approvalId: event.approval_id, decision: "deny" }))
          : Effect.void
      )
      const requested = events.find((e) => e._tag === "ApprovalRequested")!
      const decided = events.find((e) => e._tag === "ApprovalDecided")
      assert.deepStrictEqual(decided, {
        _tag: "ApprovalDecided",
        approval_id: requested._tag === "ApprovalRequested" ? requested.approval_id : "",
        status: "denied",
        tool_call_id: "c"
      })
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a needsApproval check that dies or throws asks the person (fail closed)", () => {
    const dies = writer("dies", () => Effect.die(new Error("check crashed")))
    const throws = writer("throws", () => {
      throw new Error("check threw")
    })
    const plain = writer("plain", false)
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "d", name: "dies", arguments: { path: "d" } },
        { id: "t", name: "throws", arguments: { path: "t" } },
        { id: "p", name: "plain", arguments: { path: "p" } }
      ]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("answer")
    ], { tools: [dies.tool, throws.tool, plain.tool], agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const events = yield* runWith(approveAll)
      const asked = events.flatMap((e) => (e._tag === "ApprovalRequested" ? [e.tool_call_id] : []))
      assert.deepStrictEqual([...asked].sort(), ["d", "t"])
      // asked, approved, run: the check's crash did not end the call or the run
      assert.deepStrictEqual([dies.ran, throws.ran, plain.ran], [["d"], ["t"], ["p"]])
      assert.deepStrictEqual(toolMessages(h.requests()[1].request.messages), [
        { id: "d", text: "wrote d" },
        { id: "t", text: "wrote t" },
        { id: "p", text: "wrote p" }
      ])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a stored approval of the same arguments but another approval id never runs the tool", () => {
    const w = writer()
    const store = storeAnswering(() => ({ approvalId: "apr_another", decision: "approve" }))
    const h = makeAgent(oneCall("c"), { tools: [w.tool], approvals: store.service, agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const events = yield* runWith()
      assert.deepStrictEqual(w.ran, [])
      assert.include(events.find((e) => e._tag === "ApprovalDecided"), {
        status: "denied",
        reason: "the approval does not match this call"
      })
      assert.deepStrictEqual(toolMessages(h.requests()[1].request.messages), [
        { id: "c", text: "Error: the user denied this call: the approval does not match this call" }
      ])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("what the approvals service is asked: native and JSON mode (call id `json_<iteration>`), no timeout unless set", () =>
    Effect.gen(function*() {
      for (const mode of ["native", "json"] as const) {
        const w = writer()
        const store = storeAnswering(() => ({ decision: "approve" }))
        const script = mode === "native"
          ? oneCall("c")
          : [
            ScriptedLlm.jsonToolCall("write", { path: "a" }),
            ScriptedLlm.jsonFinal("done"),
            ScriptedLlm.text("answer")
          ]
        const h = makeAgent(script, {
          tools: [w.tool],
          approvals: store.service,
          ...(mode === "json" ? { llm: jsonLlm } : {}),
          agent: { completionCheck: false }
        })
        const events = yield* runWith().pipe(Effect.provide(h.layer))
        assert.deepStrictEqual(w.ran, ["a"], mode)
        assert.strictEqual(store.requests.length, 1)
        const { onStored, ...req } = store.requests[0]
        assert.isDefined(onStored)
        const argsHash = Approvals.hashArgs({ path: "a" })
        assert.deepStrictEqual({ ...req, approvalId: "" }, {
          approvalId: "",
          conversationId: CID,
          toolCallId: mode === "native" ? "c" : "json_1",
          toolName: "write",
          args: { path: "a" },
          argsHash,
          iteration: 1
        }, mode)
        // the events: a JSON-mode call has no tool_call_id field (not even an undefined one)
        const id = mode === "native" ? { tool_call_id: "c" } : {}
        assert.deepStrictEqual(events.find((e) => e._tag === "ApprovalRequested"), {
          _tag: "ApprovalRequested",
          approval_id: req.approvalId,
          ...id,
          tool_name: "write",
          tool_args: { path: "a" },
          args_hash: argsHash,
          iteration: 1
        }, mode)
        assert.deepStrictEqual(events.find((e) => e._tag === "ApprovalDecided"), {
          _tag: "ApprovalDecided",
          approval_id: req.approvalId,
          status: "approved",
          ...id
        }, mode)
      }
    }))
})

describe("ReactAgent tool call edges", () => {
  it.effect("an unknown tool is answered with the tools there are, comma-separated, or `(none)`", () =>
    Effect.gen(function*() {
      for (const [tools, listed] of [[[addTool, echoTool], "add, echo"], [[], "(none)"]] as const) {
        const h = makeAgent([
          ScriptedLlm.toolCall("nope", {}, { id: "n" }),
          ScriptedLlm.text("x"),
          ScriptedLlm.text("y")
        ], {
          tools,
          agent: { completionCheck: false }
        })
        yield* runWith().pipe(Effect.provide(h.layer))
        assert.deepStrictEqual(toolMessages(h.requests()[1].request.messages), [
          { id: "n", text: `Error: Unknown tool "nope". Available tools: ${listed}` }
        ])
      }
    }))

  it.effect("the handler's call context: the call id only when the model gave one (JSON mode has none)", () =>
    Effect.gen(function*() {
      for (const mode of ["native", "json"] as const) {
        const seen: Array<ReadonlyArray<string>> = []
        const probe = Tool.make({
          name: "probe",
          description: "Reads its call context",
          parameters: Schema.Struct({}),
          handler: () =>
            Effect.map(FiberRef.get(Tool.currentCall), (call) => {
              seen.push(Option.isSome(call) ? Object.keys(call.value).sort() : [])
              return "probed"
            })
        })
        const script = mode === "native"
          ? [ScriptedLlm.toolCall("probe", {}, { id: "p" }), ScriptedLlm.text("x"), ScriptedLlm.text("y")]
          : [ScriptedLlm.jsonToolCall("probe", {}), ScriptedLlm.jsonFinal("done"), ScriptedLlm.text("y")]
        const h = makeAgent(script, {
          tools: [probe],
          ...(mode === "json" ? { llm: jsonLlm } : {}),
          agent: { completionCheck: false }
        })
        yield* runWith().pipe(Effect.provide(h.layer))
        const common = ["approverConversationId", "conversationId", "emit", "idempotencyKey", "iteration", "toolName"]
        assert.deepStrictEqual(seen, [mode === "native" ? [...common, "toolCallId"].sort() : common], mode)
      }
    }))

  it.effect("ToolDone repeats no arguments a hook rewrote to equal ones (a copy); it carries ones it changed", () => {
    const hooks = Hooks.layer([
      Hooks.pre({
        name: "copy",
        run: (ctx) =>
          Effect.succeed({
            allow: true as const,
            args: ctx.args.text === "change" ? { text: "changed" } : { ...ctx.args }
          })
      })
    ])
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "same", name: "echo", arguments: { text: "keep" } },
        { id: "other", name: "echo", arguments: { text: "change" } }
      ]),
      ScriptedLlm.text("x"),
      ScriptedLlm.text("y")
    ], { tools: [echoTool], hooks, agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const events = yield* runWith()
      const done = new Map(events.flatMap((e) => (e._tag === "ToolDone" ? [[e.tool_call_id, e] as const] : [])))
      assert.isFalse("tool_args" in done.get("same")!)
      assert.include(done.get("same"), { observation: "echo: keep" })
      assert.deepStrictEqual((done.get("other") as { tool_args?: unknown }).tool_args, { text: "changed" })
    }).pipe(Effect.provide(h.layer))
  })
})
