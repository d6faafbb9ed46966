/**
 * First-token forwarding: time from the scripted provider emitting its first
 * answer chunk to the `AnswerDelta` event reaching the consumer of `agent.run`.
 * The provider is the public `ScriptedLlm` wrapped so that the first `Content`
 * delta is stamped when it leaves the provider stream; chunks are 10 ms apart so
 * each one is a separate event.
 *
 * @since 0.1.0
 */
import { type Llm, ReactAgent, ScriptedLlm } from "effect-react-engine"
import * as Effect from "effect/Effect"
import * as ManagedRuntime from "effect/ManagedRuntime"
import * as Stream from "effect/Stream"
import { quantile } from "./harness.js"
import { agentLayer, lookupTool } from "./peers/ours.js"

/** @since 0.1.0 */
export interface FirstTokenFigures {
  readonly runs: number
  readonly p50Ms: number
  readonly p99Ms: number
  readonly maxMs: number
}

/** @since 0.1.0 */
export const run = async (runs = 40): Promise<FirstTokenFigures> => {
  let providerFirst = 0
  let turn = 0
  const scripted = ScriptedLlm.makeUnsafe((_r, _i, method) =>
    method === "chat"
      ? (turn++ === 0 ? ScriptedLlm.toolCall("lookup", { index: 1 }) : ScriptedLlm.text("The record is fine."))
      : ScriptedLlm.text("The record is fine.", {
        chunks: ["The ", "record ", "is ", "fine."],
        chunkDelay: "10 millis"
      }), { record: false })
  const llm: Llm.LlmService = {
    ...scripted.service,
    streamChat: (request) => {
      let first = true
      return Stream.tap(scripted.service.streamChat(request), (d) =>
        Effect.sync(() => {
          if (first && d._tag === "Content") {
            first = false
            providerFirst = performance.now()
          }
        }))
    }
  }
  const runtime = ManagedRuntime.make(agentLayer(llm, [lookupTool({ name: "x", steps: 1, calls: 1, resultChars: 0 })]))
  const agent = await runtime.runPromise(ReactAgent.ReactAgent)
  const latencies: Array<number> = []
  for (let i = 0; i < runs + 5; i++) {
    turn = 0
    providerFirst = 0
    let seen = false
    let latency = Number.NaN
    await runtime.runPromise(Stream.runForEach(agent.run({ query: "check the record" }), (event) =>
      Effect.sync(() => {
        if (!seen && event._tag === "AnswerDelta") {
          seen = true
          latency = performance.now() - providerFirst
        }
      })))
    if (!seen) throw new Error("no AnswerDelta reached the consumer")
    if (i >= 5) latencies.push(latency)
  }
  await runtime.dispose()
  return {
    runs,
    p50Ms: quantile(latencies, 0.5),
    p99Ms: quantile(latencies, 0.99),
    maxMs: Math.max(...latencies)
  }
}
