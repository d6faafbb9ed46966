/**
 * Our engine in the latency benchmark: the public API as the application wires it
 * (`App.layerMemory`): `OpenAiLlm` (the real `openai` SDK) pointed at the fake provider,
 * `Tools`, no hooks, the default `ContextGuard.layer`, `Interrupts`, and
 * `ReactAgent.layer` at its defaults. Time to first answer token = the first
 * `AnswerDelta` event the consumer of `agent.run` receives.
 *
 * Synthesis policy: each policy (`always`: non-streamed loop calls, then a
 * streamed synthesis call; `auto`: streamed loop calls, the last one is the
 * answer) is passed explicitly and measured as its own row.
 *
 * @since 0.1.0
 */
import { AgentConfig, ContextGuard, Hooks, Interrupts, OpenAiLlm, ReactAgent, Toolkit } from "effect-react-engine"
import type { Tool } from "effect-react-engine"
import type * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Stream from "effect/Stream"
import type { LatencyEngine } from "./engine.js"

/** @since 0.1.0 */
export type SynthesisPolicy = "always" | "auto"

/**
 * Whether this build's `AgentOptions` has the `synthesis` option: a
 * `synthesis` default in `AgentConfig.defaults`, or `BENCH_LATENCY_SYNTHESIS_OPTION=1`
 * (for an option without a default there).
 *
 * @since 0.1.0
 */
export const synthesisOptionSupported: boolean = process.env.BENCH_LATENCY_SYNTHESIS_OPTION === "1" ||
  Object.prototype.hasOwnProperty.call(AgentConfig.defaults, "synthesis")

/**
 * THE construction of our agent for this benchmark — the one place to adapt when
 * layer or option names change. `synthesis` is passed only when the option exists
 * (today's engine has no such option and behaves as `always`).
 *
 * @since 0.1.0
 */
export const ourAgentLayer = (
  baseURL: string,
  tools: ReadonlyArray<Tool.Tool>,
  synthesis: SynthesisPolicy
): Layer.Layer<ReactAgent.ReactAgent, ConfigError.ConfigError> => {
  const llm = OpenAiLlm.layer({ baseURL, apiKey: "bench", model: "fake-model" })
  const options = (synthesisOptionSupported ? { synthesis } : {}) as Partial<AgentConfig.AgentOptions>
  const services = Layer.mergeAll(Toolkit.layer(tools), Hooks.layerNoop, ContextGuard.layer(), Interrupts.layerMemory)
    .pipe(
      Layer.provideMerge(llm)
    )
  return ReactAgent.layer(options).pipe(Layer.provide(services))
}

/** An event retracting text shown as answer (`answer {status:"reset"}`), whatever its tag. */
const isAnswerReset = (event: object): boolean => (event as { status?: unknown }).status === "reset"

/** @since 0.1.0 */
export const engine = (synthesis: SynthesisPolicy): LatencyEngine => ({
  name: `ours (synthesis: ${synthesis})`,
  prepare: async (scenario, baseURL) => {
    const runtime = ManagedRuntime.make(ourAgentLayer(baseURL, scenario.tools, synthesis))
    const agent = await runtime.runPromise(ReactAgent.ReactAgent)
    return {
      run: async (marks) => {
        let answer = ""
        let toolCalls = 0
        let failed: string | undefined
        let usage: { readonly completion_tokens: number; readonly llm_calls: number } | undefined
        await runtime.runPromise(Stream.runForEach(agent.run({ query: scenario.query }), (event) =>
          Effect.sync(() => {
            if (event._tag === "AnswerDelta") {
              answer += event.content
              marks.answerToken()
            } else if (isAnswerReset(event)) {
              answer = ""
              marks.answerReset()
            } else if (event._tag === "ToolDone") {
              toolCalls++
            } else if (event._tag === "RunFailed") {
              failed = event.message
            } else if (event._tag === "Done") {
              usage = event.usage
            }
          })))
        if (failed !== undefined) throw new Error(`our run failed: ${failed}`)
        return {
          answer,
          toolCalls,
          reportedOutputTokens: usage?.completion_tokens,
          reportedCalls: usage?.llm_calls
        }
      },
      close: () => runtime.dispose()
    }
  }
})
