/**
 * The Vercel AI SDK (`ai@6`) running a scenario: `generateText` with
 * `MockLanguageModelV3` (zero latency) and `stopWhen: stepCountIs(steps + 1)`.
 *
 * The mock records every call in `doGenerateCalls`; the harness empties that array
 * on each call so the peer does not pay for recording (as our `record: false`).
 *
 * @since 0.1.0
 */
import { generateText, stepCountIs, tool } from "ai"
import { MockLanguageModelV3 } from "ai/test"
import { z } from "zod"
import type { Engine, Scenario } from "../scenario.js"
import { FINAL, QUERY, runTool, TOOL_DESCRIPTION, TOOL_NAME, toolArgs } from "../scenario.js"

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined }
}

/** @since 0.1.0 */
export const engine: Engine = {
  name: "Vercel AI SDK",
  prepare: async (scenario: Scenario) => {
    const tools = {
      [TOOL_NAME]: tool({
        description: TOOL_DESCRIPTION,
        inputSchema: z.object({ index: z.number() }),
        execute: async (args: { index: number }) => runTool(scenario, args)
      })
    }
    return async () => {
      let turn = 0
      const model = new MockLanguageModelV3({
        doGenerate: async () => {
          model.doGenerateCalls.length = 0
          const step = turn++
          if (step < scenario.steps) {
            return {
              content: Array.from({ length: scenario.calls }, (_, c) => ({
                type: "tool-call" as const,
                toolCallId: `call_${step}_${c}`,
                toolName: TOOL_NAME,
                input: JSON.stringify(toolArgs(step, c))
              })),
              finishReason: { unified: "tool-calls" as const, raw: "tool_calls" },
              usage,
              warnings: []
            }
          }
          return {
            content: [{ type: "text" as const, text: FINAL }],
            finishReason: { unified: "stop" as const, raw: "stop" },
            usage,
            warnings: []
          }
        }
      })
      const result = await generateText({
        model,
        tools,
        prompt: QUERY,
        stopWhen: stepCountIs(scenario.steps + 1)
      })
      let toolCalls = 0
      for (const s of result.steps) toolCalls += s.toolResults.length
      return { answer: result.text, toolCalls }
    }
  }
}
