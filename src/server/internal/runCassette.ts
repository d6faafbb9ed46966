/**
 * A stored run as a cassette (`build`: what `GET …/runs/:run_id/cassette`
 * serves), and the part of it a fork's run takes from storage (`forkPrefix`, at
 * a `ForkPoint`). Built from the run's typed events in the run log and its model
 * calls, tool outcomes and drains in the run trace. Kept apart from the routes:
 * the run workflow (`DurableRuns`) uses the fork's prefix.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import * as Cassette from "../../Cassette.js"
import * as Memory from "../../Memory.js"
import type { ChatMessage, Content } from "../../Message.js"
import * as Recorder from "../../Recorder.js"
import type { RunEvent } from "../../RunEvent.js"
import { restartError } from "../../RunJournal.js"
import type * as RunLog from "../RunLog.js"
import type * as RunTrace from "../RunTrace.js"

const decodeModelCall = Schema.decodeUnknownSync(Cassette.ModelCall)
const decodeToolCall = Schema.decodeUnknownSync(Cassette.ToolCall)
const decodeMemory = Schema.decodeUnknownSync(Memory.Steps)

/**
 * The stored pieces of a run as a cassette.
 */
export const build = (options: {
  readonly runId: string
  readonly conversationId: string
  readonly query: string
  readonly startedAt: number
  readonly entries: ReadonlyArray<RunTrace.TraceRow>
  readonly events: ReadonlyArray<RunLog.StoredEvent>
  readonly tools: ReadonlyArray<Cassette.ToolSpec>
  readonly fallbackModel: { readonly name: string }
}): Cassette.Cassette => {
  const recording = Recorder.makeRecording()
  type StoredInput = {
    query?: Content
    history?: ReadonlyArray<ChatMessage>
    max_iterations?: number
    user_id?: string
  }
  let input: StoredInput | undefined
  for (const entry of options.entries) {
    const data = entry.data as Record<string, unknown>
    if (entry.kind === "input" && input === undefined) input = data as StoredInput
    else if (entry.kind === "model") recording.modelCalls.push(decodeModelCall(data) as never)
    else if (entry.kind === "tool") recording.toolCalls.push(decodeToolCall(data))
    else if (entry.kind === "drain") {
      recording.drains.push({ items: (data.items ?? []) as ReadonlyArray<{ id: string; content: string }> })
    } else if (entry.kind === "model_info" && recording.model === undefined) {
      recording.model = data as Cassette.Cassette["model"]
    } else if (entry.kind === "memory") recording.memory = decodeMemory(data)
  }
  const events: Array<RunEvent> = options.events.map((stored) => stored.event)
  return Recorder.toCassette({
    recording,
    llm: {
      model: options.fallbackModel.name,
      abilities: { toolCall: true, toolChoice: true, jsonMode: true, vision: false, streaming: true, thinking: false }
    },
    // a run without a user was not offered the memory's tool: its requests (and a replay's) do not list it
    tools: input?.user_id !== undefined ? options.tools : options.tools.filter((t) => t.name !== Memory.UPDATE_TOOL),
    input: {
      query: input?.query ?? options.query,
      conversationId: options.conversationId,
      history: input?.history ?? [],
      ...(input?.max_iterations !== undefined ? { maxIterations: input.max_iterations } : {}),
      ...(input?.user_id !== undefined ? { userId: input.user_id } : {})
    },
    events,
    runId: options.runId,
    source: "server",
    recordedAt: new Date(options.startedAt)
  })
}

/**
 * The run's trace with the tool calls a restart cut: such a call was answered
 * `RunJournal.restartError` without its handler running (it is not idempotent
 * and was in flight when its process died), so no trace entry holds it; its
 * `ToolDone` event does. Each becomes a `Failure` entry with that error,
 * stored just before its `ToolDone` (`afterEvent`), so that a replay or a fork
 * answers the call as the run did instead of running its tool.
 */
export const withCutCalls = (
  entries: ReadonlyArray<RunTrace.TraceRow>,
  events: ReadonlyArray<RunLog.StoredEvent>
): Array<RunTrace.TraceRow> => {
  const idOf = (data: unknown) => (data as { readonly tool_call_id?: unknown }).tool_call_id
  const recorded = new Set(entries.flatMap((e) => (e.kind === "tool" ? [idOf(e.data)] : [])))
  const started = new Map<string, unknown>()
  const result = [...entries]
  for (const { event, seq } of events) {
    if (event._tag === "ToolStart" && event.tool_call_id !== undefined) started.set(event.tool_call_id, event.tool_args)
    if (event._tag !== "ToolDone" || event.tool_call_id === undefined) continue
    if (event.error !== restartError || recorded.has(event.tool_call_id)) continue
    recorded.add(event.tool_call_id)
    const entry: RunTrace.TraceRow = {
      kind: "tool",
      data: {
        iteration: event.iteration,
        tool_call_id: event.tool_call_id,
        tool_name: event.tool_name,
        args: event.tool_args ?? started.get(event.tool_call_id) ?? {},
        outcome: { _tag: "Failure", message: restartError }
      },
      afterEvent: seq - 1
    }
    const after = result.findIndex((e) => e.afterEvent !== undefined && e.afterEvent >= seq)
    result.splice(after < 0 ? result.length : after, 0, entry)
  }
  return result
}

/**
 * Where a fork's run continues from: the original run, the event it was
 * forked at, the run's last event and its query.
 */
export const ForkPoint = Schema.Struct({
  runId: Schema.String,
  conversationId: Schema.String,
  at: Schema.Number,
  last: Schema.Number,
  query: Schema.String
})
export type ForkPoint = typeof ForkPoint.Type

/**
 * The steps of the original run stored before the fork point, as a cassette
 * for `Replay.withPrefix`: every model call, tool outcome and drain stored
 * before event `at` (`RunTrace.TraceRow.afterEvent`; entries stored before
 * that was recorded count only for a fork at the run's last event). When the
 * fork asks `query` instead of the original's, the stored requests say so:
 * the requests of the forked run, which hold the new query, match them. The
 * decisions of the calls that waited for a person before `at` come from the
 * run's events.
 */
export const forkPrefix = (
  point: ForkPoint,
  entries: ReadonlyArray<RunTrace.TraceRow>,
  events: ReadonlyArray<RunLog.StoredEvent>,
  query: string
): Cassette.Cassette => {
  const steps = withCutCalls(entries, events).filter((e) =>
    e.kind === "input" || e.kind === "model_info" ||
    (e.afterEvent !== undefined ? e.afterEvent < point.at : point.at >= point.last)
  )
  const cassette = build({
    runId: point.runId,
    conversationId: point.conversationId,
    query: point.query,
    startedAt: 0,
    entries: steps,
    // the approval decisions before the fork point
    events: events.filter((e) => e.seq < point.at),
    tools: [],
    fallbackModel: { name: "unknown" }
  })
  if (query === point.query) return cassette
  const swap = (text: string) => text.split(point.query).join(query)
  const asked = (m: ChatMessage): ChatMessage =>
    m.role !== "user" ? m : {
      ...m,
      content: typeof m.content === "string"
        ? swap(m.content)
        : m.content.map((part) => (part.type === "text" ? { ...part, text: swap(part.text) } : part))
    }
  return {
    ...cassette,
    model_calls: cassette.model_calls.map((call) => ({
      ...call,
      request: { ...call.request, messages: call.request.messages.map(asked) }
    }))
  }
}
