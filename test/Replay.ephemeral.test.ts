/**
 * Ephemeral events and cassettes: a recorded run whose tool reports progress
 * keeps no `ToolProgress` in its cassette, and its replay (where the tool does
 * not run: its recorded outcome is served) compares equal to the recording.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Cassette from "../src/Cassette.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as Recorder from "../src/Recorder.js"
import * as Replay from "../src/Replay.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import { llmGuard, recordingAgent } from "./utils/replayLayers.js"

const steps = Tool.make({
  name: "steps",
  description: "Works in three steps",
  parameters: Schema.Struct({}),
  idempotent: true,
  handler: () =>
    Effect.gen(function*() {
      for (let i = 1; i <= 3; i++) yield* Tool.progress(`step ${i}`, i / 3)
      return "three steps done"
    })
})

describe("ephemeral events and cassettes", () => {
  it.effect("a run's tool progress is not in its cassette; the replay compares equal to the recording", () => {
    const h = recordingAgent([
      ScriptedLlm.toolCall("steps", {}, { id: "call_s" }),
      ScriptedLlm.text("done"),
      ScriptedLlm.text("It took three steps.")
    ], { tools: [steps], agent: { completionCheck: false } })
    return Effect.gen(function*() {
      const recorded = yield* Effect.provide(
        Effect.flatMap(
          ReactAgent.ReactAgent,
          (agent) => Recorder.record(agent, { query: "go" }, { agentOptions: h.agentOptions })
        ),
        h.layer
      )
      assert.isTrue(recorded.events.some((e) => e._tag === "ToolProgress"), "the live run reported progress")
      assert.isFalse(recorded.cassette.events.some((e) => e._tag === "ToolProgress"))
      const replayed = yield* Effect.provide(
        Effect.flatMap(ReactAgent.ReactAgent, (agent) => Replay.run(agent)),
        Replay.layerAgent(recorded.cassette, { guard: llmGuard() }).pipe(Layer.orDie)
      )
      assert.isFalse(replayed.events.some((e) => e._tag === "ToolProgress"), "a replayed call does not run its tool")
      assert.deepStrictEqual(Cassette.normalizeEvents(replayed.events), Cassette.normalizeEvents(recorded.events))
      assert.strictEqual(replayed.result.answer, "It took three steps.")
    })
  })
})
