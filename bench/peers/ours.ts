/**
 * Our engine running a scenario: `ReactAgent.layer(options)` over a `ScriptedLlm`
 * (`record: false`, zero latency), the scenario's tool, no hooks, the heuristic
 * context guard and in-memory interrupts, all built once into a `ManagedRuntime`;
 * each run is one `runCollect`.
 *
 * Fairness settings (the peers have no such features, so nothing they skip is
 * skipped by us either): the completion checklist is off (it would add an LLM
 * call the peers' script does not have); the context guard and the tool-result
 * budget are on, with budgets large enough never to truncate (the peers send
 * the whole history every step; so do we). Self-reflection and cycle detection
 * stay at their defaults.
 *
 * Two flavours (bench/scenario.ts `Flavour`), compared each with the peers'
 * calls of the same kind:
 *
 * - `engine` (generate): synthesis policy `always`: every loop call is a
 *   non-streamed `chat`; the answer-synthesis streaming call follows the loop
 *   (a fixed cost per run, which the peers do not have: it counts in our
 *   per-run time, and cancels out of the marginal figures);
 * - `streamEngine` (stream, our default): synthesis policy `auto`: every loop
 *   call is a `streamChat` consumed as a `Stream`, the final answer shown as it
 *   streams; no synthesis call.
 *
 * @since 0.1.0
 */
import {
  ContextGuard,
  Hooks,
  Interrupts,
  Llm as LlmModule,
  ReactAgent,
  ScriptedLlm,
  Tool,
  Toolkit
} from "effect-react-engine"
import type { AgentConfig } from "effect-react-engine"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import type { Engine, Scenario } from "../scenario.js"
import { FINAL, QUERY, runTool, TOOL_DESCRIPTION, TOOL_NAME, toolArgs } from "../scenario.js"

const { Llm } = LlmModule

/** Large enough that neither the guard nor the result budget ever cuts anything here. */
const HUGE_BUDGET = 100_000_000

/** Fixed usage per reply (as the peers' mocks report), so the fake never estimates the prompt. */
const USAGE = { prompt: 10, completion: 5 }

/** A scripted LLM whose script restarts with `reset()`. @since 0.1.0 */
export const resettableScript = (
  script: ReadonlyArray<ScriptedLlm.ScriptStep>,
  options?: ScriptedLlm.ScriptedLlmOptions
) => {
  let turn = 0
  const llm = ScriptedLlm.makeUnsafe(() => script[Math.min(turn++, script.length - 1)], { record: false, ...options })
  return {
    llm,
    reset: () => void (turn = 0),
    get turns() {
      return turn
    }
  }
}

/** The scenario's script: tool-call turns, the loop's final answer, the synthesis stream (policy `always` only). @since 0.1.0 */
export const scriptFor = (scenario: Scenario): Array<ScriptedLlm.ScriptStep> => {
  const script: Array<ScriptedLlm.ScriptStep> = []
  for (let step = 0; step < scenario.steps; step++) {
    script.push(ScriptedLlm.toolCalls(
      Array.from({ length: scenario.calls }, (_, c) => ({
        id: `call_${step}_${c}`,
        name: TOOL_NAME,
        arguments: toolArgs(step, c)
      })),
      { usage: USAGE }
    ))
  }
  script.push(ScriptedLlm.text(FINAL, { usage: USAGE }), ScriptedLlm.text(FINAL, { usage: USAGE }))
  return script
}

/** The layers our engine needs, around a given LLM and tools. @since 0.1.0 */
export const agentLayer = (
  llm: LlmModule.LlmService,
  tools: ReadonlyArray<Tool.Tool>,
  options: Partial<AgentConfig.AgentOptions> = {}
): Layer.Layer<ReactAgent.ReactAgent, ConfigError.ConfigError> =>
  ReactAgent.layer({ completionCheck: false, toolResultBudget: HUGE_BUDGET, maxIterations: 1000, ...options }).pipe(
    Layer.provide(Layer.mergeAll(
      Layer.succeed(Llm, llm),
      Toolkit.layer(tools),
      Hooks.layerNoop,
      ContextGuard.layer({ budget: HUGE_BUDGET }),
      Interrupts.layerMemory
    ))
  )

/** @since 0.1.0 */
export const lookupTool = (scenario: Scenario): Tool.Tool =>
  Tool.make({
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    parameters: Schema.Struct({ index: Schema.Number }),
    handler: (args) => Effect.sync(() => runTool(scenario, args))
  })

const oursWith = (synthesis: AgentConfig.SynthesisPolicy): Engine => ({
  name: "ours (ReactAgent)",
  prepare: async (scenario: Scenario) => {
    const scripted = resettableScript(scriptFor(scenario))
    const runtime = ManagedRuntime.make(agentLayer(scripted.llm.service, [lookupTool(scenario)], { synthesis }))
    const agent = await runtime.runPromise(ReactAgent.ReactAgent)
    return async () => {
      scripted.reset()
      const result = await runtime.runPromise(agent.runCollect({ query: QUERY }))
      if (result.error) throw new Error(`our engine failed: ${result.error.message}`)
      return { answer: result.answer, toolCalls: result.steps.length }
    }
  }
})

/** Non-streamed loop calls (synthesis policy `always`). @since 0.1.0 */
export const engine: Engine = oursWith("always")

/** Streamed loop calls (synthesis policy `auto`, the default). @since 0.1.0 */
export const streamEngine: Engine = oursWith("auto")
