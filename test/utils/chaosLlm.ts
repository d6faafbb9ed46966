/**
 * A seeded chaos LLM for fault tests: built on the public `ScriptedLlm` with a
 * responder that, call by call, draws from a seeded PRNG one of
 *
 * - a provider failure: 429 (`RateLimited`), 500 (`Server`), `Timeout`,
 *   `Connection`, or a non-retryable `BadRequest`;
 * - garbage: invalid JSON tool arguments, non-object arguments, unknown tool names,
 *   empty replies, random text (also unparseable in JSON mode), lone surrogates;
 * - a valid tool call (one or several in native mode) or a final answer;
 * - for streaming calls: a stream that fails before its first token, a stream cut
 *   after some chunks (truncated), or a normal stream.
 *
 * Every request it receives is checked for the provider protocol: each
 * assistant message with `tool_calls` is immediately followed by exactly one `tool`
 * message per call, in request order; no `tool` message without its call. Problems
 * are collected in `violations` (what a real provider would reject with a 400).
 *
 * Same seed, same behaviour: a failing seed reproduces.
 */
import type * as Layer from "effect/Layer"
import type { ChatRequest, Llm, LlmErrorReason } from "../../src/Llm.js"
import type { ChatMessage } from "../../src/Message.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"

/** A small, fast, seedable PRNG (mulberry32). */
export const prng = (seed: number): () => number => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** Relative weights of what a `chat` call does. */
export interface ChaosWeights {
  readonly rateLimited: number
  readonly server: number
  readonly timeout: number
  readonly connection: number
  readonly badRequest: number
  readonly garbage: number
  readonly toolCall: number
  readonly final: number
}

/** @since 0.1.0 */
export const defaultWeights: ChaosWeights = {
  rateLimited: 1,
  server: 1,
  timeout: 1,
  connection: 0.5,
  badRequest: 0.3,
  garbage: 2,
  toolCall: 5,
  final: 1
}

export interface ChaosOptions {
  readonly seed: number
  /** Tool names the model may call (an unknown name is one of the garbage cases). */
  readonly tools: ReadonlyArray<string>
  /** The protocol the replies follow (default native). */
  readonly mode?: "native" | "json"
  readonly weights?: Partial<ChaosWeights>
  /** Probability that a streaming call fails (half before the first token, half midway). Default 0.5. */
  readonly streamFailure?: number
  /** Arguments a valid call of a tool gets (default `{}`). */
  readonly argsFor?: (tool: string, random: () => number) => Record<string, unknown>
}

export interface ChaosStats {
  calls: number
  streamCalls: number
  failures: number
  garbage: number
  toolCalls: number
  finals: number
  truncatedStreams: number
}

export interface ChaosLlm {
  readonly layer: Layer.Layer<Llm>
  readonly scripted: ScriptedLlm.ScriptedLlm
  /** Protocol violations seen in requests (empty when the engine behaved). */
  readonly violations: ReadonlyArray<string>
  readonly stats: ChaosStats
}

/**
 * Protocol problems in a message list: unpaired or misplaced tool calls/results.
 * Empty when the list is valid for an OpenAI-compatible provider.
 */
export const protocolViolations = (messages: ReadonlyArray<ChatMessage>): Array<string> => {
  const out: Array<string> = []
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    if (m.role === "assistant" && m.tool_calls && m.tool_calls.length > 0) {
      const ids = m.tool_calls.map((c) => c.id)
      for (let k = 0; k < ids.length; k++) {
        const next = messages[i + 1 + k]
        if (next === undefined || next.role !== "tool") {
          out.push(`message ${i}: tool call ${ids[k]} has no tool message right after its assistant message`)
          break
        }
        if (next.tool_call_id !== ids[k]) {
          out.push(`message ${i + 1 + k}: expected the tool message of ${ids[k]}, got ${next.tool_call_id}`)
        }
      }
      i += ids.length
      continue
    }
    if (m.role === "tool") out.push(`message ${i}: tool message ${m.tool_call_id} without a preceding tool call`)
  }
  return out
}

const GARBAGE_TEXT = [
  "{\"type\": \"tool_call\", \"tool_name\": ",
  "<html><body>502 Bad Gateway</body></html>",
  "\uD800 lone surrogate \uDFFF",
  "null",
  "[1, 2, 3]",
  "```json\n{\"type\":\"final_answer\"\n```",
  "\u0000\u0001\u0002 binary noise",
  ""
]

const pick = <A>(random: () => number, xs: ReadonlyArray<A>): A => xs[Math.floor(random() * xs.length)]

const choose = (random: () => number, weights: ChaosWeights): keyof ChaosWeights => {
  const entries = Object.entries(weights) as Array<[keyof ChaosWeights, number]>
  const total = entries.reduce((s, [, w]) => s + w, 0)
  let r = random() * total
  for (const [k, w] of entries) {
    r -= w
    if (r < 0) return k
  }
  return "final"
}

const failureOf: Partial<Record<keyof ChaosWeights, LlmErrorReason>> = {
  rateLimited: "RateLimited",
  server: "Server",
  timeout: "Timeout",
  connection: "Connection",
  badRequest: "BadRequest"
}

/** Builds a chaos LLM. */
export const make = (options: ChaosOptions): ChaosLlm => {
  const random = prng(options.seed)
  const weights: ChaosWeights = { ...defaultWeights, ...options.weights }
  const mode = options.mode ?? "native"
  const streamFailure = options.streamFailure ?? 0.5
  const argsFor = options.argsFor ?? (() => ({}))
  const violations: Array<string> = []
  const stats: ChaosStats = {
    calls: 0,
    streamCalls: 0,
    failures: 0,
    garbage: 0,
    toolCalls: 0,
    finals: 0,
    truncatedStreams: 0
  }
  let callId = 0

  const check = (request: ChatRequest, index: number) => {
    for (const v of protocolViolations(request.messages)) violations.push(`request ${index}: ${v}`)
  }

  const validCall = (): ScriptedLlm.ScriptedToolCall => {
    const name = pick(random, options.tools)
    return { id: `chaos_${++callId}`, name, arguments: argsFor(name, random) }
  }

  const garbage = (): ScriptedLlm.ScriptedReply => {
    stats.garbage++
    if (mode === "json") return ScriptedLlm.text(pick(random, GARBAGE_TEXT))
    switch (Math.floor(random() * 5)) {
      case 0:
        return ScriptedLlm.toolCalls([{
          id: `chaos_${++callId}`,
          name: pick(random, options.tools),
          arguments: "{\"index\": "
        }])
      case 1:
        return ScriptedLlm.toolCalls([{
          id: `chaos_${++callId}`,
          name: pick(random, options.tools),
          arguments: "[1,2]"
        }])
      case 2:
        return ScriptedLlm.toolCalls([validCall(), { id: `chaos_${++callId}`, name: "no_such_tool", arguments: {} }])
      case 3:
        return ScriptedLlm.text("")
      default:
        return ScriptedLlm.text(pick(random, GARBAGE_TEXT))
    }
  }

  const chat = (): ScriptedLlm.ScriptStep => {
    const kind = choose(random, weights)
    const reason = failureOf[kind]
    if (reason !== undefined) {
      stats.failures++
      return ScriptedLlm.fail(reason, `chaos ${reason}`)
    }
    if (kind === "garbage") return garbage()
    if (kind === "final") {
      stats.finals++
      return mode === "json" ? ScriptedLlm.jsonFinal("chaos final answer") : ScriptedLlm.text("chaos final answer")
    }
    stats.toolCalls++
    if (mode === "json") {
      const call = validCall()
      return ScriptedLlm.jsonToolCall(call.name, call.arguments as Record<string, unknown>)
    }
    const n = 1 + Math.floor(random() * 3)
    return ScriptedLlm.toolCalls(Array.from({ length: n }, validCall))
  }

  const stream = (): ScriptedLlm.ScriptStep => {
    const content = "The answer, streamed in several chunks, " + "word ".repeat(Math.floor(random() * 20))
    const r = random()
    if (r < streamFailure / 2) {
      stats.failures++
      return ScriptedLlm.fail(
        pick(random, ["Server", "RateLimited", "Timeout", "Connection"] as const),
        "chaos stream open failure"
      )
    }
    if (r < streamFailure) {
      stats.truncatedStreams++
      return ScriptedLlm.text(content, {
        failAfterChunks: {
          count: 1 + Math.floor(random() * 5),
          reason: pick(random, ["Server", "Connection", "Decode"] as const)
        }
      })
    }
    return ScriptedLlm.text(content)
  }

  const scripted = ScriptedLlm.makeUnsafe((request, index, method) => {
    check(request, index)
    if (method === "stream") {
      stats.streamCalls++
      return stream()
    }
    stats.calls++
    return chat()
  }, { record: false, model: "chaos", abilities: mode === "json" ? { toolCall: false } : {} })

  return { layer: scripted.layer, scripted, violations, stats }
}
