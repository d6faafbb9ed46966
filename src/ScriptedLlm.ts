/**
 * A scripted LLM for tests: replays a script of replies (text, tool calls,
 * reasoning, errors, stream chunks, delays) and records every request it receives.
 * Public API — embedders test their own agents with it (see docs/testing.md).
 *
 * ```ts
 * const llm = ScriptedLlm.makeUnsafe([
 *   ScriptedLlm.toolCall("calculator", { expression: "2+2" }),
 *   ScriptedLlm.text("The answer is 4."),   // loop's final answer
 *   ScriptedLlm.text("**4**")               // synthesis stream
 * ])
 * const result = yield* agent.runCollect("2+2?").pipe(Effect.provide(llm.layer))
 * llm.requests // what the agent sent, in order
 * ```
 *
 * @since 0.1.0
 */
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { ThinkSplitter } from "./internal/llm/think.js"
import type {
  Abilities,
  ChatDelta,
  ChatRequest,
  ChatResponse,
  LlmErrorReason,
  LlmService,
  ResponseToolCall
} from "./Llm.js"
import { defaultAbilities, independentCalls, Llm, LlmError, parseToolArguments, splitThinking } from "./Llm.js"
import { textOf } from "./Message.js"
import * as Usage from "./Usage.js"

/**
 * A tool call in a scripted reply; `arguments` as an object or as raw (possibly invalid) text.
 *
 * @since 0.1.0
 * @category models
 */
export interface ScriptedToolCall {
  readonly id?: string
  readonly name: string
  readonly arguments?: Record<string, unknown> | string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ScriptedReply {
  readonly _tag: "Reply"
  readonly content?: string
  readonly toolCalls?: ReadonlyArray<ScriptedToolCall>
  readonly reasoning?: string
  readonly usage?: { readonly prompt: number; readonly completion: number }
  readonly finishReason?: string
  /** Latency before the reply (or before each stream chunk when `chunkDelay` is unset). */
  readonly delay?: Duration.DurationInput
  /** For `streamChat`: the content split into these chunks (default: word-sized chunks). */
  readonly chunks?: ReadonlyArray<string>
  readonly chunkDelay?: Duration.DurationInput
  /** For `streamChat`: fail with this error after emitting this many chunks. */
  readonly failAfterChunks?: { readonly count: number; readonly reason: LlmErrorReason; readonly message?: string }
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ScriptedFailure {
  readonly _tag: "Fail"
  readonly reason: LlmErrorReason
  readonly message: string
  readonly delay?: Duration.DurationInput
}

/**
 * @since 0.1.0
 * @category models
 */
export type ScriptStep = ScriptedReply | ScriptedFailure

/**
 * A function computing the reply from the request (for dynamic fakes).
 *
 * @since 0.1.0
 * @category models
 */
export type Responder = (request: ChatRequest, index: number, method: "chat" | "stream") => ScriptStep

/**
 * @since 0.1.0
 * @category models
 */
export interface RecordedRequest {
  readonly method: "chat" | "stream"
  readonly request: ChatRequest
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ScriptedLlmOptions {
  readonly model?: string
  readonly abilities?: Partial<Abilities>
  readonly contextSize?: number
  readonly maxOutputTokens?: number
  /** What happens when the script runs out: fail the call (default) or repeat the last step. */
  readonly onExhausted?: "fail" | "repeatLast"
  /** Record requests (default true; turn off in benchmarks). */
  readonly record?: boolean
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ScriptedLlm {
  /** This model: one position in the script, one list of requests (this handle's). */
  readonly service: LlmService
  /**
   * This very model as the `Llm` (every build provides it, so a test reads its
   * requests back through this handle); `ScriptedLlm.layer` builds a fresh
   * model per build instead.
   */
  readonly layer: Layer.Layer<Llm>
  /** Every request received so far, in order. */
  readonly requests: ReadonlyArray<RecordedRequest>
  /** How many script steps have been consumed. */
  readonly calls: number
}

/**
 * A plain-text reply.
 *
 * @since 0.1.0
 * @category constructors
 */
export const text = (content: string, options?: Omit<ScriptedReply, "_tag" | "content">): ScriptedReply => ({
  _tag: "Reply",
  content,
  ...options
})

/**
 * A reply calling one tool.
 *
 * @since 0.1.0
 * @category constructors
 */
export const toolCall = (
  name: string,
  args: Record<string, unknown> | string = {},
  options?: Omit<ScriptedReply, "_tag" | "toolCalls"> & { readonly id?: string }
): ScriptedReply => ({
  _tag: "Reply",
  ...options,
  toolCalls: [{ name, arguments: args, ...(options?.id ? { id: options.id } : {}) }]
})

/**
 * A reply calling several tools at once (native parallel calls).
 *
 * @since 0.1.0
 * @category constructors
 */
export const toolCalls = (
  calls: ReadonlyArray<ScriptedToolCall>,
  options?: Omit<ScriptedReply, "_tag" | "toolCalls">
): ScriptedReply => ({ _tag: "Reply", ...options, toolCalls: calls })

/**
 * A JSON-mode action reply (`{"type":"tool_call",…}`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const jsonToolCall = (name: string, args: Record<string, unknown> = {}, reasoning = ""): ScriptedReply =>
  text(JSON.stringify({ type: "tool_call", reasoning, tool_name: name, tool_args: args }))

/**
 * A JSON-mode final answer reply.
 *
 * @since 0.1.0
 * @category constructors
 */
export const jsonFinal = (answer: string, reasoning = ""): ScriptedReply =>
  text(JSON.stringify({ type: "final_answer", reasoning, answer }))

/**
 * A failing call.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fail = (reason: LlmErrorReason, message = `scripted ${reason} error`): ScriptedFailure => ({
  _tag: "Fail",
  reason,
  message
})

const estimate = (request: ChatRequest): number => {
  let chars = 0
  for (const m of request.messages) {
    chars += textOf(m.content).length
    if (m.role === "assistant" && m.tool_calls) { for (const c of m.tool_calls) chars += c.function.arguments.length }
  }
  return Math.ceil(chars / 4)
}

const words = (content: string): Array<string> => content.match(/\s*\S+|\s+$/g) ?? (content ? [content] : [])

/**
 * Builds a scripted LLM from a list of steps (consumed in order by `chat` and
 * `streamChat` alike) or from a responder function.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeUnsafe = (
  script: ReadonlyArray<ScriptStep> | Responder,
  options: ScriptedLlmOptions = {}
): ScriptedLlm => {
  const requests: Array<RecordedRequest> = []
  let index = 0
  const record = options.record ?? true
  const next = (request: ChatRequest, method: "chat" | "stream"): ScriptStep | LlmError => {
    if (record) requests.push({ method, request })
    const i = index++
    if (typeof script === "function") return script(request, i, method)
    if (i < script.length) return script[i]
    if (options.onExhausted === "repeatLast" && script.length > 0) return script[script.length - 1]
    return new LlmError({
      reason: "Unknown",
      message: `ScriptedLlm: script exhausted (call ${i + 1}, ${script.length} steps)`
    })
  }
  /** The reply, its calls' arguments as text (a streamed reply's reader decodes them itself). */
  const rawReply = (step: ScriptedReply, request: ChatRequest) => {
    const split = splitThinking(step.content ?? "")
    const calls = (step.toolCalls ?? []).map((c, n) => ({
      id: c.id ?? `call_${index}_${n}`,
      name: c.name,
      arguments: typeof c.arguments === "string" ? c.arguments : JSON.stringify(c.arguments ?? {})
    }))
    const reasoning = step.reasoning ?? split.reasoning
    const completion = Math.ceil(((step.content ?? "").length + calls.reduce((s, c) => s + c.arguments.length, 0)) / 4)
    return {
      content: split.content,
      reasoning,
      calls,
      finishReason: step.finishReason ?? (calls.length > 0 ? "tool_calls" : "stop"),
      usage: step.usage
        ? Usage.make(step.usage.prompt, step.usage.completion)
        : Usage.make(estimate(request), completion)
    }
  }
  const toResponse = (step: ScriptedReply, request: ChatRequest): ChatResponse => {
    const { calls, content, finishReason, reasoning, usage } = rawReply(step, request)
    const toolCalls: Array<ResponseToolCall> = calls.map((c) => ({ ...c, parsed: parseToolArguments(c.arguments) }))
    return { content, ...(reasoning ? { reasoning } : {}), toolCalls, finishReason, usage }
  }
  const failure = (step: ScriptedFailure) => new LlmError({ reason: step.reason, message: step.message })
  const sleep = (d: Duration.DurationInput | undefined) => (d === undefined ? Effect.void : Effect.sleep(d))

  const service: LlmService = {
    model: options.model ?? "scripted",
    abilities: { ...defaultAbilities, ...options.abilities },
    ...(options.contextSize !== undefined ? { contextSize: options.contextSize } : {}),
    ...(options.maxOutputTokens !== undefined ? { maxOutputTokens: options.maxOutputTokens } : {}),
    oneCall: independentCalls,
    chat: (request) =>
      Effect.suspend(() => {
        const step = next(request, "chat")
        if (step instanceof LlmError) return Effect.fail(step)
        if (step._tag === "Fail") return Effect.zipRight(sleep(step.delay), Effect.fail(failure(step)))
        return Effect.as(sleep(step.delay), toResponse(step, request))
      }),
    // the step is taken when the stream runs; a reply without latency is its deltas at once
    streamChat: (request) =>
      Stream.suspend((): Stream.Stream<ChatDelta, LlmError> => {
        const step = next(request, "stream")
        if (step instanceof LlmError) return Stream.fail(step)
        if (step._tag === "Fail") {
          return step.delay === undefined
            ? Stream.fail(failure(step))
            : Stream.unwrap(Effect.zipRight(sleep(step.delay), Effect.fail(failure(step))))
        }
        const response = rawReply(step, request)
        // Content goes through the same <think> routing as a real provider stream.
        const chunks = step.chunks ?? words(step.content ?? "")
        const splitter = new ThinkSplitter()
        const deltas: Array<ChatDelta> = []
        if (step.reasoning) deltas.push({ _tag: "Reasoning", text: step.reasoning })
        const failAt = step.failAfterChunks?.count ?? -1
        const emitted = chunks.slice(0, failAt >= 0 ? failAt : chunks.length)
        const tail: Array<ChatDelta> = response.calls.map((c, i) => ({
          _tag: "ToolCall",
          index: i,
          id: c.id,
          name: c.name,
          arguments: c.arguments
        }))
        tail.push({ _tag: "Usage", usage: response.usage }, { _tag: "Finish", reason: response.finishReason })
        const failTail = step.failAfterChunks
          ? Stream.fail(
            new LlmError({
              reason: step.failAfterChunks.reason,
              message: step.failAfterChunks.message ?? "scripted stream failure"
            })
          )
          : undefined
        const perChunk = step.chunkDelay ?? step.delay
        if (perChunk === undefined) {
          // No latency: every delta is known now, so the reply arrives whole, as one chunk
          // (`fromChunk` writes it at once; `fromIterable` would pull it through an iterator loop).
          for (const t of emitted) for (const d of splitter.push(t)) deltas.push(d)
          for (const d of splitter.flush()) deltas.push(d)
          if (failTail !== undefined) return Stream.concat(Stream.fromChunk(Chunk.unsafeFromArray(deltas)), failTail)
          for (const d of tail) deltas.push(d)
          return Stream.fromChunk(Chunk.unsafeFromArray(deltas))
        }
        const before = step.chunkDelay !== undefined || emitted.length === 0 ? step.delay : undefined
        const paced = (xs: ReadonlyArray<string>) => Stream.tap(Stream.fromIterable(xs), () => Effect.sleep(perChunk))
        // Like a provider that opens its response and awaits the first chunk, the stream's first wait
        // happens before it starts (a call waiting for it holds no stream) — unless deltas (reasoning)
        // come first. Without a delay before the chunks, that wait is the first chunk's own.
        const leadsWithChunk = before === undefined && emitted.length > 0
        const firstWait = deltas.length > 0 ? undefined : leadsWithChunk ? perChunk : before
        let raw = leadsWithChunk && firstWait !== undefined
          ? Stream.concat(Stream.make(emitted[0]), paced(emitted.slice(1)))
          : paced(emitted)
        if (before !== undefined && firstWait === undefined) {
          raw = Stream.concat(Stream.drain(Stream.fromEffect(Effect.sleep(before))), raw)
        }
        const content: Stream.Stream<ChatDelta, LlmError> = raw.pipe(
          Stream.mapConcat((t) => splitter.push(t)),
          Stream.concat(Stream.suspend(() => Stream.fromIterable(splitter.flush())))
        )
        const stream = Stream.fromIterable(deltas).pipe(
          Stream.concat(content),
          Stream.concat(failTail ?? Stream.fromIterable(tail))
        )
        return firstWait === undefined ? stream : Stream.unwrap(Effect.as(Effect.sleep(firstWait), stream))
      })
  }
  const handle: ScriptedLlm = {
    service,
    layer: Layer.succeed(Llm, service),
    get requests() {
      return requests
    },
    get calls() {
      return index
    }
  }
  return handle
}

/**
 * Access to a scripted LLM's recorded requests from inside Effect code.
 *
 * @since 0.1.0
 * @category Context
 */
export class ScriptedLlmHandle
  extends Context.Tag("effect-react-engine/ScriptedLlmHandle")<ScriptedLlmHandle, ScriptedLlm>()
{}

/**
 * The scripted LLM as a layer: the `Llm`, and the `ScriptedLlmHandle` to read
 * its recorded requests from inside Effect code. Each build of the layer starts
 * the script afresh.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  script: ReadonlyArray<ScriptStep> | Responder,
  options?: ScriptedLlmOptions
): Layer.Layer<Llm | ScriptedLlmHandle> =>
  Layer.effectContext(Effect.sync(() => {
    const handle = makeUnsafe(script, options)
    return Context.make(Llm, handle.service).pipe(Context.add(ScriptedLlmHandle, handle))
  }))
