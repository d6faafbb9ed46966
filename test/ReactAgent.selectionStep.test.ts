/**
 * Tool selection as a step of the run (SPEC §5, `toolSet.ts`): under a
 * storing journal the selection is the activity `selection`, so a replay
 * takes the stored choice instead of asking the selector again; and a defect
 * in the selection — here a selection model whose `model` getter throws,
 * before `selectTools`' own safety net — falls back to every tool with no
 * usage: selection never stops a run. In process over `ScriptedLlm`, with a
 * journal that serves stored results by name and records every step.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Interrupts from "../src/Interrupts.js"
import type { LlmService } from "../src/Llm.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import type { RunJournal } from "../src/RunJournal.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Toolkit from "../src/Toolkit.js"
import * as Usage from "../src/Usage.js"
import { addTool, echoTool, fillerTools, makeAgent, noHooks, recordingGuard } from "./utils/agentLayers.js"
import { recordingJournal } from "./utils/journals.js"

const filler = fillerTools(12)
const many = [addTool, echoTool, ...filler] // 14 tools > threshold 12

/** A journal holding results already stored (encoded) by step name; it runs the others and records every name. */
const storingJournal = (stored: Record<string, unknown>) => {
  const { events, journal, names } = recordingJournal(stored)
  return { journal, ran: names, events }
}

const execute = (journal: RunJournal) =>
  Effect.flatMap(ReactAgent.ReactAgent, (agent) => agent.execute({ query: "add 1 and 2" }, journal))

const loopTools = (request: ScriptedLlm.RecordedRequest) => (request.request.tools ?? []).map((t) => t.function.name)

const doneOf = (events: ReadonlyArray<RunEvent>) => {
  const done = events.find((e): e is Extract<RunEvent, { _tag: "Done" }> => e._tag === "Done")
  if (done === undefined) throw new Error("no Done")
  return done
}

describe("ReactAgent tool selection as a step", () => {
  it.effect("the selection is the step `selection`: run once, then replayed from what was stored", () =>
    Effect.gen(function*() {
      // first execution: the selector is asked, in the step `selection`
      const first = makeAgent([
        ScriptedLlm.toolCall("select_tools", { tools: ["add"] }, { usage: { prompt: 40, completion: 2 } }),
        ScriptedLlm.text("3")
      ], { tools: many, agent: { synthesis: "auto" } })
      const live = storingJournal({})
      yield* execute(live.journal).pipe(Effect.provide(first.layer))
      assert.strictEqual(live.ran[0], "selection")
      assert.strictEqual(first.requests().length, 2)
      // a replay: the stored choice (echo, whatever the selector would say now), the selector not asked
      const replayed = makeAgent([ScriptedLlm.text("3")], { tools: many, agent: { synthesis: "auto" } })
      const replay = storingJournal({
        selection: { selected: ["echo"], usage: Schema.encodeSync(Usage.Usage)(Usage.make(40, 2)) }
      })
      yield* execute(replay.journal).pipe(Effect.provide(replayed.layer))
      assert.strictEqual(replayed.requests().length, 1)
      const tools = loopTools(replayed.requests()[0])
      assert.include(tools, "echo")
      assert.notInclude(tools, "add")
      assert.strictEqual(doneOf(replay.events).usage.by_phase.selection?.total_tokens, 42)
    }))

  it.effect("a defect in the selection falls back to every tool, no selection usage, and the run answers", () => {
    const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.text("3")])
    const broken: LlmService = {
      ...llm.service,
      get model(): string {
        throw new Error("the selection model is broken")
      }
    }
    const layer = ReactAgent.layer({ synthesis: "auto", selectionLlm: broken }).pipe(
      Layer.provide(
        Layer.mergeAll(llm.layer, Toolkit.layer(many), noHooks, recordingGuard().layer, Interrupts.layerMemory)
      ),
      Layer.orDie
    )
    return Effect.gen(function*() {
      const run = storingJournal({})
      yield* execute(run.journal)
      assert.deepStrictEqual(run.events[0], { _tag: "PhaseChange", phase: "selecting_tools", total_tools: 14 })
      assert.isFalse(run.events.some((e) => e._tag === "RunFailed"))
      assert.strictEqual(llm.requests.length, 1, "only the loop call: the selector never answered")
      assert.sameMembers(loopTools(llm.requests[0]), many.map((t) => t.name))
      const done = doneOf(run.events)
      assert.strictEqual(done.answer, "3")
      assert.isUndefined(done.usage.by_phase.selection)
    }).pipe(Effect.provide(layer))
  })
})
