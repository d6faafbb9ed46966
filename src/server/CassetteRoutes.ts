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
import * as Attachments from "../Attachments.js"
import * as Cassette from "../Cassette.js"
import * as Recorder from "../Recorder.js"
import * as Toolkit from "../Toolkit.js"
import * as ApiError from "./ApiError.js"
import * as ApiSchema from "./ApiSchema.js"
import * as RunCassette from "./internal/runCassette.js"
import * as RunLog from "./RunLog.js"
import * as RunTrace from "./RunTrace.js"
import * as ServerConfig from "./ServerConfig.js"

/**
 * The stored pieces of a run as a cassette (`internal/runCassette.ts`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const build = RunCassette.build

/**
 * Where a fork's run continues from (`internal/runCassette.ts`).
 *
 * @since 0.1.0
 * @category models
 */
export const ForkPoint = RunCassette.ForkPoint
/**
 * @since 0.1.0
 * @category models
 */
export type ForkPoint = RunCassette.ForkPoint

/**
 * The steps of the original run stored before the fork point (`internal/runCassette.ts`).
 *
 * @since 0.1.0
 * @category constructors
 */
export const forkPrefix = RunCassette.forkPrefix

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
    const files = yield* Attachments.Attachments
    const guard = ApiError.authorize(settings.apiToken)
    const internal = (e: { readonly message: string }) => new ApiError.InternalError({ message: e.message })
    const handler = Effect.gen(function*() {
      const params = yield* HttpLayerRouter.params
      const id = params.id ?? ""
      const runId = params.run_id ?? ""
      if (!Schema.is(ApiSchema.ConversationId)(id)) {
        return yield* Effect.fail(
          new ApiError.InvalidRequest({ issues: [{ path: "id", message: "Invalid conversation id" }] })
        )
      }
      const row = yield* (runId === "latest" ? log.latest(id) : log.run(runId)).pipe(Effect.mapError(internal))
      if (Option.isNone(row) || row.value.conversationId !== id) {
        return yield* Effect.fail(new ApiError.NotFound({ code: "no_run", conversationId: id }))
      }
      if (row.value.status !== "done") return yield* Effect.fail(new ApiError.RunInProgress({ conversationId: id }))
      const run = row.value
      const [entries, events] = yield* Effect.all([trace.entries(run.runId), log.eventsAfter(run.runId, 0)]).pipe(
        Effect.mapError(internal)
      )
      const cassette = build({
        runId: run.runId,
        conversationId: id,
        query: run.query,
        startedAt: run.startedAt,
        entries: RunCassette.withCutCalls(entries, events),
        events,
        tools: toolkit.tools.map(Recorder.toolSpec),
        fallbackModel: { name: "unknown" }
      })
      // each attachment the run read, once, with its bytes: the cassette replays (and runs live) anywhere
      const attachments = yield* Attachments.embed(files, cassette)
      return HttpServerResponse.unsafeJson(
        Cassette.encode(attachments.length > 0 ? { ...cassette, attachments } : cassette),
        {
          headers: { "content-disposition": `attachment; filename="cassette-${run.runId}.json"` }
        }
      )
    })
    yield* router.add(
      "GET",
      "/api/conversations/:id/runs/:run_id/cassette",
      ApiError.handle(Effect.zipRight(guard, handler))
    )
  })
)
