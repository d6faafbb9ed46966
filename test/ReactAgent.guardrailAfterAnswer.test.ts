/**
 * An input guardrail that trips on a message injected while the loop's answer
 * is streaming (src/internal/reactAgent/guardrails.ts, synthesis `auto`): the
 * answer text is showing when the drain after the reply screens the message,
 * so the trip retracts it (`AnswerReset`) before the refusal. A reply that
 * calls a tool was retracted by the loop already and is not retracted again
 * (test/ReactAgent.guardrailShown.test.ts); here nothing else retracts it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { echoTool, injectNow, makeAgent, makeInterrupts } from "./utils/agentLayers.js"
import { recordingJournal } from "./utils/journals.js"

const secrets = { input: [{ type: "pattern" as const, name: "secrets", patterns: ["password"] }], refusal: "No." }

const recording = () => recordingJournal()

/** A run whose first loop reply is a streamed answer, written while `injected` arrives. */
const answerRun = (injected: string) => {
  const interrupts = makeInterrupts()
  const h = makeAgent((_request, i) => {
    if (i === 0) {
      injectNow(interrupts, "c-answer", injected)
      return ScriptedLlm.text("Here is the answer.")
    }
    return ScriptedLlm.text("The answer, with the note.")
  }, { tools: [echoTool], interrupts, agent: { synthesis: "auto", guardrails: secrets, completionCheck: false } })
  const rec = recording()
  return Effect.map(
    Effect.flatMap(
      ReactAgent.ReactAgent,
      (a) => a.execute({ query: "answer me", conversationId: "c-answer" }, rec.journal)
    ).pipe(
      Effect.provide(h.layer)
    ),
    () => ({
      ...rec,
      tags: rec.events.map((e) => e._tag).filter((t, i, all) => i === 0 || all[i - 1] !== t),
      requests: h.requests()
    })
  )
}

describe("ReactAgent guardrails: a trip at the drain after a streamed answer", () => {
  it.effect("the answer showing is retracted before the refusal", () =>
    Effect.gen(function*() {
      const r = yield* answerRun("the password is hunter2")
      assert.deepStrictEqual(r.names.filter((n) => n.startsWith("guardrail/")), [
        "guardrail/input",
        "guardrail/inject/1"
      ])
      assert.deepStrictEqual(r.tags, [
        "ThinkingStart",
        "AnswerStart",
        "AnswerDelta",
        "ThinkingDone",
        "AnswerReset",
        "GuardrailTripped",
        "AnswerSignal",
        "AnswerStart",
        "AnswerDelta",
        "AnswerDone",
        "Done"
      ])
      const done = r.events[r.events.length - 1]
      assert.isTrue(done._tag === "Done" && done.answer === "No.")
      // the model never read the message
      assert.strictEqual(r.requests.length, 1)
    }))

  it.effect("a message that passes: the shown answer is retracted by the loop, the next reply answers", () =>
    Effect.gen(function*() {
      const r = yield* answerRun("also mention the weather")
      assert.isFalse(r.tags.includes("GuardrailTripped"))
      assert.strictEqual(r.tags.filter((t) => t === "AnswerReset").length, 1)
      const done = r.events[r.events.length - 1]
      assert.isTrue(done._tag === "Done" && done.answer === "The answer, with the note.")
    }))
})
