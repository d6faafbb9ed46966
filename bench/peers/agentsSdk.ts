/**
 * The OpenAI Agents SDK (`@openai/agents-core@0.14`) running a scenario: an
 * `Agent` with a scripted `Model` (zero latency), run by a `Runner` with tracing
 * disabled and `maxTurns` above the scenario's length.
 *
 * @since 0.1.0
 */
import type { Model, ModelRequest, ModelResponse } from "@openai/agents-core"
import { Agent, Runner, setTracingDisabled, tool, Usage } from "@openai/agents-core"
import { z } from "zod"
import type { Engine, Scenario } from "../scenario.js"
import { FINAL, QUERY, runTool, TOOL_DESCRIPTION, TOOL_NAME, toolArgs } from "../scenario.js"

setTracingDisabled(true)

class ScriptedModel implements Model {
  private turn = 0
  constructor(private readonly scenario: Scenario) {}
  async getResponse(_request: ModelRequest): Promise<ModelResponse> {
    const step = this.turn++
    const usage = new Usage({ requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 })
    if (step < this.scenario.steps) {
      return {
        usage,
        output: Array.from({ length: this.scenario.calls }, (_, c) => ({
          type: "function_call" as const,
          id: `fc_${step}_${c}`,
          callId: `call_${step}_${c}`,
          name: TOOL_NAME,
          status: "completed" as const,
          arguments: JSON.stringify(toolArgs(step, c))
        }))
      }
    }
    return {
      usage,
      output: [{
        type: "message" as const,
        id: `msg_${step}`,
        role: "assistant" as const,
        status: "completed" as const,
        content: [{ type: "output_text" as const, text: FINAL }]
      }]
    }
  }
  // eslint-disable-next-line require-yield
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("not used by the benchmark")
  }
}

/** @since 0.1.0 */
export const engine: Engine = {
  name: "OpenAI Agents SDK",
  prepare: async (scenario: Scenario) => {
    const lookup = tool({
      name: TOOL_NAME,
      description: TOOL_DESCRIPTION,
      parameters: z.object({ index: z.number() }),
      execute: async (args) => runTool(scenario, args)
    })
    const runner = new Runner({ tracingDisabled: true })
    return async () => {
      const agent = new Agent({ name: "bench", instructions: "You look up records.", model: new ScriptedModel(scenario), tools: [lookup] })
      const result = await runner.run(agent, QUERY, { maxTurns: scenario.steps + 5 })
      let toolCalls = 0
      for (const item of result.newItems) if (item.type === "tool_call_output_item") toolCalls++
      return { answer: String(result.finalOutput ?? ""), toolCalls }
    }
  }
}
