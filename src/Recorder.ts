/**
 * Records runs as cassettes. `Recorder.layer` wraps the `Llm`, the `Toolkit`
 * and the `Interrupts` it is given: every model request and reply, every tool
 * handler's outcome and every interrupt drain made under a recording
 * (`withRecording`) is written into it; outside one the wrappers only pass
 * calls through. `Recorder.record` runs an agent under a fresh recording and
 * returns the run's result with its cassette.
 *
 * ```ts
 * const agent = ReactAgent.layer().pipe(Layer.provideMerge(Recorder.layer), Layer.provide(base))
 * const { cassette } = yield* Recorder.record(yield* ReactAgent.ReactAgent, { query: "2+2?" })
 * ```
 *
 * A recording belongs to one run: runs recorded concurrently each take their
 * own (the recording travels with the run's fibers, a `FiberRef`).
 *
 * @since 0.1.0
 */
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as Attachments from "./Attachments.js"
import * as Cassette from "./Cassette.js"
import { modelOf, requestJson, toCassette } from "./internal/recorder/cassette.js"
import { wrapMemory } from "./internal/recorder/memory.js"
import { outcomeOf } from "./internal/recorder/tools.js"
import * as Interrupts from "./Interrupts.js"
import type { ChatDelta, ChatRequest, LlmService } from "./Llm.js"
import { Llm } from "./Llm.js"
import * as Memory from "./Memory.js"
import type { ReactAgentService, RunInput } from "./ReactAgent.js"
import { collect } from "./ReactAgent.js"
import type { RunEvent, RunResult } from "./RunEvent.js"
import type { Tool } from "./Tool.js"
import * as ToolModule from "./Tool.js"
import * as Toolkit from "./Toolkit.js"

type Mutable<T> = { -readonly [K in keyof T]: T[K] }

/**
 * What a run has recorded so far (filled by the wrapped services).
 *
 * @since 0.1.0
 * @category models
 */
export interface Recording {
  readonly modelCalls: Array<Mutable<Cassette.ModelCall>>
  readonly toolCalls: Array<Cassette.ToolCall>
  readonly drains: Array<{ readonly items: ReadonlyArray<{ readonly id: string; readonly content: string }> }>
  /** The model the run used (set by the first model call). */
  model?: Cassette.Cassette["model"]
  /** The run's memory steps (docs/memory.md). */
  memory?: Memory.Steps
  /** Called with each entry as it is added or completed (the server stores them as they come). */
  readonly onEntry?: (entry: RecordingEntry) => Effect.Effect<void>
}

/**
 * An entry of a recording as it completes.
 *
 * @since 0.1.0
 * @category models
 */
export type RecordingEntry =
  | { readonly _tag: "ModelCall"; readonly index: number; readonly call: Cassette.ModelCall }
  | { readonly _tag: "ToolCall"; readonly call: Cassette.ToolCall }
  | {
    readonly _tag: "Drain"
    readonly index: number
    readonly items: ReadonlyArray<{ readonly id: string; readonly content: string }>
  }
  | { readonly _tag: "Model"; readonly model: Cassette.Cassette["model"] }
  | { readonly _tag: "Memory"; readonly steps: Memory.Steps }

/**
 * A fresh, empty recording.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeRecording = (onEntry?: Recording["onEntry"]): Recording => ({
  modelCalls: [],
  toolCalls: [],
  drains: [],
  ...(onEntry !== undefined ? { onEntry } : {})
})

/**
 * The recording of the current run, if any.
 *
 * @since 0.1.0
 * @category references
 */
export const currentRecording: FiberRef.FiberRef<Option.Option<Recording>> = globalValue(
  Symbol.for("effect-react-engine/Recorder/currentRecording"),
  () => FiberRef.unsafeMake<Option.Option<Recording>>(Option.none())
)

/**
 * Runs `self` with every call of the wrapped services written into `recording`.
 *
 * @since 0.1.0
 * @category utils
 */
export const withRecording =
  (recording: Recording) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
    Effect.locally(self, currentRecording, Option.some(recording))

const emitEntry = (recording: Recording, entry: RecordingEntry): Effect.Effect<void> =>
  recording.onEntry === undefined ? Effect.void : recording.onEntry(entry)

/**
 * The LLM, recording every call made under a recording.
 *
 * @since 0.1.0
 * @category constructors
 */
export const wrapLlm = (llm: LlmService): LlmService => {
  const start = (method: "chat" | "stream", request: ChatRequest) =>
    Effect.flatMap(FiberRef.get(currentRecording), (found) => {
      if (Option.isNone(found)) return Effect.succeed(Option.none())
      const recording = found.value
      const entry: Mutable<Cassette.ModelCall> = { method, request: requestJson(request) }
      recording.modelCalls.push(entry)
      const started = Option.some({ recording, entry, index: recording.modelCalls.length - 1 })
      if (recording.model !== undefined) return Effect.succeed(started)
      const model = modelOf(llm)
      recording.model = model
      return Effect.as(emitEntry(recording, { _tag: "Model", model }), started)
    })
  type Started = Option.Option<{ recording: Recording; entry: Mutable<Cassette.ModelCall>; index: number }>
  const finish = (started: Started) =>
    Option.isNone(started)
      ? Effect.void
      : emitEntry(started.value.recording, { _tag: "ModelCall", index: started.value.index, call: started.value.entry })
  return {
    ...llm,
    chat: (request) =>
      Effect.flatMap(start("chat", request), (started) =>
        llm.chat(request).pipe(
          Effect.tapBoth({
            onSuccess: (reply) => {
              if (Option.isSome(started)) started.value.entry.reply = reply
              return finish(started)
            },
            onFailure: (e) => {
              if (Option.isSome(started)) started.value.entry.error = Cassette.errorOf(e)
              return finish(started)
            }
          })
        )),
    streamChat: (request) =>
      Stream.unwrap(Effect.map(start("stream", request), (started) => {
        if (Option.isNone(started)) return llm.streamChat(request)
        const deltas: Array<ChatDelta> = []
        started.value.entry.deltas = deltas as never
        return llm.streamChat(request).pipe(
          Stream.tap((delta) => Effect.sync(() => deltas.push(JSON.parse(JSON.stringify(delta))))),
          Stream.tapError((e) =>
            Effect.suspend(() => {
              started.value.entry.error = Cassette.errorOf(e)
              return Effect.void
            })
          ),
          Stream.ensuring(Effect.suspend(() => finish(started)))
        )
      }))
  }
}

/**
 * A tool whose handler's outcomes are recorded under a recording.
 *
 * @since 0.1.0
 * @category constructors
 */
export const wrapTool = (tool: Tool): Tool => ({
  ...tool,
  handler: (args: unknown) =>
    Effect.flatMap(FiberRef.get(currentRecording), (recording) => {
      const run = Effect.suspend(() => ToolModule.runHandler(tool, args))
      if (Option.isNone(recording)) return run as Effect.Effect<ToolModule.ToolOutput, ToolModule.ToolError>
      return Effect.flatMap(FiberRef.get(ToolModule.currentCall), (call) =>
        Effect.onExit(run, (exit) => {
          const entry: Cassette.ToolCall = {
            iteration: Option.isSome(call) ? call.value.iteration : 0,
            ...(Option.isSome(call) && call.value.toolCallId !== undefined
              ? { tool_call_id: call.value.toolCallId }
              : {}),
            tool_name: tool.name,
            args: JSON.parse(JSON.stringify(args ?? {})),
            outcome: outcomeOf(exit)
          }
          recording.value.toolCalls.push(entry)
          return emitEntry(recording.value, { _tag: "ToolCall", call: entry })
        })) as Effect.Effect<ToolModule.ToolOutput, ToolModule.ToolError>
    })
})

/**
 * The interrupt queues, recording what each drain takes under a recording.
 *
 * @since 0.1.0
 * @category constructors
 */
export const wrapInterrupts = (interrupts: Interrupts.InterruptsService): Interrupts.InterruptsService => ({
  ...interrupts,
  drain: (conversationId, options) =>
    Effect.flatMap(
      interrupts.drain(conversationId, options),
      (items) =>
        Effect.flatMap(FiberRef.get(currentRecording), (recording) => {
          if (Option.isNone(recording)) return Effect.succeed(items)
          const copy = items.map((i) => ({ id: i.id, content: i.content }))
          recording.value.drains.push({ items: copy })
          return Effect.as(
            emitEntry(recording.value, { _tag: "Drain", index: recording.value.drains.length - 1, items: copy }),
            items
          )
        })
    )
})

/**
 * What the recorder knows of the services it wraps.
 *
 * @since 0.1.0
 * @category models
 */
export interface RecorderService {
  readonly llm: LlmService
  readonly toolkit: Toolkit.ToolkitService
}

/**
 * @since 0.1.0
 * @category Context
 */
export class Recorder extends Context.Tag("effect-react-engine/Recorder")<Recorder, RecorderService>() {}

/**
 * Wraps the `Llm`, `Toolkit` and `Interrupts` it is given (and provides them
 * again, recording) plus the `Recorder`.
 *
 * @since 0.1.0
 * @category layers
 */
export const layer: Layer.Layer<
  Llm | Toolkit.Toolkit | Interrupts.Interrupts | Recorder,
  never,
  Llm | Toolkit.Toolkit | Interrupts.Interrupts
> = Layer.effectContext(Effect.gen(function*() {
  const llm = wrapLlm(yield* Llm)
  const toolkit = Toolkit.makeUnsafe((yield* Toolkit.Toolkit).tools.map(wrapTool))
  const interrupts = wrapInterrupts(yield* Interrupts.Interrupts)
  const context = Context.make(Llm, llm).pipe(
    Context.add(Toolkit.Toolkit, toolkit),
    Context.add(Interrupts.Interrupts, interrupts),
    Context.add(Recorder, { llm, toolkit })
  )
  const memory = yield* Effect.serviceOption(Memory.Memory)
  const write = (recording: Recording, steps: Memory.Steps) =>
    Effect.suspend(() => {
      recording.memory = steps
      return emitEntry(recording, { _tag: "Memory", steps })
    })
  return Option.isNone(memory)
    ? context
    : Context.add(context, Memory.Memory, wrapMemory(memory.value, currentRecording, write))
}))

// building the cassette (src/internal/recorder/cassette.ts)

export {
  /**
   * The approval decisions of a run, from its events.
   *
   * @since 0.1.0
   * @category utils
   */
  approvalsOf,
  /** The request as plain JSON data (what a cassette stores and compares). */
  requestJson,
  /**
   * Builds a cassette from a finished recording.
   *
   * @since 0.1.0
   * @category constructors
   */
  toCassette,
  /**
   * A tool as a cassette describes it.
   *
   * @since 0.1.0
   * @category utils
   */
  toolSpec
} from "./internal/recorder/cassette.js"

/**
 * Runs `agent` on `input` under a fresh recording: its events, its result and
 * its cassette. `agentOptions`: the options the agent was built with (stored
 * in the cassette for `Replay.layerAgent`). Needs the `Recorder` (the agent
 * must be built on `Recorder.layer`'s services).
 *
 * @since 0.1.0
 * @category utils
 */
export const record = (
  agent: ReactAgentService,
  input: RunInput,
  options?: { readonly agentOptions?: Record<string, unknown> }
): Effect.Effect<
  { readonly events: ReadonlyArray<RunEvent>; readonly result: RunResult; readonly cassette: Cassette.Cassette },
  never,
  Recorder
> =>
  Effect.gen(function*() {
    const recorder = yield* Recorder
    const recording = makeRecording()
    const conversationId = input.conversationId ?? crypto.randomUUID()
    const withId = { ...input, conversationId }
    const events = Chunk.toReadonlyArray(yield* withRecording(recording)(Stream.runCollect(agent.run(withId))))
    const result = yield* collect(Stream.fromIterable(events))
    const cassette = toCassette({
      recording,
      llm: recorder.llm,
      tools: recorder.toolkit.tools,
      input: withId,
      events,
      ...(options?.agentOptions !== undefined ? { agentOptions: options.agentOptions } : {})
    })
    // the attachments the run read, once each with its bytes (when the store is in context)
    const store = yield* Effect.serviceOption(Attachments.Attachments)
    const embedded = Option.isSome(store) ? yield* Attachments.embed(store.value, cassette) : []
    return { events, result, cassette: embedded.length > 0 ? { ...cassette, attachments: embedded } : cassette }
  })
