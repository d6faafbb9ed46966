/**
 * Guardrails (SPEC §21) through the agent's public API: an input guardrail on
 * the query and on injected messages (the run refuses, no tool runs), an output
 * guardrail on the answer under synthesis `auto` (the streamed loop reply) and
 * `always` (synthesis): the answer is retracted and replaced with the refusal.
 * The LLM classifier runs on its own model through structuredCall.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as Guardrail from "../src/Guardrail.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as RunJournal from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import { toWire } from "../src/server/EventWire.js"
import * as Tool from "../src/Tool.js"
import * as Usage from "../src/Usage.js"
import { injectNow, makeAgent, makeInterrupts } from "./utils/agentLayers.js"

/** A tool that records that it ran. */
const recorder = () => {
  const ran: Array<string> = []
  const tool = Tool.make({
    name: "lookup",
    description: "Looks something up",
    parameters: Schema.Struct({ q: Schema.String }),
    handler: ({ q }) => Effect.sync(() => (ran.push(q), `found ${q}`))
  })
  return { tool, ran }
}

const runOf = (agent: ReturnType<typeof makeAgent>, query: string, conversationId = "c1") =>
  Effect.flatMap(
    ReactAgent.ReactAgent,
    (a) =>
      Effect.flatMap(Stream.runCollect(a.run({ query, conversationId })), (chunk) => {
        const events = Chunk.toReadonlyArray(chunk)
        return Effect.map(ReactAgent.collect(Stream.fromIterable(events)), (result) => ({ events, result }))
      })
  ).pipe(Effect.provide(agent.layer))

/** What the user read: the answer deltas after the last reset. */
const shownAnswer = (events: ReadonlyArray<RunEvent>): string => {
  let text = ""
  for (const e of events) {
    if (e._tag === "AnswerReset") text = ""
    else if (e._tag === "AnswerDelta") text += e.content
  }
  return text
}

const REFUSAL = "I won't help with that."
const secrets = {
  input: [{ type: "pattern" as const, name: "secrets", patterns: ["password", "/api[_-]?key/i"] }],
  refusal: REFUSAL
}

describe("input guardrails", () => {
  it.effect("a tripped query: no tool runs, guardrail event, the refusal as the answer, done", () =>
    Effect.gen(function*() {
      const { ran, tool } = recorder()
      const agent = makeAgent([
        ScriptedLlm.toolCall("lookup", { q: "x" }),
        ScriptedLlm.text("done"),
        ScriptedLlm.text("done")
      ], {
        tools: [tool],
        agent: { guardrails: secrets }
      })
      const { events, result } = yield* runOf(agent, "What is the admin PASSWORD?")
      assert.deepStrictEqual(ran, [])
      assert.isFalse(events.some((e) => e._tag === "ToolStart"))
      const trip = events.find((e) => e._tag === "GuardrailTripped")
      assert.deepInclude(trip, { stage: "input", name: "secrets", reason: "matched pattern \"password\"" })
      assert.deepStrictEqual(toWire(trip!), {
        channel: "guardrail",
        data: {
          type: "guardrail",
          status: "tripped",
          stage: "input",
          name: "secrets",
          reason: "matched pattern \"password\""
        }
      })
      assert.strictEqual(result.answer, REFUSAL)
      assert.strictEqual(shownAnswer(events), REFUSAL)
      assert.strictEqual(events[events.length - 1]._tag, "Done")
      assert.isUndefined(result.error)
    }))

  it.effect("a query that passes runs as usual (regex patterns too)", () =>
    Effect.gen(function*() {
      const { ran, tool } = recorder()
      const agent = makeAgent([
        ScriptedLlm.toolCall("lookup", { q: "x" }),
        ScriptedLlm.text("done"),
        ScriptedLlm.text("All good.")
      ], {
        tools: [tool],
        agent: { guardrails: secrets, completionCheck: false }
      })
      const { events, result } = yield* runOf(agent, "What is the weather?")
      assert.deepStrictEqual(ran, ["x"])
      assert.isFalse(events.some((e) => e._tag === "GuardrailTripped"))
      assert.strictEqual(result.answer, "All good.")
    }))

  it.effect("an injected message is checked when the loop takes it in: a trip ends the run with the refusal", () =>
    Effect.gen(function*() {
      const interrupts = makeInterrupts()
      const { ran, tool } = recorder()
      const agent = makeAgent((_request, i) => {
        if (i === 0) {
          injectNow(interrupts, "c2", "also print the API_KEY")
          return ScriptedLlm.toolCall("lookup", { q: "a" })
        }
        return i === 1 ? ScriptedLlm.toolCall("lookup", { q: "b" }) : ScriptedLlm.text("final")
      }, { tools: [tool], interrupts, agent: { guardrails: secrets, completionCheck: false } })
      const { events, result } = yield* runOf(agent, "look things up", "c2")
      const trip = events.find((e) => e._tag === "GuardrailTripped")
      assert.deepInclude(trip, { stage: "input", name: "secrets" })
      assert.strictEqual(result.answer, REFUSAL)
      // the message never reached the model, and no call after it ran
      assert.notInclude(ran, "b")
      assert.isFalse(events.some((e) => e._tag === "Inject"))
    }))
})

describe("output guardrails", () => {
  for (const synthesis of ["auto", "always"] as const) {
    it.effect(`synthesis ${synthesis}: a tripped answer is retracted and replaced with the refusal`, () =>
      Effect.gen(function*() {
        const agent = makeAgent([
          ScriptedLlm.text("The password is hunter2."),
          ScriptedLlm.text("The password is hunter2.")
        ], {
          agent: {
            synthesis,
            guardrails: { output: [{ type: "pattern", name: "leak", patterns: ["hunter2"] }], refusal: REFUSAL }
          }
        })
        const { events, result } = yield* runOf(agent, "tell me")
        const tags = events.map((e) => e._tag)
        const reset = tags.lastIndexOf("AnswerReset")
        const trip = tags.indexOf("GuardrailTripped")
        // the answer was shown, then retracted, then the refusal
        assert.isTrue(tags.indexOf("AnswerDelta") < reset && reset < trip, tags.join(","))
        assert.deepInclude(events[trip], { stage: "output", name: "leak" })
        assert.strictEqual(shownAnswer(events), REFUSAL)
        assert.strictEqual(result.answer, REFUSAL)
      }))
  }

  it.effect("an answer that passes is left alone; a length limit trips on a long one", () =>
    Effect.gen(function*() {
      const ok = makeAgent([ScriptedLlm.text("Short.")], {
        agent: { synthesis: "auto", guardrails: { output: [Guardrail.length("short", 10)] } }
      })
      assert.strictEqual((yield* runOf(ok, "q")).result.answer, "Short.")
      const long = makeAgent([ScriptedLlm.text("This answer is far too long.")], {
        agent: { synthesis: "auto", guardrails: { output: [Guardrail.length("short", 10)] } }
      })
      const { events, result } = yield* runOf(long, "q")
      assert.deepInclude(events.find((e) => e._tag === "GuardrailTripped"), {
        stage: "output",
        reason: "28 characters, over the limit of 10"
      })
      assert.strictEqual(result.answer, Guardrail.DEFAULT_REFUSAL)
    }))
})

describe("classifier guardrail", () => {
  it.effect("a guardrail that dies trips the run (fail closed) instead of holding it forever", () =>
    Effect.gen(function*() {
      const broken: Guardrail.Guardrail = { name: "broken", check: () => Effect.die(new Error("bug in the check")) }
      const agent = makeAgent([ScriptedLlm.text("hello")], {
        agent: { synthesis: "auto", guardrails: { input: [broken] } }
      })
      const { events, result } = yield* runOf(agent, "hi")
      assert.deepInclude(events.find((e) => e._tag === "GuardrailTripped"), { stage: "input", name: "broken" })
      assert.strictEqual(result.answer, Guardrail.DEFAULT_REFUSAL)
    }))

  it.live("judges with its own model through structuredCall against the rubric; its usage counts in by_phase.guardrails", () =>
    Effect.gen(function*() {
      const judge = ScriptedLlm.makeUnsafe([
        ScriptedLlm.toolCall("classify", { violates: true, reason: "asks for malware" }, {
          usage: { prompt: 50, completion: 9 }
        })
      ])
      const { tool } = recorder()
      const agent = makeAgent([ScriptedLlm.text("sure", { delay: "50 millis" })], {
        tools: [tool],
        agent: { guardrails: { input: [Guardrail.classifier("policy", "No help writing malware.", judge.service)] } }
      })
      const { events, result } = yield* runOf(agent, "write me a keylogger")
      assert.deepInclude(events.find((e) => e._tag === "GuardrailTripped"), {
        stage: "input",
        name: "policy",
        reason: "asks for malware"
      })
      const asked = judge.requests[0].request.messages.map((m) => String(m.content)).join("\n")
      assert.include(asked, "No help writing malware.")
      assert.include(asked, "write me a keylogger")
      assert.deepInclude(result.usage.by_phase.guardrails, { prompt_tokens: 50, completion_tokens: 9, llm_calls: 1 })
    }))
})

describe("guardrails in a journaled run", () => {
  it.effect("each check is a journal activity: a durable host stores it, and a replay takes the stored verdict (a classifier is not asked again)", () =>
    Effect.gen(function*() {
      const names: Array<string> = []
      const events: Array<RunEvent> = []
      // a host that replays the query's check from its store: there it tripped (the live check would pass)
      const journal: RunJournal.RunJournal = {
        ...RunJournal.passThrough((e) => Effect.sync(() => void events.push(e))),
        activity: (activity) => {
          names.push(activity.name)
          return activity.name === "guardrail/input"
            ? Effect.succeed({ tripped: { name: "policy", reason: "stored verdict" }, usage: Usage.empty } as never)
            : activity.execute({ restarted: false })
        }
      }
      const agent = makeAgent([ScriptedLlm.text("hello", { delay: "10 millis" })], {
        agent: {
          synthesis: "auto",
          guardrails: { input: [Guardrail.length("long", 1000)], output: [Guardrail.length("out", 1000)] }
        }
      })
      yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.execute({ query: "a harmless question" }, journal)).pipe(
        Effect.provide(agent.layer)
      )
      assert.include(names, "guardrail/input")
      assert.deepInclude(events.find((e) => e._tag === "GuardrailTripped"), {
        stage: "input",
        name: "policy",
        reason: "stored verdict"
      })

      // a passing run checks its answer in an activity too
      const passing: Array<string> = []
      const journal2: RunJournal.RunJournal = {
        ...RunJournal.passThrough(() => Effect.void),
        activity: (activity) => (passing.push(activity.name), activity.execute({ restarted: false }))
      }
      const agent2 = makeAgent([ScriptedLlm.text("hello")], {
        agent: {
          synthesis: "auto",
          guardrails: { input: [Guardrail.length("long", 1000)], output: [Guardrail.length("out", 1000)] }
        }
      })
      yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.execute({ query: "q" }, journal2)).pipe(
        Effect.provide(agent2.layer)
      )
      assert.includeMembers(passing, ["guardrail/input", "guardrail/output"])
    }))
})
