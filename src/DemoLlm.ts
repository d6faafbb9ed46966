/**
 * The offline demo model: a deterministic, rule-based `LlmService` (model name
 * `offline-demo`) so that the server and the CLI work end to end with no LLM
 * configured, exercising the real engine and the built-in tools.
 *
 * - Tool loop (native function calling or the JSON protocol): arithmetic in the
 *   question (or "calculate"/"compute") → `calculator`; a time/date question
 *   (optionally "in <city or IANA zone>") → `current_time`; both → both (in
 *   parallel in native mode); after the results, a final answer built from them.
 *   Anything else: an explanation that this is the offline demo, the tools the
 *   agent has (every tool its request offers or can load, grouped by MCP
 *   server) and how to configure a real model (`LLM_BASE_URL`, `LLM_API_KEY`,
 *   `LLM_MODEL`), in Chinese when the question is.
 * - `[USER INTERRUPT]` messages are acknowledged and their question answered too.
 * - DAG mode (internal/demoLlm/dag.ts): the planner gets one parallel step per
 *   part of the goal the rules know (`calc`, `time`; else one step with the
 *   goal as its task), each step's loop works on its own task with the rules
 *   above, the analyzer and the answer read the steps' results; the `auto`
 *   router picks `dag` for a query with two or more such parts.
 * - Other structured calls (forced `tool_choice`, or a JSON Schema in the system
 *   prompt) get a valid object; compaction calls get a short summary.
 * - `streamChat` (answer synthesis) reads the question and the tool results from
 *   the trace and streams the answer word by word (15 ms per chunk by default).
 * - Usage is estimated at 4 characters per token.
 *
 * @since 0.1.0
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as conv from "./internal/demoLlm/conversation.js"
import { dagCall } from "./internal/demoLlm/dag.js"
import { compose, type PlannedCall } from "./internal/demoLlm/rules.js"
import type { Abilities, ChatDelta, ChatRequest, ChatResponse, LlmService, ResponseToolCall } from "./Llm.js"
import { defaultAbilities, independentCalls, Llm } from "./Llm.js"
import { textOf } from "./Message.js"
import * as Usage from "./Usage.js"

/**
 * The demo model's name.
 *
 * @since 0.1.0
 * @category constants
 */
export const MODEL_NAME = "offline-demo"

/**
 * @since 0.1.0
 * @category constants
 */
export const abilities: Abilities = defaultAbilities

/**
 * @since 0.1.0
 * @category models
 */
export interface DemoLlmOptions {
  /** Delay between streamed chunks (default 15 ms) so UIs visibly stream. */
  readonly chunkDelay?: Duration.DurationInput
  /** Simulated latency of each `chat` call (default 150 ms). */
  readonly thinkDelay?: Duration.DurationInput
}

const estimateTokens = (text: string): number => Math.ceil(text.length / 4)

const promptTokens = (request: ChatRequest): number => {
  let chars = 0
  for (const m of request.messages) {
    chars += textOf(m.content).length
    if (m.role === "assistant") { for (const c of m.tool_calls ?? []) chars += c.function.arguments.length }
  }
  for (const t of request.tools ?? []) chars += JSON.stringify(t).length
  return Math.ceil(chars / 4)
}

/** A fresh tool-call id, as a provider gives one per call (no state shared between runs or layers). */
const callId = (): string => `demo_call_${crypto.randomUUID().slice(0, 12)}`

const reply = (
  request: ChatRequest,
  content: string,
  calls: ReadonlyArray<PlannedCall> = [],
  reasoning = ""
): ChatResponse => {
  const toolCalls: Array<ResponseToolCall> = calls.map((c) => {
    const args = JSON.stringify(c.args)
    return { id: callId(), name: c.tool, arguments: args, parsed: Either.right(c.args) }
  })
  const completion = estimateTokens(content + toolCalls.map((c) => c.arguments).join("") + reasoning)
  return {
    content,
    ...(reasoning ? { reasoning } : {}),
    toolCalls,
    finishReason: toolCalls.length > 0 ? "tool_calls" : "stop",
    usage: Usage.make(promptTokens(request), completion)
  }
}

const why = (calls: ReadonlyArray<PlannedCall>): string =>
  calls.map((c) =>
    c.tool === "calculator"
      ? `The question contains arithmetic: computing ${String(c.args.expression)} with the calculator.`
      : `The question asks for the time: reading the clock for ${String(c.args.timezone)}.`
  ).join(" ")

/** The reply to a DAG-mode call: the structured value as the forced function's arguments or as JSON text. */
const dagReply = (request: ChatRequest, dag: NonNullable<ReturnType<typeof dagCall>>): ChatResponse => {
  if (dag._tag === "Answer") return reply(request, dag.text)
  const forced = typeof request.toolChoice === "object" && request.toolChoice.type === "function"
  if (!forced) return reply(request, JSON.stringify(dag.value))
  const args = dag.value as Record<string, unknown>
  const call: ResponseToolCall = {
    id: callId(),
    name: dag.name,
    arguments: JSON.stringify(args),
    parsed: Either.right(args)
  }
  return { ...reply(request, ""), toolCalls: [call], finishReason: "tool_calls" }
}

/**
 * The demo's reply to one request (pure apart from call ids).
 *
 * @since 0.1.0
 * @category utils
 */
export const respond = (request: ChatRequest): ChatResponse => {
  const dag = dagCall(request)
  if (dag !== undefined) return dagReply(request, dag)
  const kind = conv.classify(request)
  switch (kind._tag) {
    case "Forced": {
      const value = conv.sampleFromSchema(kind.schema, conv.lastUserText(request.messages))
      const args = (value !== null && typeof value === "object" ? value : {}) as Record<string, unknown>
      const call: ResponseToolCall = {
        id: callId(),
        name: kind.name,
        arguments: JSON.stringify(args),
        parsed: Either.right(args)
      }
      return { ...reply(request, ""), toolCalls: [call], finishReason: "tool_calls" }
    }
    case "JsonSchema":
      return reply(request, JSON.stringify(conv.sampleFromSchema(kind.schema, conv.lastUserText(request.messages))))
    case "Synthesis": {
      const trace = conv.readTrace(conv.lastUserText(request.messages))
      // no tool results: the loop's draft already says what the demo can say (it saw the tools)
      if (trace.observed.length === 0 && trace.draft !== undefined) return reply(request, trace.draft)
      return reply(request, compose(trace.question, trace.observed, trace.interrupt))
    }
    case "Compaction": {
      const text = conv.lastUserText(request.messages).replace(/^Summari[sz]e this conversation:\s*/i, "")
      const flat = text.replace(/<\/?conversation>/g, "").replace(/\s+/g, " ").trim()
      return reply(
        request,
        `Summary (offline demo model, abridged): ${flat.length > 600 ? flat.slice(0, 600) + "…" : flat}`
      )
    }
    case "Loop": {
      const view = conv.readLoop(request.messages)
      const next = conv.remaining(view, conv.availability(request, kind.json))
      const tools = conv.toolNames(request, kind.json)
      if (kind.json) {
        const first = next[0]
        return reply(
          request,
          first
            ? JSON.stringify({
              type: "tool_call",
              reasoning: why([first]),
              tool_name: first.tool,
              tool_args: first.args
            })
            : JSON.stringify({
              type: "final_answer",
              reasoning: "I have what I need to answer.",
              answer: compose(view.question, view.observed, view.interrupt, tools)
            })
        )
      }
      return next.length > 0
        ? reply(request, "", next, why(next))
        : reply(request, compose(view.question, view.observed, view.interrupt, tools))
    }
  }
}

const chunksOf = (text: string): Array<string> => text.match(/\S+\s*|\s+/g) ?? []

/**
 * Builds the demo model.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe = (options: DemoLlmOptions = {}): LlmService => {
  const chunkDelay = Duration.decode(options.chunkDelay ?? "15 millis")
  const thinkDelay = Duration.decode(options.thinkDelay ?? "150 millis")
  const pause = (d: Duration.Duration) => (Duration.toMillis(d) > 0 ? Effect.sleep(d) : Effect.void)
  return {
    model: MODEL_NAME,
    abilities,
    contextSize: 32_000,
    maxOutputTokens: 4_000,
    oneCall: independentCalls,
    chat: (request) => Effect.zipRight(pause(thinkDelay), Effect.sync(() => respond(request))),
    streamChat: (request) =>
      Stream.suspend(() => {
        const response = respond(request)
        const head: Array<ChatDelta> = response.reasoning ? [{ _tag: "Reasoning", text: response.reasoning }] : []
        const content = Stream.fromIterable(chunksOf(response.content)).pipe(
          Stream.tap(() => pause(chunkDelay)),
          Stream.map((text): ChatDelta => ({ _tag: "Content", text }))
        )
        const tail: Array<ChatDelta> = [
          ...response.toolCalls.map((c, index): ChatDelta => ({
            _tag: "ToolCall",
            index,
            id: c.id,
            name: c.name,
            arguments: c.arguments
          })),
          { _tag: "Usage", usage: response.usage },
          { _tag: "Finish", reason: response.finishReason }
        ]
        return Stream.concat(Stream.concat(Stream.fromIterable(head), content), Stream.fromIterable(tail))
      })
  }
}

/**
 * The demo model, built when the effect runs.
 *
 * @since 0.1.0
 * @category constructors
 */
export const make = (options: DemoLlmOptions = {}): Effect.Effect<LlmService> => Effect.sync(() => makeUnsafe(options))

/**
 * The demo model as the `Llm` (custom delays: tests use zero delays).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (options: DemoLlmOptions = {}): Layer.Layer<Llm> => Layer.effect(Llm, make(options))
