/**
 * Test wiring for record/replay: an agent over a scripted LLM whose model,
 * tools and interrupts go through `Recorder.layer`, with a context guard that
 * compacts with the (recorded or replayed) model itself.
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type { AgentOptions } from "../../src/AgentConfig.js"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as Hooks from "../../src/Hooks.js"
import type { InterruptsService } from "../../src/Interrupts.js"
import * as Interrupts from "../../src/Interrupts.js"
import { Llm } from "../../src/Llm.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import * as Recorder from "../../src/Recorder.js"
import type { ScriptedLlmOptions, ScriptStep } from "../../src/ScriptedLlm.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import type { Tool as ToolT } from "../../src/Tool.js"
import * as Tool from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"

/** A guard that compacts with the agent's own `Llm` (so compaction calls are model calls of the cassette). */
export const llmGuard = (budget?: number): Layer.Layer<ContextGuard.ContextGuard, never, Llm> =>
  Layer.effect(
    ContextGuard.ContextGuard,
    Effect.map(
      Llm,
      (llm) => ContextGuard.makeUnsafe({ llm, ...(budget !== undefined ? { budget, keepRecent: 2 } : {}) })
    )
  )

/** A tool that counts its executions (replay must run none). */
export const countingTool = () => {
  const ran: Array<unknown> = []
  const tool = Tool.make({
    name: "lookup",
    description: "Looks a key up",
    parameters: Schema.Struct({ key: Schema.String }),
    readOnly: false,
    handler: ({ key }) =>
      Effect.sync(() => {
        ran.push(key)
        return `value of ${key} is ${key.length * 7}`
      })
  })
  return { tool, ran }
}

export const recordingAgent = (
  script: ReadonlyArray<ScriptStep> | ScriptedLlm.Responder,
  options: {
    readonly tools: ReadonlyArray<ToolT>
    readonly llm?: ScriptedLlmOptions
    readonly agent?: Partial<AgentOptions>
    readonly interrupts?: InterruptsService
    readonly budget?: number
  }
) => {
  const scripted = ScriptedLlm.makeUnsafe(script, options.llm)
  const base = Layer.mergeAll(
    scripted.layer,
    Toolkit.layer(options.tools),
    options.interrupts ? Layer.succeed(Interrupts.Interrupts, options.interrupts) : Interrupts.layerMemory
  )
  const services = Layer.provideMerge(llmGuard(options.budget), Recorder.layer.pipe(Layer.provide(base)))
  const layer = ReactAgent.layer({ synthesis: "always", ...options.agent }).pipe(
    Layer.provideMerge(services),
    Layer.provide(Hooks.layerNoop),
    Layer.orDie
  )
  return { scripted, layer, agentOptions: { synthesis: "always", ...options.agent } as Record<string, unknown> }
}
