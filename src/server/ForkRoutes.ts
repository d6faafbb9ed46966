/**
 * `POST /api/conversations/:id/fork {run_id?, at?, tool_call_id?, replace_query?}`: a new
 * conversation whose history is the original's up to event `at` of run
 * `run_id` (default: the conversation's latest run, at its last event), and
 * its run started at once — `201 {conversation_id, forked_from:
 * {conversation_id, run_id, at}}`; follow it with `GET /api/react/events`.
 *
 * The fork holds copies of the turns before the forked run, and the forked
 * run asks the run's query again (or `replace_query`): its steps stored
 * before the fork point — model replies, tool outcomes, drained follow-ups —
 * come from the original run's stored steps (`Replay.withPrefix` over the run
 * trace), no tool runs again and the model is not asked again for them; the
 * rest runs live. The original is only read. `tool_call_id` instead of `at`
 * forks at that call's `iteration done` event.
 *
 * 400 for a bad body, 404 `conversation_not_found` / `no_run` /
 * `run_not_found` / `event_not_found`, 409 while the run is still running,
 * 422 `not_forkable` for a DAG run.
 *
 * @since 0.1.0
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import type { Content } from "../Message.js"
import * as Message from "../Message.js"
import * as ApiError from "./ApiError.js"
import * as ApiSchema from "./ApiSchema.js"
import * as ConversationStore from "./ConversationStore.js"
import * as RunLog from "./RunLog.js"
import * as RunRegistry from "./RunRegistry.js"
import * as RunTrace from "./RunTrace.js"
import * as ServerConfig from "./ServerConfig.js"

/** The step an event belongs to, for people (`forked_from.step`: "step 2 · calculator"). */
const stepOf = ({ event, seq }: RunLog.StoredEvent): string => {
  switch (event._tag) {
    case "Done":
      return "the end of the run"
    case "AnswerSignal":
    case "AnswerStart":
    case "AnswerDelta":
    case "AnswerDone":
    case "AnswerReset":
      return "the answer"
    case "ToolStart":
    case "ToolDone":
      return `step ${event.iteration} · ${event.tool_name}${event._tag === "ToolStart" ? " (started)" : ""}`
    case "ThinkingStart":
    case "ThinkingDone":
      return `step ${event.iteration}${event._tag === "ThinkingStart" ? " (thinking)" : ""}`
    default:
      return `event ${seq}`
  }
}

/**
 * @since 0.1.0
 * @category layers
 */
export const ForkRoutes = HttpLayerRouter.use((router) =>
  Effect.gen(function*() {
    const settings = yield* ServerConfig.ServerConfig
    const log = yield* RunLog.RunLog
    const trace = yield* RunTrace.RunTrace
    const store = yield* ConversationStore.ConversationStore
    const registry = yield* RunRegistry.RunRegistry
    const guard = ApiError.authorize(settings.apiToken)
    const internal = (e: { readonly message: string }) => new ApiError.InternalError({ message: e.message })

    const handler = Effect.gen(function*() {
      const id = (yield* HttpLayerRouter.params).id ?? ""
      if (!Schema.is(ApiSchema.ConversationId)(id)) {
        return yield* Effect.fail(
          new ApiError.InvalidRequest({ issues: [{ path: "id", message: "Invalid conversation id" }] })
        )
      }
      const body = yield* ApiError.decodeBody(ApiSchema.ForkRequest, settings.maxBodyBytes)
      if (body.at !== undefined && body.tool_call_id !== undefined) {
        return yield* Effect.fail(
          new ApiError.InvalidRequest({
            issues: [{ path: "tool_call_id", message: "Give at or tool_call_id, not both" }]
          })
        )
      }
      const conversation = yield* store.get(id).pipe(Effect.mapError(internal))
      if (Option.isNone(conversation)) {
        return yield* Effect.fail(new ApiError.NotFound({ code: "conversation_not_found", conversationId: id }))
      }
      const turns = conversation.value.turn_details
      // the conversation's own runs, and those of the turns a fork copied
      const found = yield* (body.run_id === undefined ? log.latest(id) : log.run(body.run_id)).pipe(
        Effect.mapError(internal)
      )
      const row = Option.filter(found, (r) => r.conversationId === id || turns.some((t) => t.run_id === r.runId))
      if (Option.isNone(row)) {
        return yield* Effect.fail(
          body.run_id === undefined
            ? new ApiError.NotFound({ code: "no_run", conversationId: id })
            : new ApiError.NotFound({ code: "run_not_found", conversationId: id, runId: body.run_id })
        )
      }
      const run = row.value
      if (run.status !== "done") {
        return yield* Effect.fail(new ApiError.RunInProgress({ conversationId: run.conversationId }))
      }
      const events = yield* log.eventsAfter(run.runId, 0).pipe(Effect.mapError(internal))
      if (events.some((e) => e.event._tag === "DagPlan" || e.event._tag === "DagStep")) {
        return yield* Effect.fail(
          new ApiError.NotForkable({
            runId: run.runId,
            reason: "A DAG run cannot be forked (its steps are not stored for a fork)"
          })
        )
      }
      // a tool call: its `iteration done` event (a card of a stored turn knows its call, not its event)
      const ended = ({ event }: RunLog.StoredEvent) =>
        event._tag === "ToolDone" && event.tool_call_id === body.tool_call_id
      const at = body.at ?? (body.tool_call_id !== undefined ? events.find(ended)?.seq ?? 0 : run.lastSeq)
      const event = events.find((e) => e.seq === at)
      if (event === undefined) {
        return yield* Effect.fail(
          new ApiError.NotFound({
            code: "event_not_found",
            conversationId: id,
            runId: run.runId,
            ...(at > 0 ? { at } : {})
          })
        )
      }
      const entries = yield* trace.entries(run.runId).pipe(Effect.mapError(internal))
      const input = entries.find((e) => e.kind === "input")?.data as {
        readonly max_iterations?: number
        readonly query?: Content
      } | undefined
      // the original's attachments go with the fork (the steps before the fork point read them too)
      const attachments = Message.filesOf(input?.query).map((part) => part.file)
      // the turns before the forked run's (a turn stored before turns had run ids: the last one of its
      // query without one; all of them when its turn was not stored)
      const byId = turns.findIndex((t) => t.run_id === run.runId)
      const legacy = turns.map((t, i) => (t.run_id === null && t.query === run.query ? i : -1)).filter((i) => i >= 0)
      const index = byId >= 0 ? byId : legacy.length > 0 ? legacy[legacy.length - 1] : -1
      const copied = index >= 0 ? turns[index].turn - 1 : turns.length
      const conversationId = `conv_${randomUUID()}`
      yield* store.fork({
        id: conversationId,
        origin: { conversation_id: id, run_id: run.runId, at, title: conversation.value.title, step: stepOf(event) },
        turns: copied
      }).pipe(Effect.mapError(internal))
      // the fork belongs to the original's user and runs with their memory (docs/memory.md)
      const owner = Option.getOrNull(
        Option.flatMap(yield* store.owner(id).pipe(Effect.mapError(internal)), Option.fromNullable)
      )
      yield* registry.start({
        query: body.replace_query ?? run.query,
        conversationId,
        mode: "react",
        ...(attachments.length > 0 ? { attachments } : {}),
        ...(owner !== null ? { userId: owner } : {}),
        ...(input?.max_iterations !== undefined ? { maxIterations: input.max_iterations } : {}),
        fork: { runId: run.runId, conversationId: run.conversationId, at, last: run.lastSeq, query: run.query }
      })
      yield* Effect.logInfo(`conversation ${conversationId} forked from ${id} at event ${at} of run ${run.runId}`)
      return HttpServerResponse.unsafeJson(
        { conversation_id: conversationId, forked_from: { conversation_id: id, run_id: run.runId, at } },
        { status: 201 }
      )
    })
    yield* router.add("POST", "/api/conversations/:id/fork", ApiError.handle(Effect.zipRight(guard, handler)))
  })
)
