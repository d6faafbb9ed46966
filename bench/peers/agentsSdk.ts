/**
 * The OpenAI Agents SDK (`@openai/agents-core@0.14`) running a scenario: an `Agent` with a
 * scripted `Model` (zero latency), run by a `Runner` with tracing disabled and `maxTurns` above
 * the scenario's length, in both flavours (bench/scenario.ts `Flavour`):
 *
 * - `engine` (generate): `runner.run(agent, input)`, the model's `getResponse`;
 * - `streamEngine` (stream): `runner.run(agent, input, { stream: true })`, the model's
 *   `getStreamedResponse` (`response_started`, the final answer's text word by word as
 *   `output_text_delta`, then `response_done` with the whole reply, as the SDK's OpenAI models
 *   end a streamed response); the run's event stream consumed to its end, then `completed` awaited.
 *
 * @since 0.1.0
 */
import type { Model, ModelRequest, ModelResponse, protocol } from "@openai/agents-core"
import { Agent, Runner, setTracingDisabled, tool, Usage } from "@openai/agents-core"
import { z } from "zod"
import type { Engine, Scenario } from "../scenario.js"
import { FINAL, FINAL_CHUNKS, QUERY, runTool, TOOL_DESCRIPTION, TOOL_NAME, toolArgs } from "../scenario.js"

setTracingDisabled(true)

const output = (scenario: Scenario, step: number) =>
  step < scenario.steps
    ? Array.from({ length: scenario.calls }, (_, c) => ({
      type: "function_call" as const,
      id: `fc_${step}_${c}`,
      callId: `call_${step}_${c}`,
      name: TOOL_NAME,
      status: "completed" as const,
      arguments: JSON.stringify(toolArgs(step, c))
    }))
    : [{
      type: "message" as const,
      id: `msg_${step}`,
      role: "assistant" as const,
      status: "completed" as const,
      content: [{ type: "output_text" as const, text: FINAL }]
    }]

class ScriptedModel implements Model {
  private turn = 0
  constructor(private readonly scenario: Scenario) {}
  async getResponse(_request: ModelRequest): Promise<ModelResponse> {
    const step = this.turn++
    return {
      usage: new Usage({ requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 }),
      output: output(this.scenario, step)
    }
  }
  async *getStreamedResponse(_request: ModelRequest): AsyncIterable<protocol.StreamEvent> {
    const step = this.turn++
    yield { type: "response_started" }
    if (step >= this.scenario.steps) { for (const delta of FINAL_CHUNKS) yield { type: "output_text_delta", delta } }
    yield {
      type: "response_done",
      response: {
        id: `resp_${step}`,
        usage: { requests: 1, inputTokens: 10, outputTokens: 5, totalTokens: 15 },
        output: output(this.scenario, step)
      }
    }
  }
}

const lookupFor = (scenario: Scenario) =>
  tool({
    name: TOOL_NAME,
    description: TOOL_DESCRIPTION,
    parameters: z.object({ index: z.number() }),
    execute: async (args) => runTool(scenario, args)
  })

const agentFor = (scenario: Scenario, lookup: ReturnType<typeof lookupFor>) =>
  new Agent({
    name: "bench",
    instructions: "You look up records.",
    model: new ScriptedModel(scenario),
    tools: [lookup]
  })

const toolCallsOf = (items: ReadonlyArray<{ readonly type: string }>) => {
  let toolCalls = 0
  for (const item of items) if (item.type === "tool_call_output_item") toolCalls++
  return toolCalls
}

/** Non-streamed loop calls (`run`). @since 0.1.0 */
export const engine: Engine = {
  name: "OpenAI Agents SDK",
  prepare: async (scenario: Scenario) => {
    const lookup = lookupFor(scenario)
    const runner = new Runner({ tracingDisabled: true })
    return async () => {
      const result = await runner.run(agentFor(scenario, lookup), QUERY, { maxTurns: scenario.steps + 5 })
      return { answer: String(result.finalOutput ?? ""), toolCalls: toolCallsOf(result.newItems) }
    }
  }
}

/** Streamed loop calls (`run(…, { stream: true })`, the event stream consumed). @since 0.1.0 */
export const streamEngine: Engine = {
  name: "OpenAI Agents SDK",
  prepare: async (scenario: Scenario) => {
    const lookup = lookupFor(scenario)
    const runner = new Runner({ tracingDisabled: true })
    return async () => {
      const result = await runner.run(agentFor(scenario, lookup), QUERY, { maxTurns: scenario.steps + 5, stream: true })
      for await (const _event of result) { /* consumed in full, as a client forwarding it would */ }
      await result.completed
      if (result.error !== null && result.error !== undefined) throw result.error
      return { answer: String(result.finalOutput ?? ""), toolCalls: toolCallsOf(result.newItems) }
    }
  }
}
