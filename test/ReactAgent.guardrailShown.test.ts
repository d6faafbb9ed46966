/**
 * Guardrails inside a run (src/internal/reactAgent/guardrails.ts), seen from a
 * journal that records activity names and events: injected messages are
 * checked as numbered activities; a trip retracts answer text only when some is
 * showing (a streamed reply already retracted is not retracted twice); no
 * output check runs without output guardrails.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { echoTool, injectNow, makeAgent, makeInterrupts } from "./utils/agentLayers.js"
import { recordingJournal } from "./utils/journals.js"

const secrets = { input: [{ type: "pattern" as const, name: "secrets", patterns: ["password"] }], refusal: "No." }

const recording = () => recordingJournal()

/** A run whose first loop reply calls a tool (with `content` as text, if given) while a message is injected. */
const injectedRun = (injected: ReadonlyArray<string>, content?: string) => {
  const interrupts = makeInterrupts()
  const h = makeAgent((_request, i) => {
    if (i === 0) {
      for (const text of injected) injectNow(interrupts, "c-inj", text)
      return ScriptedLlm.toolCall("echo", { text: "a" }, content !== undefined ? { content } : {})
    }
    return i === 1 ? ScriptedLlm.toolCall("echo", { text: "b" }) : ScriptedLlm.text("final")
  }, { tools: [echoTool], interrupts, agent: { synthesis: "auto", guardrails: secrets, completionCheck: false } })
  const rec = recording()
  return Effect.map(
    Effect.flatMap(
      ReactAgent.ReactAgent,
      (a) => a.execute({ query: "look it up", conversationId: "c-inj" }, rec.journal)
    ).pipe(Effect.provide(h.layer)),
    () => ({ ...rec, tags: rec.events.map((e) => e._tag) })
  )
}

// an input-stage trip says the answer comes now (AnswerSignal): the refusal is the answer
const refusal = ["GuardrailTripped", "AnswerSignal", "AnswerStart", "AnswerDelta", "AnswerDone", "Done"]

describe("ReactAgent guardrails in the run", () => {
  it.effect("injected messages are checked as guardrail/inject/1, /2, … in the order they are taken in", () =>
    Effect.gen(function*() {
      const r = yield* injectedRun(["first note", "second note"])
      assert.deepStrictEqual(r.names.filter((n) => n.startsWith("guardrail/")), [
        "guardrail/input",
        "guardrail/inject/1",
        "guardrail/inject/2"
      ])
      assert.isFalse(r.tags.includes("GuardrailTripped"))
      const done = r.events[r.events.length - 1]
      assert.isTrue(done._tag === "Done" && done.answer === "final")
    }))

  it.effect("a tripped injection with no answer text shown: the refusal, nothing retracted", () =>
    Effect.gen(function*() {
      const r = yield* injectedRun(["the password"])
      assert.deepStrictEqual(r.names.filter((n) => n.startsWith("guardrail/")), [
        "guardrail/input",
        "guardrail/inject/1"
      ])
      assert.deepStrictEqual(r.tags, [
        "ThinkingStart",
        "ThinkingDone",
        "ToolStart",
        "ToolDone",
        "ThinkingStart",
        ...refusal
      ])
    }))

  it.effect("a streamed reply the loop already retracted (it called a tool) is not retracted again on a trip", () =>
    Effect.gen(function*() {
      const r = yield* injectedRun(["the password"], "Let me look.")
      const reset = r.tags.indexOf("AnswerReset")
      assert.isTrue(reset > r.tags.indexOf("AnswerDelta"))
      assert.deepStrictEqual(r.tags.slice(reset), [
        "AnswerReset",
        "ThinkingDone",
        "ToolStart",
        "ToolDone",
        "ThinkingStart",
        ...refusal
      ])
    }))

  it.effect("only input guardrails: no output check runs", () => {
    const h = makeAgent([ScriptedLlm.text("fine")], { agent: { synthesis: "auto", guardrails: secrets } })
    return Effect.gen(function*() {
      const r = recording()
      yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.execute({ query: "q" }, r.journal))
      assert.deepStrictEqual(r.names.filter((n) => n.startsWith("guardrail/")), ["guardrail/input"])
      const done = r.events[r.events.length - 1]
      assert.isTrue(done._tag === "Done" && done.answer === "fine")
    }).pipe(Effect.provide(h.layer))
  })
})
