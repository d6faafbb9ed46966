/**
 * `GET /api/conversations/:id/runs/:run_id/cassette`: a finished run of the
 * server as a cassette (`Cassette`), built from what the run stored — its
 * events in the run log and its model calls, tool outcomes and drains in the
 * run trace (`RunTrace`). `run_id` may be `latest` (the conversation's latest
 * run). 404 `no_run` for a run that is not the conversation's, 409 while it
 * is still running.
 *
 * @since 0.1.0
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as Cassette from "../Cassette.js"
import { fromWire } from "./EventWire.js"
import type { ChatMessage } from "../Message.js"
import * as Recorder from "../Recorder.js"
import type { RunEvent } from "../RunEvent.js"
import { restartError } from "../RunJournal.js"
import * as Toolkit from "../Toolkit.js"
import * as ApiError from "./ApiError.js"
import * as ApiSchema from "./ApiSchema.js"
import * as RunLog from "./RunLog.js"
import * as RunTrace from "./RunTrace.js"
import * as ServerConfig from "./ServerConfig.js"

const decodeModelCall = Schema.decodeUnknownSync(Cassette.ModelCall)
const decodeToolCall = Schema.decodeUnknownSync(Cassette.ToolCall)

/**
 * The stored pieces of a run as a cassette.
 *
 * @since 0.1.0
 * @category constructors
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
  type StoredInput = { query?: string; history?: ReadonlyArray<ChatMessage>; max_iterations?: number }
  let input: StoredInput | undefined
  for (const entry of options.entries) {
    const data = entry.data as Record<string, unknown>
    if (entry.kind === "input" && input === undefined) input = data as StoredInput
    else if (entry.kind === "model") recording.modelCalls.push(decodeModelCall(data) as never)
    else if (entry.kind === "tool") recording.toolCalls.push(decodeToolCall(data))
    else if (entry.kind === "drain") recording.drains.push({ items: (data.items ?? []) as ReadonlyArray<{ id: string; content: string }> })
    else if (entry.kind === "model_info" && recording.model === undefined) recording.model = data as Cassette.Cassette["model"]
  }
  const events: Array<RunEvent> = []
  for (const stored of options.events) {
    const event = fromWire(stored.channel, JSON.parse(stored.data) as Record<string, unknown>)
    if (event !== undefined) events.push(event)
  }
  return Recorder.toCassette({
    recording,
    llm: {
      model: options.fallbackModel.name,
      abilities: { toolCall: true, toolChoice: true, jsonMode: true, vision: false, streaming: true, thinking: false }
    },
    tools: options.tools,
    input: {
      query: input?.query ?? options.query,
      conversationId: options.conversationId,
      history: input?.history ?? [],
      ...(input?.max_iterations !== undefined ? { maxIterations: input.max_iterations } : {})
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
 * `iteration done` event does. Each becomes a `Failure` entry with that error,
 * stored just before its `iteration done` (`afterEvent`), so that a replay or
 * a fork answers the call as the run did instead of running its tool.
 *
 * @since 0.1.0
 * @category constructors
 */
export const withCutCalls = (
  entries: ReadonlyArray<RunTrace.TraceRow>,
  events: ReadonlyArray<RunLog.StoredEvent>
): Array<RunTrace.TraceRow> => {
  const idOf = (data: unknown) => (data as { readonly tool_call_id?: unknown }).tool_call_id
  const recorded = new Set(entries.flatMap((e) => (e.kind === "tool" ? [idOf(e.data)] : [])))
  const started = new Map<unknown, Record<string, unknown>>()
  const result = [...entries]
  for (const event of events) {
    if (event.channel !== "step") continue
    const step = JSON.parse(event.data) as Record<string, unknown>
    if (step.type !== "iteration" || typeof step.tool_call_id !== "string") continue
    if (step.status === "start") started.set(step.tool_call_id, step)
    if (step.status !== "done" || step.error !== restartError || recorded.has(step.tool_call_id)) continue
    recorded.add(step.tool_call_id)
    const entry: RunTrace.TraceRow = {
      kind: "tool",
      data: {
        iteration: step.iteration,
        tool_call_id: step.tool_call_id,
        tool_name: step.tool_name,
        args: step.tool_args ?? started.get(step.tool_call_id)?.tool_args ?? {},
        outcome: { _tag: "Failure", message: restartError }
      },
      afterEvent: event.seq - 1
    }
    const after = result.findIndex((e) => e.afterEvent !== undefined && e.afterEvent >= event.seq)
    result.splice(after < 0 ? result.length : after, 0, entry)
  }
  return result
}

/**
 * Where a fork's run continues from: the original run, the event it was
 * forked at, the run's last event and its query.
 *
 * @since 0.1.0
 * @category models
 */
export const ForkPoint = Schema.Struct({
  runId: Schema.String,
  conversationId: Schema.String,
  at: Schema.Number,
  last: Schema.Number,
  query: Schema.String
})
/**
 * @since 0.1.0
 * @category models
 */
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
 *
 * @since 0.1.0
 * @category constructors
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
    model_calls: cassette.model_calls.map((call) => ({ ...call, request: { ...call.request, messages: call.request.messages.map(asked) } }))
  }
}

/**
 * @since 0.1.0
 * @category layers
 */
export const CassetteRoutes = HttpLayerRouter.use((router) =>
  Effect.gen(function*() {
    const settings = yield* ServerConfig.ServerConfig
    const log = yield* RunLog.RunLog
    const trace = yield* RunTrace.RunTrace
    const toolkit = yield* Toolkit.Toolkit
    const guard = ApiError.authorize(settings.apiToken)
    const internal = (e: { readonly message: string }) => new ApiError.InternalError({ message: e.message })
    const handler = Effect.gen(function*() {
      const params = yield* HttpLayerRouter.params
      const id = params.id ?? ""
      const runId = params.run_id ?? ""
      if (!Schema.is(ApiSchema.ConversationId)(id)) {
        return yield* Effect.fail(new ApiError.InvalidRequest({ issues: [{ path: "id", message: "Invalid conversation id" }] }))
      }
      const row = yield* (runId === "latest" ? log.latest(id) : log.run(runId)).pipe(Effect.mapError(internal))
      if (Option.isNone(row) || row.value.conversationId !== id) {
        return yield* Effect.fail(new ApiError.NotFound({ code: "no_run", conversationId: id }))
      }
      if (row.value.status !== "done") return yield* Effect.fail(new ApiError.RunInProgress({ conversationId: id }))
      const run = row.value
      const [entries, events] = yield* Effect.all([trace.entries(run.runId), log.eventsAfter(run.runId, 0)]).pipe(Effect.mapError(internal))
      const cassette = build({
        runId: run.runId,
        conversationId: id,
        query: run.query,
        startedAt: run.startedAt,
        entries: withCutCalls(entries, events),
        events,
        tools: toolkit.tools.map(Recorder.toolSpec),
        fallbackModel: { name: "unknown" }
      })
      return HttpServerResponse.unsafeJson(Cassette.encode(cassette), {
        headers: { "content-disposition": `attachment; filename="cassette-${run.runId}.json"` }
      })
    })
    yield* router.add("GET", "/api/conversations/:id/runs/:run_id/cassette", ApiError.handle(Effect.zipRight(guard, handler)))
  })
)
