/**
 * Tool approval in the ReAct loop, in process over `ScriptedLlm`:
 * the person answers from the event stream (`ReactAgent.approve`).
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import * as AgentConfig from "../src/AgentConfig.js"
import * as Approvals from "../src/Approvals.js"
import * as Hooks from "../src/Hooks.js"
import type { ChatMessage } from "../src/Message.js"
import { textOf } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import type * as RunJournal from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { echoTool, injectNow, jsonLlm, makeAgent, makeInterrupts, writer } from "./utils/agentLayers.js"

const CID = "conv"

type Requested = Extract<RunEvent, { _tag: "ApprovalRequested" }>

/** Runs the agent; `onEvent` sees each event as it comes (and may answer approvals). */
const runWith = (
  onEvent: (event: RunEvent, agent: ReactAgent.ReactAgentService) => Effect.Effect<void, unknown> = () => Effect.void,
  input: Partial<ReactAgent.RunInput> = {}
) =>
  Effect.gen(function*() {
    const agent = yield* ReactAgent.ReactAgent
    const events: Array<RunEvent> = []
    yield* agent.run({ query: "q", conversationId: CID, ...input }).pipe(
      Stream.runForEach((event) => {
        events.push(event)
        return Effect.orDie(onEvent(event, agent))
      })
    )
    return events
  })

/** Answers every approval request as it arrives. */
const answer =
  (decision: "approve" | "deny", reason?: string) => (event: RunEvent, agent: ReactAgent.ReactAgentService) =>
    event._tag === "ApprovalRequested"
      ? Effect.asVoid(
        agent.approve({ conversationId: CID, approvalId: event.approval_id, decision, ...(reason ? { reason } : {}) })
      )
      : Effect.void

const doneOf = (events: ReadonlyArray<RunEvent>) => {
  const done = events[events.length - 1]
  if (done._tag !== "Done") throw new Error("no Done")
  return done
}

const toolMessages = (messages: ReadonlyArray<ChatMessage>) =>
  messages.flatMap((m) => (m.role === "tool" ? [{ id: m.tool_call_id, text: textOf(m.content) }] : []))

/** Every assistant tool call is followed, before anything else, by its tool messages in order. */
const assertPaired = (messages: ReadonlyArray<ChatMessage>) => {
  messages.forEach((m, i) => {
    if (m.role !== "assistant" || !m.tool_calls) return
    const ids = m.tool_calls.map((c) => c.id)
    const next = messages.slice(i + 1, i + 1 + ids.length)
    assert.deepStrictEqual(next.map((n) => (n.role === "tool" ? n.tool_call_id : n.role)), ids)
  })
}

const tags = (events: ReadonlyArray<RunEvent>) => events.map((e) => e._tag)

describe("ReactAgent tool approval", () => {
  it.effect("approved: the requested event carries the call, the tool runs once after the decision", () => {
    const w = writer()
    const h = makeAgent([
      ScriptedLlm.toolCall("write", { path: "a.txt" }, { id: "call_w" }),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("answer")
    ], { tools: [w.tool], agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const events = yield* runWith((event, agent) => {
        if (event._tag !== "ApprovalRequested") return Effect.void
        // nothing ran yet while the call waits
        assert.deepStrictEqual(w.ran, [])
        return Effect.asVoid(agent.approve({ conversationId: CID, approvalId: event.approval_id, decision: "approve" }))
      })
      assert.deepStrictEqual(w.ran, ["a.txt"])
      const requested = events.find((e): e is Requested => e._tag === "ApprovalRequested")!
      assert.deepStrictEqual({ ...requested, approval_id: "" }, {
        _tag: "ApprovalRequested",
        approval_id: "",
        tool_call_id: "call_w",
        tool_name: "write",
        tool_args: { path: "a.txt" },
        args_hash: Approvals.hashArgs({ path: "a.txt" }),
        iteration: 1
      })
      assert.match(requested.approval_id, /^apr_[0-9a-f]{32}$/)
      const decided = events.find((e) => e._tag === "ApprovalDecided")
      assert.deepStrictEqual(decided, {
        _tag: "ApprovalDecided",
        approval_id: requested.approval_id,
        status: "approved",
        tool_call_id: "call_w"
      })
      const order = tags(events)
      assert.deepStrictEqual(order.slice(order.indexOf("ToolStart"), order.indexOf("ToolDone") + 1), [
        "ToolStart",
        "ApprovalRequested",
        "ApprovalDecided",
        "ToolDone"
      ])
      assert.deepStrictEqual(toolMessages(h.requests()[1].request.messages), [{ id: "call_w", text: "wrote a.txt" }])
      const agent = yield* ReactAgent.ReactAgent
      assert.deepStrictEqual(yield* agent.approvals.pending(CID), [])
      // two loop calls and the synthesis: waiting cost no LLM call
      assert.strictEqual(h.requests().length, 3)
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("denied: the tool never runs, its tool message says so (with the reason), the next request is valid", () => {
    const w = writer()
    const h = makeAgent([
      ScriptedLlm.toolCall("write", { path: "a.txt" }, { id: "call_w" }),
      ScriptedLlm.text("ok, I will not"),
      ScriptedLlm.text("answer")
    ], { tools: [w.tool], agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const events = yield* runWith(answer("deny", "not that file"))
      assert.deepStrictEqual(w.ran, [])
      const decided = events.find((e) => e._tag === "ApprovalDecided")
      assert.include(decided, { status: "denied", reason: "not that file" })
      const done = events.find((e) => e._tag === "ToolDone")
      assert.include(done, {
        error: "the user denied this call: not that file",
        observation: "Error: the user denied this call: not that file"
      })
      const next = h.requests()[1].request.messages
      assertPaired(next)
      assert.deepStrictEqual(toolMessages(next), [{
        id: "call_w",
        text: "Error: the user denied this call: not that file"
      }])
      assert.strictEqual(doneOf(events).answer, "answer")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a denial without a reason: `Error: the user denied this call`", () => {
    const w = writer()
    const h = makeAgent([
      ScriptedLlm.toolCall("write", { path: "a" }, { id: "c" }),
      ScriptedLlm.text("x"),
      ScriptedLlm.text("y")
    ], {
      tools: [w.tool],
      agent: { completionCheck: false }
    })
    return Effect.gen(function*() {
      yield* runWith(answer("deny"))
      assert.deepStrictEqual(toolMessages(h.requests()[1].request.messages), [{
        id: "c",
        text: "Error: the user denied this call"
      }])
    }).pipe(Effect.provide(h.layer))
  })

  for (const order of [["a", "b"], ["b", "a"]] as const) {
    it.effect(`a parallel round: two approvals decided ${order.join(" then ")}; the other call does not wait; messages in request order`, () => {
      const w = writer()
      const h = makeAgent([
        ScriptedLlm.toolCalls([
          { id: "a", name: "write", arguments: { path: "one" } },
          { id: "e", name: "echo", arguments: { text: "hi" } },
          { id: "b", name: "write", arguments: { path: "two" } }
        ]),
        ScriptedLlm.text("done"),
        ScriptedLlm.text("answer")
      ], { tools: [w.tool, echoTool], agent: { completionCheck: false } })
      return Effect.gen(function*() {
        const requested = new Map<string, string>()
        let echoed = false
        // decided only once the echo call has finished: were it waiting for them, the run would hang
        const events = yield* runWith((event, agent) => {
          if (event._tag === "ToolDone" && event.tool_call_id === "e") echoed = true
          else if (event._tag === "ApprovalRequested") requested.set(event.tool_call_id!, event.approval_id)
          else return Effect.void
          if (requested.size < 2 || !echoed) return Effect.void
          return Effect.forEach(order, (id) =>
            Effect.gen(function*() {
              yield* agent.approve({
                conversationId: CID,
                approvalId: requested.get(id)!,
                decision: id === "a" ? "approve" : "deny"
              })
              // the decision reaches its call before the next one is decided
              yield* Effect.yieldNow()
            }), { discard: true })
        })
        assert.deepStrictEqual(w.ran, ["one"])
        const decided = events.flatMap((e) => (e._tag === "ApprovalDecided" ? [[e.tool_call_id, e.status]] : []))
        assert.deepStrictEqual(decided, order.map((id) => [id, id === "a" ? "approved" : "denied"]))
        assert.deepStrictEqual(toolMessages(h.requests()[1].request.messages), [
          { id: "a", text: "wrote one" },
          { id: "e", text: "echo: hi" },
          { id: "b", text: "Error: the user denied this call" }
        ])
        assertPaired(h.requests()[1].request.messages)
      }).pipe(Effect.provide(h.layer))
    })
  }

  it.effect("refused decisions change nothing: another call's id, other arguments, a replayed or unknown id", () => {
    const w = writer()
    const script = [
      ScriptedLlm.toolCall("write", { path: "same" }, { id: "call_w" }),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("answer")
    ]
    const h = makeAgent((_, i) => script[i % 3], { tools: [w.tool], agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const first = yield* runWith(answer("approve"))
      const old = first.find((e): e is Requested => e._tag === "ApprovalRequested")!.approval_id
      const refusals: Array<string> = []
      // the same call in a new run: same call id, same arguments, a new approval
      const second = yield* runWith((event, agent) =>
        Effect.gen(function*() {
          if (event._tag !== "ApprovalRequested") return
          assert.notStrictEqual(event.approval_id, old)
          const refuse = (input: Approvals.DecideInput) =>
            agent.approve(input).pipe(Effect.flip, Effect.map((e) => refusals.push(e._tag)))
          yield* refuse({ conversationId: CID, approvalId: old, decision: "approve" })
          yield* refuse({ conversationId: CID, approvalId: "apr_forged", decision: "approve" })
          yield* refuse({ conversationId: "other", approvalId: event.approval_id, decision: "approve" })
          yield* refuse({
            conversationId: CID,
            approvalId: event.approval_id,
            decision: "approve",
            toolCallId: "call_other"
          })
          yield* refuse({
            conversationId: CID,
            approvalId: event.approval_id,
            decision: "approve",
            argsHash: Approvals.hashArgs({ path: "/etc/passwd" })
          })
          // nothing ran and the call still waits
          assert.deepStrictEqual(w.ran, ["same"])
          assert.strictEqual((yield* agent.approvals.pending(CID)).length, 1)
          yield* agent.approve({
            conversationId: CID,
            approvalId: event.approval_id,
            decision: "deny",
            toolCallId: "call_w",
            argsHash: event.args_hash
          })
          const again = yield* agent.approve({
            conversationId: CID,
            approvalId: event.approval_id,
            decision: "approve"
          }).pipe(Effect.flip)
          assert.deepStrictEqual(
            again,
            new Approvals.AlreadyDecided({ approvalId: event.approval_id, status: "denied" })
          )
        })
      )
      assert.deepStrictEqual(refusals, [
        "AlreadyDecided",
        "ApprovalNotFound",
        "ApprovalNotFound",
        "ApprovalMismatch",
        "ApprovalMismatch"
      ])
      assert.deepStrictEqual(w.ran, ["same"])
      assert.include(second.find((e) => e._tag === "ApprovalDecided"), { status: "denied" })
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("a decision for other arguments (a forged store answer) never runs the tool", () => {
    const w = writer()
    const forging: Approvals.ApprovalsService = {
      request: (req) =>
        Effect.succeed({
          approvalId: req.approvalId,
          argsHash: Approvals.hashArgs({ path: "other" }),
          decision: "approve"
        }),
      decide: () => Effect.die("unused"),
      pending: () => Effect.succeed([])
    }
    const h = makeAgent([
      ScriptedLlm.toolCall("write", { path: "a" }, { id: "c" }),
      ScriptedLlm.text("x"),
      ScriptedLlm.text("y")
    ], {
      tools: [w.tool],
      approvals: forging,
      agent: { completionCheck: false }
    })
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

  it.effect("an interrupt sent while a call waits is taken in at the next drain point; the approval still applies", () => {
    const w = writer()
    const irq = makeInterrupts()
    const h = makeAgent([
      ScriptedLlm.toolCall("write", { path: "a" }, { id: "c" }),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("answer")
    ], { tools: [w.tool], interrupts: irq, agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const events = yield* runWith((event, agent) => {
        if (event._tag !== "ApprovalRequested") return Effect.void
        injectNow(irq, CID, "use utf-8")
        return Effect.asVoid(agent.approve({ conversationId: CID, approvalId: event.approval_id, decision: "approve" }))
      })
      assert.deepStrictEqual(w.ran, ["a"])
      const order = tags(events)
      assert.isBelow(order.indexOf("ToolDone"), order.indexOf("Inject"))
      const next = h.requests()[1].request.messages
      assert.deepStrictEqual(next.slice(-3).map((m) => m.role), ["assistant", "tool", "user"])
      assert.isTrue(textOf(next[next.length - 1].content).startsWith("[USER INTERRUPT]"))
      assert.include(textOf(next[next.length - 1].content), "use utf-8")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("cancelled while waiting: nothing runs, every call is answered, the approval is closed", () => {
    const w = writer()
    const h = makeAgent([
      ScriptedLlm.toolCalls([{ id: "a", name: "write", arguments: { path: "one" } }, {
        id: "e",
        name: "echo",
        arguments: { text: "x" }
      }]),
      ScriptedLlm.text("never")
    ], { tools: [w.tool, echoTool] })
    return Effect.gen(function*() {
      const cancel = yield* Deferred.make<void>()
      let approvalId = ""
      const events = yield* runWith((event) => {
        if (event._tag !== "ApprovalRequested") return Effect.void
        approvalId = event.approval_id
        return Deferred.succeed(cancel, undefined)
      }, { cancel: Deferred.await(cancel) })
      assert.deepStrictEqual(w.ran, [])
      const done = doneOf(events)
      assert.strictEqual(done.answer, "")
      assertPaired(done.messages ?? [])
      assert.deepStrictEqual(toolMessages(done.messages ?? []).map((m) => m.id), ["a", "e"])
      assert.strictEqual(toolMessages(done.messages ?? [])[0].text, "Error: interrupted")
      assert.strictEqual(h.requests().length, 1)
      const agent = yield* ReactAgent.ReactAgent
      assert.deepStrictEqual(yield* agent.approvals.pending(), [])
      const late = yield* agent.approve({ conversationId: CID, approvalId, decision: "approve" }).pipe(Effect.flip)
      assert.deepStrictEqual(late, new Approvals.AlreadyDecided({ approvalId, status: "cancelled" }))
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("approvalTimeout: no decision in time → denied with reason `timed out` (and no LLM call while waiting)", () => {
    const w = writer()
    const h = makeAgent([
      ScriptedLlm.toolCall("write", { path: "a" }, { id: "c" }),
      ScriptedLlm.text("x"),
      ScriptedLlm.text("y")
    ], {
      tools: [w.tool],
      agent: { completionCheck: false, approvalTimeout: "10 minutes" }
    })
    return Effect.gen(function*() {
      const waiting = yield* Deferred.make<void>()
      const fiber = yield* runWith((event) =>
        event._tag === "ApprovalRequested" ? Deferred.succeed(waiting, undefined) : Effect.void
      ).pipe(
        Effect.fork
      )
      yield* Deferred.await(waiting)
      yield* TestClock.adjust("9 minutes")
      const agent = yield* ReactAgent.ReactAgent
      assert.strictEqual((yield* agent.approvals.pending(CID)).length, 1)
      assert.strictEqual(h.requests().length, 1)
      yield* TestClock.adjust("1 minute")
      const events = yield* Fiber.join(fiber)
      assert.deepStrictEqual(w.ran, [])
      assert.include(events.find((e) => e._tag === "ApprovalDecided"), { status: "denied", reason: "timed out" })
      assert.deepStrictEqual(toolMessages(h.requests()[1].request.messages), [{
        id: "c",
        text: "Error: the user denied this call: timed out"
      }])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("PreToolUse hooks run first: the approval shows (and binds) the arguments they leave; a blocked call asks nobody", () => {
    const w = writer()
    const seen: Array<unknown> = []
    const hooks = Hooks.layer([
      Hooks.pre({
        name: "sandbox",
        run: (ctx) =>
          Effect.sync(() => {
            seen.push(ctx.args)
            if (ctx.args.path === "/etc/passwd") return { allow: false as const, reason: "outside the sandbox" }
            return { allow: true as const, args: { path: `sandbox/${String(ctx.args.path)}` } }
          })
      })
    ])
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "a", name: "write", arguments: { path: "notes.txt" } },
        { id: "b", name: "write", arguments: { path: "/etc/passwd" } }
      ]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("answer")
    ], { tools: [w.tool], hooks, agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const events = yield* runWith(answer("approve"))
      assert.deepStrictEqual(seen, [{ path: "notes.txt" }, { path: "/etc/passwd" }])
      const requested = events.filter((e): e is Requested => e._tag === "ApprovalRequested")
      assert.deepStrictEqual(requested.map((r) => [r.tool_call_id, r.tool_args, r.args_hash]), [
        ["a", { path: "sandbox/notes.txt" }, Approvals.hashArgs({ path: "sandbox/notes.txt" })]
      ])
      assert.deepStrictEqual(w.ran, ["sandbox/notes.txt"])
      assert.deepStrictEqual(toolMessages(h.requests()[1].request.messages), [
        { id: "a", text: "wrote sandbox/notes.txt" },
        { id: "b", text: "Error: Blocked by sandbox: outside the sandbox" }
      ])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("approvalTools globs and needsApproval checks pick the calls that wait; a failing check asks", () => {
    const big = writer("big_write", ({ path }) => Effect.succeed(path.startsWith("big")))
    const broken = writer("broken", () => Effect.fail("no idea"))
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "e", name: "echo", arguments: { text: "x" } },
        { id: "s", name: "big_write", arguments: { path: "small" } },
        { id: "l", name: "big_write", arguments: { path: "big file" } },
        { id: "k", name: "broken", arguments: { path: "k" } }
      ]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("answer")
    ], { tools: [echoTool, big.tool, broken.tool], agent: { completionCheck: false, approvalTools: ["ec*"] } })
    return Effect.gen(function*() {
      const events = yield* runWith(answer("approve"))
      const asked = events.flatMap((e) => (e._tag === "ApprovalRequested" ? [e.tool_call_id] : []))
      assert.deepStrictEqual([...asked].sort(), ["e", "k", "l"])
      assert.deepStrictEqual(big.ran.sort(), ["big file", "small"])
      assert.deepStrictEqual(broken.ran, ["k"])
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("JSON mode: the call waits the same way (no tool call id on the events)", () => {
    const w = writer()
    const h = makeAgent([
      ScriptedLlm.jsonToolCall("write", { path: "j" }),
      ScriptedLlm.jsonFinal("done"),
      ScriptedLlm.text("answer")
    ], { tools: [w.tool], llm: jsonLlm, agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const events = yield* runWith(answer("approve"))
      const requested = events.find((e): e is Requested => e._tag === "ApprovalRequested")!
      assert.isUndefined(requested.tool_call_id)
      assert.deepStrictEqual(requested.tool_args, { path: "j" })
      assert.deepStrictEqual(w.ran, ["j"])
      assert.include(textOf(h.requests()[1].request.messages.at(-1)!.content), "Observation: wrote j")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("AgentConfig: REACT_APPROVAL_TOOLS (comma list of globs) and REACT_APPROVAL_TIMEOUT_MS; explicit options win", () =>
    Effect.gen(function*() {
      const env = (vars: Record<string, string>) =>
        Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(vars))))
      const none = yield* AgentConfig.load().pipe(env({}))
      assert.deepStrictEqual(none.approvalTools, [])
      assert.isUndefined(none.approvalTimeout)
      const vars = { REACT_APPROVAL_TOOLS: " fx__write_*, filesystem__* ,,", REACT_APPROVAL_TIMEOUT_MS: "30000" }
      const o = yield* AgentConfig.load().pipe(env(vars))
      assert.deepStrictEqual(o.approvalTools, ["fx__write_*", "filesystem__*"])
      assert.strictEqual(Duration.toMillis(Duration.decode(o.approvalTimeout!)), 30000)
      const explicit = yield* AgentConfig.load({ approvalTools: ["x"], approvalTimeout: "1 second" }).pipe(env(vars))
      assert.deepStrictEqual(explicit.approvalTools, ["x"])
      assert.strictEqual(Duration.toMillis(Duration.decode(explicit.approvalTimeout!)), 1000)
      const bad = yield* Effect.exit(AgentConfig.load().pipe(env({ REACT_APPROVAL_TIMEOUT_MS: "0" })))
      assert.isTrue(Exit.isFailure(bad) && String(bad.cause).includes("REACT_APPROVAL_TIMEOUT_MS"))
      const badGlob = yield* Effect.exit(AgentConfig.resolve({ approvalTools: [""] }))
      assert.isTrue(Exit.isFailure(badGlob) && String(badGlob.cause).includes("approvalTools"))
    }).pipe(Effect.provide(NodeFileSystem.layer)))
})

describe("ReactAgent tool approval through a storing journal", () => {
  it.live("approval events and each call's ToolDone are emitted with keys of their own (a durable host keys them by what they are)", () => {
    // two calls of one round need approval: they ask concurrently, in an order a replay need not repeat
    const w = writer()
    const h = makeAgent([
      ScriptedLlm.toolCalls([
        { id: "call_a", name: "write", arguments: { path: "a.txt" } },
        { id: "call_b", name: "write", arguments: { path: "b.txt" } }
      ]),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("answer")
    ], { tools: [w.tool] })
    return Effect.gen(function*() {
      const agent = yield* ReactAgent.ReactAgent
      const emitted: Array<{ readonly event: RunEvent; readonly key: string | undefined }> = []
      const requests = yield* Queue.unbounded<string>()
      // a journal that runs every activity as such (not inline), as a durable host does
      const journal: RunJournal.RunJournal = {
        activity: (o) => o.execute({ restarted: false }),
        emit: (event, options) =>
          Effect.zipRight(
            Effect.sync(() => emitted.push({ event, key: options?.key })),
            event._tag === "ApprovalRequested" ? Queue.offer(requests, event.approval_id) : Effect.void
          )
      }
      const approver = yield* Effect.fork(
        Effect.forever(
          Effect.flatMap(
            Queue.take(requests),
            (approvalId) =>
              Effect.retry(agent.approve({ conversationId: CID, approvalId, decision: "approve" }), {
                times: 50,
                schedule: Schedule.spaced("10 millis")
              })
          )
        )
      )
      yield* agent.execute({ query: "write both", conversationId: CID }, journal)
      yield* Fiber.interrupt(approver)
      assert.deepStrictEqual([...w.ran].sort(), ["a.txt", "b.txt"])
      const keyed = emitted.filter(({ event }) =>
        event._tag === "ApprovalRequested" || event._tag === "ApprovalDecided" || event._tag === "ToolDone"
      )
      assert.strictEqual(keyed.length, 6)
      for (const { event, key } of keyed) {
        const expected = event._tag === "ToolDone"
          ? `tool/1/${event.tool_call_id}/done`
          : `approval/${(event as Requested).approval_id}/${
            event._tag === "ApprovalRequested" ? "requested" : "decided"
          }`
        assert.strictEqual(key, expected, `${event._tag} key`)
      }
      assert.isTrue(
        emitted.filter(({ event }) => !["ApprovalRequested", "ApprovalDecided", "ToolDone"].includes(event._tag)).every(
          ({ key }) => key === undefined
        )
      )
    }).pipe(Effect.provide(h.layer))
  })

  it.live("the request is announced only once it is stored: a person who answers the moment it arrives is heard", () => {
    const w = writer()
    return Effect.gen(function*() {
      const inner = yield* Approvals.make
      // storage that takes a while (a database write): the event must not overtake it
      const slow: Approvals.ApprovalsService = {
        ...inner,
        request: (req) => Effect.zipRight(Effect.sleep("50 millis"), inner.request(req))
      }
      const h = makeAgent([
        ScriptedLlm.toolCall("write", { path: "a.txt" }, { id: "call_w" }),
        ScriptedLlm.text("done"),
        ScriptedLlm.text("answer")
      ], {
        tools: [w.tool],
        approvals: slow,
        agent: { completionCheck: false }
      })
      const events = yield* runWith(answer("approve")).pipe(Effect.provide(h.layer))
      assert.deepStrictEqual(w.ran, ["a.txt"])
      assert.include(events.find((e) => e._tag === "ApprovalDecided"), { status: "approved" })
      assert.strictEqual(events.filter((e) => e._tag === "ApprovalRequested").length, 1)
    })
  })
})
