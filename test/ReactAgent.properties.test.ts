import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as fc from "effect/FastCheck"
import * as Stream from "effect/Stream"
import * as Hooks from "../src/Hooks.js"
import type { ChatMessage } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import type { ScriptStep } from "../src/ScriptedLlm.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import {
  addTool,
  bigTool,
  crashTool,
  echoTool,
  failTool,
  injectNow,
  jsonLlm,
  makeAgent,
  makeInterrupts,
  pageTool
} from "./utils/agentLayers.js"

const tools = [addTool, echoTool, failTool, crashTool, pageTool, bigTool]
const toolName = fc.constantFrom("add", "echo", "fail", "crash", "page", "big", "nope", "")
const args: fc.Arbitrary<Record<string, unknown> | string> = fc.oneof(
  fc.record({ a: fc.integer(), b: fc.integer() }),
  fc.record({ text: fc.string() }),
  fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 }),
  fc.string({ maxLength: 20 }),
  fc.constantFrom("{not json", "[1,2]", "42", "null", "")
)
const failure = fc.constantFrom<ScriptStep>(
  ScriptedLlm.fail("Server"),
  ScriptedLlm.fail("ContextOverflow"),
  ScriptedLlm.fail("BadRequest"),
  ScriptedLlm.fail("RateLimited")
)

const nativeStep: fc.Arbitrary<ScriptStep> = fc.oneof(
  fc.string({ maxLength: 40 }).map((t) => ScriptedLlm.text(t)),
  // tool calls, some with text before them (streamed as the answer under `auto`, then retracted)
  fc.tuple(
    fc.array(fc.record({ name: toolName, arguments: args }), { minLength: 1, maxLength: 4 }),
    fc.string({ maxLength: 20 })
  )
    .map(([calls, content]) => ScriptedLlm.toolCalls(calls, { content })),
  fc.array(fc.record({ id: fc.constantFrom("x", "", "y"), name: toolName, arguments: args }), {
    minLength: 1,
    maxLength: 3
  })
    .map((calls) => ScriptedLlm.toolCalls(calls)),
  failure
)

const jsonStep: fc.Arbitrary<ScriptStep> = fc.oneof(
  fc.string({ maxLength: 40 }).map((t) => ScriptedLlm.text(t)),
  fc.constantFrom("{\"type\":\"tool_call\",", "{\"type\":\"final_answer\"}", "```json\n{]\n```", "{}", "[]", "null")
    .map((t) => ScriptedLlm.text(t)),
  fc.tuple(toolName, fc.jsonValue({ maxDepth: 2 })).map(([name, a]) =>
    ScriptedLlm.text(JSON.stringify({ type: "tool_call", tool_name: name, tool_args: a }))
  ),
  fc.tuple(toolName, fc.record({ a: fc.integer(), b: fc.integer() })).map(([name, a]) =>
    ScriptedLlm.jsonToolCall(name, a)
  ),
  fc.string({ maxLength: 30 }).map((t) => ScriptedLlm.jsonFinal(t)),
  failure
)

/**
 * Every assistant tool call is followed by exactly its tool messages, in order; no
 * orphan tool message; the calls of one assistant message have distinct, non-empty
 * ids (the model's duplicate or empty ids are replaced), so each id names exactly one
 * call and one tool message of its group — what a provider pairs them by.
 */
const checkPairing = (messages: ReadonlyArray<ChatMessage>): string | undefined => {
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    if (m.role === "assistant" && m.tool_calls && m.tool_calls.length > 0) {
      const ids = m.tool_calls.map((c) => c.id)
      if (ids.some((id) => id === "")) return `empty tool call id at ${i}: ${JSON.stringify(ids)}`
      if (new Set(ids).size !== ids.length) return `duplicate tool call ids at ${i}: ${JSON.stringify(ids)}`
      for (let k = 0; k < m.tool_calls.length; k++) {
        const next = messages[i + 1 + k]
        if (next?.role !== "tool" || next.tool_call_id !== m.tool_calls[k].id) {
          return `call ${m.tool_calls[k].id} unpaired at ${i}`
        }
      }
      const after = messages[i + 1 + m.tool_calls.length]
      if (after?.role === "tool") return `extra tool message after call group at ${i}`
      i += m.tool_calls.length
    } else if (m.role === "tool") {
      return `orphan tool message ${m.tool_call_id} at ${i}`
    }
  }
  return undefined
}

const checkRun = (h: ReturnType<typeof makeAgent>, es: ReadonlyArray<RunEvent>) => {
  assert.strictEqual(es[es.length - 1]._tag, "Done")
  assert.strictEqual(es.filter((e) => e._tag === "Done").length, 1)
  for (const e of es) {
    if (e._tag === "RunFailed") assert.notInclude(e.message, "Internal error")
  }
  for (const r of h.requests()) {
    const problem = checkPairing(r.request.messages)
    assert.isUndefined(problem, problem)
  }
  const done = es[es.length - 1]
  if (done._tag === "Done") {
    const problem = checkPairing(done.messages ?? [])
    assert.isUndefined(problem, problem)
  }
  // what a client shows as the answer (the deltas after the last reset) is the answer Done reports
  if (done._tag === "Done" && !es.some((e) => e._tag === "RunFailed")) {
    let shown = ""
    for (const e of es) {
      if (e._tag === "AnswerDelta") shown += e.content
      else if (e._tag === "AnswerReset") shown = ""
    }
    assert.strictEqual(shown, done.answer)
  }
  const starts = es.filter((e) => e._tag === "ToolStart").length
  const dones = es.filter((e) => e._tag === "ToolDone").length
  assert.strictEqual(starts, dones)
}

/** Each property runs under both synthesis policies. */
const policy = fc.constantFrom("auto" as const, "always" as const)

const runAll = Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runCollect(a.run({ query: "property" }))).pipe(
  Effect.map(Chunk.toArray)
)

describe("ReactAgent properties", () => {
  it.effect.prop(
    "native mode: never a defect, never an unpaired tool call, always ends with Done",
    [fc.array(nativeStep, { maxLength: 10 }), policy],
    ([script, synthesis]) => {
      const h = makeAgent(script, { tools, agent: { maxIterations: 8, synthesis } })
      return Effect.map(Effect.provide(runAll, h.layer), (es) => checkRun(h, es))
    },
    { fastCheck: { numRuns: 60 } }
  )

  it.effect.prop(
    "JSON mode: never a defect, always ends with Done",
    [fc.array(jsonStep, { maxLength: 10 }), policy],
    ([script, synthesis]) => {
      const h = makeAgent(script, { tools, llm: jsonLlm, agent: { maxIterations: 8, synthesis } })
      return Effect.map(Effect.provide(runAll, h.layer), (es) => checkRun(h, es))
    },
    { fastCheck: { numRuns: 60 } }
  )

  it.effect.prop(
    "native mode with interrupts arriving at random calls and hooks that block or die: pairing always holds, no interrupt lost",
    [fc.array(nativeStep, { maxLength: 8 }), fc.array(fc.integer({ min: 0, max: 9 }), { maxLength: 4 }), policy],
    ([script, injectAt, synthesis]) => {
      const irq = makeInterrupts()
      const responder: ScriptedLlm.Responder = (_req, i) => {
        for (const at of injectAt) if (at === i) injectNow(irq, "prop", `interrupt at ${i}`)
        return script[i] ?? ScriptedLlm.fail("Unknown", "exhausted")
      }
      const hooks = Hooks.layer([
        Hooks.pre({ name: "no-echo", matcher: "echo", run: () => Effect.succeed({ allow: false, reason: "no" }) }),
        Hooks.pre({ name: "dies", matcher: "page", run: () => Effect.die("hook bug") }),
        Hooks.post({ name: "post-dies", matcher: "add", run: () => Effect.die("post bug") })
      ])
      const h = makeAgent(responder, { tools, hooks, interrupts: irq, agent: { maxIterations: 8, synthesis } })
      const events = Effect.flatMap(
        ReactAgent.ReactAgent,
        (a) => Stream.runCollect(a.run({ query: "p", conversationId: "prop" }))
      )
      return Effect.map(Effect.provide(events, h.layer), (es) => {
        const list = Chunk.toArray(es)
        checkRun(h, list)
        const done = list[list.length - 1]
        const injected = list.filter((e) => e._tag === "Inject").length
        // never lost: every injection was taken in (Inject) or reported in Done
        const sent = injectAt.filter((at) => at < h.llm.calls).length
        if (done._tag === "Done") assert.strictEqual(injected + done.pending_injections.length, sent)
      })
    },
    { fastCheck: { numRuns: 60 } }
  )
})
