/**
 * The JSON protocol's edges (SPEC §3.2, docs/agent-loop.md "JSON mode"), each
 * seen in what the model is sent next, in the events and in the answer: the
 * `reasoning` field when it is missing or not a string, a `final_answer` whose
 * `answer` is not a string (null: the raw reply; anything else: its JSON), a
 * `tool_call` without a usable `tool_name` (unparseable: the re-format
 * request, never a crash), a name with blanks around it, non-object
 * `tool_args`, the request without `json_object`, an interrupt right after an
 * unparseable reply, and a run cancelled while its one tool runs. In process
 * over `ScriptedLlm`, with the real in-memory interrupts.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { ChatMessage } from "../src/Message.js"
import { textOf } from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import { addTool, injectNow, jsonLlm, makeAgent, makeInterrupts } from "./utils/agentLayers.js"

const CID = "conv-json-protocol"
const events = (input?: Partial<ReactAgent.RunInput>) =>
  Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runCollect(a.run({ query: "q", conversationId: CID, ...input })))
    .pipe(
      Effect.map(Chunk.toArray)
    )
const doneOf = (es: ReadonlyArray<RunEvent>) => {
  const done = es[es.length - 1]
  if (done._tag !== "Done") throw new Error(`the run did not end with Done: ${done._tag}`)
  return done
}
const thinkingDone = (es: ReadonlyArray<RunEvent>) =>
  es.flatMap((e) => (e._tag === "ThinkingDone" ? [e.reasoning] : []))
const texts = (ms: ReadonlyArray<ChatMessage>) => ms.map((m) => `${m.role}: ${textOf(m.content)}`)
/** The re-format request the loop appends after an unparseable reply (its wording is ours; it asks for JSON). */
const isReformat = (m: ChatMessage | undefined) =>
  m?.role === "user" && textOf(m.content).startsWith("Your previous reply could not be parsed as JSON")

describe("ReactAgent JSON protocol edges", () => {
  it.effect("reasoning: a missing field is \"\" in ThinkingDone; a non-string one gives way to the provider's reasoning", () => {
    const h = makeAgent([
      ScriptedLlm.text(JSON.stringify({ type: "tool_call", tool_name: "add", tool_args: { a: 1, b: 2 } })),
      ScriptedLlm.text(JSON.stringify({ type: "final_answer", reasoning: 42, answer: "3" }), {
        reasoning: "the provider's own"
      })
    ], { llm: jsonLlm, agent: { synthesis: "auto" } })
    return Effect.gen(function*() {
      const es = yield* events()
      assert.deepStrictEqual(thinkingDone(es), ["", "the provider's own"])
      assert.strictEqual(doneOf(es).answer, "3")
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("final_answer whose answer is not a string: null → the raw reply, a number or an object → its JSON", () =>
    Effect.gen(function*() {
      const cases: ReadonlyArray<readonly [unknown, (raw: string) => string]> = [
        [null, (raw) => raw],
        [42, () => "42"],
        [{ total: 5 }, () => "{\"total\":5}"]
      ]
      for (const [answer, expected] of cases) {
        const raw = JSON.stringify({ type: "final_answer", reasoning: "r", answer })
        const h = makeAgent([ScriptedLlm.text(raw)], { llm: jsonLlm, agent: { synthesis: "auto" } })
        const es = yield* events().pipe(Effect.provide(h.layer))
        assert.strictEqual(doneOf(es).answer, expected(raw), JSON.stringify(answer))
        assert.strictEqual(h.requests().length, 1)
      }
    }))

  it.effect("a tool_call whose tool_name is blank, not a string or missing is unparseable: re-format request, no tool, no crash", () =>
    Effect.gen(function*() {
      for (const name of ["   ", 7, undefined]) {
        const bad = JSON.stringify({ type: "tool_call", reasoning: "r", tool_name: name, tool_args: {} })
        const h = makeAgent([ScriptedLlm.text(bad), ScriptedLlm.jsonFinal("fine")], {
          llm: jsonLlm,
          agent: { synthesis: "auto" }
        })
        const es = yield* events().pipe(Effect.provide(h.layer))
        const label = JSON.stringify(name)
        assert.isFalse(es.some((e) => e._tag === "ToolStart" || e._tag === "ToolDone" || e._tag === "RunFailed"), label)
        const second = h.requests()[1].request.messages
        assert.deepStrictEqual(texts(second.slice(2, 3)), [`assistant: ${bad}`], label)
        assert.isTrue(isReformat(second[3]), label)
        assert.strictEqual(second.length, 4, label)
        assert.strictEqual(doneOf(es).answer, "fine", label)
      }
    }))

  it.effect("a tool name with blanks around it names the tool", () => {
    const h = makeAgent([
      ScriptedLlm.text(
        JSON.stringify({ type: "tool_call", reasoning: "r", tool_name: " add ", tool_args: { a: 2, b: 3 } })
      ),
      ScriptedLlm.jsonFinal("5")
    ], { llm: jsonLlm, tools: [addTool], agent: { synthesis: "auto" } })
    return Effect.gen(function*() {
      const es = yield* events()
      const done = es.find((e) => e._tag === "ToolDone")
      assert.include(done, { tool_name: "add", observation: "5", error: null })
      assert.deepStrictEqual(h.requests()[1].request.messages[3], { role: "user", content: "Observation: 5" })
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("tool_args that is a string or an array: an error observation naming its kind", () =>
    Effect.gen(function*() {
      for (const [args, kind] of [["a=1", "string"], [[1, 2], "an array"], [3, "number"]] as const) {
        const h = makeAgent([
          ScriptedLlm.text(JSON.stringify({ type: "tool_call", reasoning: "r", tool_name: "add", tool_args: args })),
          ScriptedLlm.jsonFinal("gave up")
        ], { llm: jsonLlm, tools: [addTool], agent: { synthesis: "auto" } })
        const es = yield* events().pipe(Effect.provide(h.layer))
        const message = `tool_args must be a JSON object, got ${kind}`
        assert.deepStrictEqual(h.requests()[1].request.messages[3], {
          role: "user",
          content: `Observation: Error: ${message}`
        }, kind)
        assert.include(es.find((e) => e._tag === "ToolDone"), { error: message }, kind)
        assert.strictEqual(doneOf(es).answer, "gave up", kind)
      }
    }))

  it.effect("a model without JSON mode gets the same messages, without response_format", () => {
    const h = makeAgent([ScriptedLlm.jsonFinal("hi")], {
      llm: { abilities: { toolCall: false, jsonMode: false } },
      agent: { synthesis: "auto" }
    })
    return Effect.gen(function*() {
      yield* events()
      const request = h.requests()[0].request
      assert.isUndefined(request.responseFormat)
      assert.deepStrictEqual(request.messages.map((m) => m.role), ["system", "user"])
      assert.include(textOf(request.messages[0].content), "Available tools")
      assert.deepStrictEqual(request.messages[1], { role: "user", content: "q", pinned: true })
    }).pipe(Effect.provide(h.layer))
  })

  it.effect("an interrupt right after an unparseable reply: the model reads the interrupt, not the re-format request", () => {
    const irq = makeInterrupts()
    const h = makeAgent((_request, i) => {
      if (i === 0) {
        injectNow(irq, CID, "use metric units")
        return ScriptedLlm.text("not json at all")
      }
      return ScriptedLlm.jsonFinal("20 °C")
    }, { llm: jsonLlm, interrupts: irq, agent: { synthesis: "auto" } })
    return Effect.gen(function*() {
      const es = yield* events()
      const second = h.requests()[1].request.messages
      assert.deepStrictEqual(second.map((m) => m.role), ["system", "user", "assistant", "user"])
      assert.isTrue(textOf(second[3].content).startsWith("[USER INTERRUPT]"))
      assert.isFalse(second.some(isReformat))
      assert.strictEqual(doneOf(es).answer, "20 °C")
    }).pipe(Effect.provide(h.layer))
  })

  it.live("cancelled while its tool runs: the action is answered `Observation: Error: interrupted` in the trace", () =>
    Effect.gen(function*() {
      const started = yield* Deferred.make<void>()
      const slow = Tool.make({
        name: "slow",
        description: "Takes for ever",
        parameters: Schema.Struct({}),
        handler: () => Effect.zipRight(Deferred.succeed(started, undefined), Effect.never)
      })
      const h = makeAgent([ScriptedLlm.jsonToolCall("slow", {}, "wait")], { llm: jsonLlm, tools: [slow] })
      const es = yield* events({ cancel: Deferred.await(started) }).pipe(Effect.provide(h.layer))
      const done = doneOf(es)
      assert.isFalse(es.some((e) => e._tag === "RunFailed"))
      const trace = done.messages ?? []
      assert.deepStrictEqual(texts(trace.slice(2)), [
        `assistant: ${JSON.stringify({ type: "tool_call", reasoning: "wait", tool_name: "slow", tool_args: {} })}`,
        "user: Observation: Error: interrupted"
      ])
    }).pipe(
      Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("the cancelled run did not end") })
    ))
})
