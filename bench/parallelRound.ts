/**
 * Parallel tool round: the model asks for 8 tools at once, each sleeping 50 ms.
 * The round's wall time is measured from the moment the model's reply is handed
 * to the engine to the moment the engine sends its next request (so it includes
 * the engine's own work around the round), divided by 50 ms. Same script for the
 * peers (their tools run concurrently too).
 *
 * @since 0.1.0
 */
import type { Model, ModelRequest, ModelResponse } from "@openai/agents-core"
import { Agent, Runner, tool as agentTool, Usage } from "@openai/agents-core"
import { generateText, stepCountIs, tool as aiTool } from "ai"
import { MockLanguageModelV3 } from "ai/test"
import { ReactAgent, ScriptedLlm, Tool } from "effect-react-engine"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Schema from "effect/Schema"
import { z } from "zod"
import { median } from "./harness.js"
import { agentLayer } from "./peers/ours.js"

/** @since 0.1.0 */
export const TOOLS = 8
/** @since 0.1.0 */
export const SLEEP_MS = 50

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms))
const names = Array.from({ length: TOOLS }, (_, i) => `sleeper_${i}`)

/** Times between the first and second model request of each run. */
interface Clock {
  first: number
  second: number
  calls: number
}
const mark = (c: Clock) => {
  const t = performance.now()
  if (c.calls === 0) c.first = t
  else if (c.calls === 1) c.second = t
  c.calls++
}

const ours = async (runs: number): Promise<Array<number>> => {
  const clock: Clock = { first: 0, second: 0, calls: 0 }
  const script: Array<ScriptedLlm.ScriptStep> = [
    ScriptedLlm.toolCalls(names.map((name, i) => ({ id: `c${i}`, name, arguments: {} }))),
    ScriptedLlm.text("done"),
    ScriptedLlm.text("done")
  ]
  let turn = 0
  // the first two requests are the loop's (streamed under synthesis auto, plain chat under always)
  const llm = ScriptedLlm.makeUnsafe(() => {
    mark(clock)
    return script[Math.min(turn++, 2)]
  }, { record: false })
  const tools = names.map((name) =>
    Tool.make({
      name,
      description: "Sleeps 50 ms.",
      parameters: Schema.Struct({}),
      handler: () => Effect.as(Effect.sleep(SLEEP_MS), "ok")
    })
  )
  const runtime = ManagedRuntime.make(agentLayer(llm.service, tools))
  const agent = await runtime.runPromise(ReactAgent.ReactAgent)
  const out: Array<number> = []
  for (let i = 0; i < runs + 1; i++) {
    turn = 0
    clock.calls = 0
    const r = await runtime.runPromise(agent.runCollect({ query: "go" }))
    if (r.steps.length !== TOOLS) throw new Error(`ours: expected ${TOOLS} steps, got ${r.steps.length}`)
    if (i > 0) out.push(clock.second - clock.first)
  }
  await runtime.dispose()
  return out
}

const aiSdk = async (runs: number): Promise<Array<number>> => {
  const tools = Object.fromEntries(names.map((name) => [
    name,
    aiTool({
      description: "Sleeps 50 ms.",
      inputSchema: z.object({}),
      execute: async () => {
        await sleep(SLEEP_MS)
        return "ok"
      }
    })
  ]))
  const out: Array<number> = []
  for (let i = 0; i < runs + 1; i++) {
    const clock: Clock = { first: 0, second: 0, calls: 0 }
    const usage = {
      inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: 1, text: 1, reasoning: undefined }
    }
    const model = new MockLanguageModelV3({
      doGenerate: async () => {
        model.doGenerateCalls.length = 0
        mark(clock)
        return clock.calls === 1
          ? {
            content: names.map((name, k) => ({
              type: "tool-call" as const,
              toolCallId: `c${k}`,
              toolName: name,
              input: "{}"
            })),
            finishReason: { unified: "tool-calls" as const, raw: "tool_calls" },
            usage,
            warnings: []
          }
          : {
            content: [{ type: "text" as const, text: "done" }],
            finishReason: { unified: "stop" as const, raw: "stop" },
            usage,
            warnings: []
          }
      }
    })
    await generateText({ model, tools, prompt: "go", stopWhen: stepCountIs(3) })
    if (i > 0) out.push(clock.second - clock.first)
  }
  return out
}

class RoundModel implements Model {
  constructor(private readonly clock: Clock) {}
  async getResponse(_r: ModelRequest): Promise<ModelResponse> {
    mark(this.clock)
    const usage = new Usage({ requests: 1, inputTokens: 1, outputTokens: 1, totalTokens: 2 })
    if (this.clock.calls === 1) {
      return {
        usage,
        output: names.map((name, k) => ({
          type: "function_call" as const,
          callId: `c${k}`,
          name,
          status: "completed" as const,
          arguments: "{}"
        }))
      }
    }
    return {
      usage,
      output: [{
        type: "message" as const,
        role: "assistant" as const,
        status: "completed" as const,
        content: [{ type: "output_text" as const, text: "done" }]
      }]
    }
  }
  async *getStreamedResponse(): AsyncIterable<never> {
    throw new Error("not used")
  }
}

const agentsSdk = async (runs: number): Promise<Array<number>> => {
  const tools = names.map((name) =>
    agentTool({
      name,
      description: "Sleeps 50 ms.",
      parameters: z.object({}),
      execute: async () => {
        await sleep(SLEEP_MS)
        return "ok"
      }
    })
  )
  const runner = new Runner({ tracingDisabled: true })
  const out: Array<number> = []
  for (let i = 0; i < runs + 1; i++) {
    const clock: Clock = { first: 0, second: 0, calls: 0 }
    const agent = new Agent({ name: "bench", instructions: "go", model: new RoundModel(clock), tools })
    await runner.run(agent, "go", { maxTurns: 5 })
    if (i > 0) out.push(clock.second - clock.first)
  }
  return out
}

/** @since 0.1.0 */
export interface RoundFigures {
  readonly engine: string
  readonly medianMs: number
  readonly ratio: number
  readonly error?: string
}

/** The floor on this machine: 8 bare `setTimeout(50)` awaited together (timer overshoot under load). */
const baseline = async (runs: number): Promise<Array<number>> => {
  const out: Array<number> = []
  for (let i = 0; i < runs; i++) {
    const t = performance.now()
    await Promise.all(names.map(() => sleep(SLEEP_MS)))
    out.push(performance.now() - t)
  }
  return out
}

/** @since 0.1.0 */
export const run = async (runs = 10): Promise<Array<RoundFigures>> => {
  const out: Array<RoundFigures> = []
  for (
    const [engine, fn] of [["baseline: 8 × setTimeout(50) in Promise.all", baseline], ["ours (ReactAgent)", ours], [
      "Vercel AI SDK",
      aiSdk
    ], ["OpenAI Agents SDK", agentsSdk]] as const
  ) {
    try {
      const ms = median(await fn(runs))
      out.push({ engine, medianMs: ms, ratio: ms / SLEEP_MS })
    } catch (e) {
      out.push({ engine, medianMs: Number.NaN, ratio: Number.NaN, error: e instanceof Error ? e.message : String(e) })
    }
  }
  return out
}
