/**
 * The Vercel AI SDK (`ai@6`) running a scenario with `MockLanguageModelV3` (zero latency) and
 * `stopWhen: stepCountIs(steps + 1)`, in both flavours (bench/scenario.ts `Flavour`):
 *
 * - `engine` (generate): `generateText`, the mock's `doGenerate`;
 * - `streamEngine` (stream): `streamText`, the mock's `doStream` (a tool-call turn streams its
 *   calls whole, as `ScriptedLlm` does; the final answer streams word by word), `fullStream`
 *   consumed to its end, then the steps and the text awaited.
 *
 * The mock records every call in `doGenerateCalls` / `doStreamCalls`; the harness empties that
 * array on each call so the peer does not pay for recording (as our `record: false`).
 *
 * @since 0.1.0
 */
import { generateText, stepCountIs, streamText, tool } from "ai"
import { convertArrayToReadableStream, MockLanguageModelV3 } from "ai/test"
import { z } from "zod"
import type { Engine, Scenario } from "../scenario.js"
import { FINAL, FINAL_CHUNKS, QUERY, runTool, TOOL_DESCRIPTION, TOOL_NAME, toolArgs } from "../scenario.js"

/** A part of the mock's stream (the provider spec's type, read off the mock: `@ai-sdk/provider` is not our dependency). */
type LanguageModelV3StreamPart = Awaited<ReturnType<MockLanguageModelV3["doStream"]>>["stream"] extends
  ReadableStream<infer P> ? P : never

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined }
}

const toolsFor = (scenario: Scenario) => ({
  [TOOL_NAME]: tool({
    description: TOOL_DESCRIPTION,
    inputSchema: z.object({ index: z.number() }),
    execute: async (args: { index: number }) => runTool(scenario, args)
  })
})

const calls = (scenario: Scenario, step: number) =>
  Array.from({ length: scenario.calls }, (_, c) => ({
    type: "tool-call" as const,
    toolCallId: `call_${step}_${c}`,
    toolName: TOOL_NAME,
    input: JSON.stringify(toolArgs(step, c))
  }))

/** The model's reply at `step`, as stream parts. */
const streamParts = (scenario: Scenario, step: number): Array<LanguageModelV3StreamPart> => {
  const parts: Array<LanguageModelV3StreamPart> = [{ type: "stream-start", warnings: [] }]
  if (step < scenario.steps) {
    for (const part of calls(scenario, step)) parts.push(part)
    parts.push({ type: "finish", finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage })
    return parts
  }
  const id = `text_${step}`
  parts.push({ type: "text-start", id })
  for (const delta of FINAL_CHUNKS) parts.push({ type: "text-delta", id, delta })
  parts.push({ type: "text-end", id }, { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage })
  return parts
}

/** Non-streamed loop calls (`generateText`). @since 0.1.0 */
export const engine: Engine = {
  name: "Vercel AI SDK",
  prepare: async (scenario: Scenario) => {
    const tools = toolsFor(scenario)
    return async () => {
      let turn = 0
      const model = new MockLanguageModelV3({
        doGenerate: async () => {
          model.doGenerateCalls.length = 0
          const step = turn++
          if (step < scenario.steps) {
            return {
              content: calls(scenario, step),
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

/** Streamed loop calls (`streamText`, `fullStream` consumed). @since 0.1.0 */
export const streamEngine: Engine = {
  name: "Vercel AI SDK",
  prepare: async (scenario: Scenario) => {
    const tools = toolsFor(scenario)
    return async () => {
      let turn = 0
      const model = new MockLanguageModelV3({
        doStream: async () => {
          model.doStreamCalls.length = 0
          return { stream: convertArrayToReadableStream(streamParts(scenario, turn++)) }
        }
      })
      const result = streamText({
        model,
        tools,
        prompt: QUERY,
        stopWhen: stepCountIs(scenario.steps + 1),
        onError: () => {}
      })
      let errored: unknown = undefined
      for await (const part of result.fullStream) if (part.type === "error") errored = part.error
      if (errored !== undefined) throw errored instanceof Error ? errored : new Error(String(errored))
      let toolCalls = 0
      for (const s of await result.steps) toolCalls += s.toolResults.length
      return { answer: await result.text, toolCalls }
    }
  }
}
