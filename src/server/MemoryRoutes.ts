/**
 * A user's memory over HTTP (docs/memory.md):
 *
 * - `GET /api/users/:user_id/memory` → `{working_memory, items}` (what the
 *   memory holds of the user: the working memory and every indexed turn);
 * - `DELETE /api/users/:user_id/memory` → 204: the working memory, indexed
 *   turns and vectors are gone, and no later run recalls any of it. Runs of
 *   the user in flight keep what they recalled at their start, but write
 *   nothing more to the memory (`update_memory` is refused, their turn is not
 *   indexed). With `?conversations=true` the user's conversations go too: their
 *   runs are cancelled first (409 `run_in_progress` when one is still running
 *   5 s later: ask again), then every stored trace of them (turns, events,
 *   traces, the workflow engine's messages). On SQLite the WAL is
 *   checkpointed afterwards: nothing forgotten is left in the database files.
 *
 * @since 0.1.0
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as SqlClient from "@effect/sql/SqlClient"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Memory from "../Memory.js"
import * as ApiError from "./ApiError.js"
import * as ConversationStore from "./ConversationStore.js"
import * as DurableRuns from "./DurableRuns.js"
import * as ForgetRuns from "./internal/forgetRuns.js"
import * as Users from "./internal/users.js"
import * as RunRegistry from "./RunRegistry.js"
import * as ServerConfig from "./ServerConfig.js"
import * as SqlMemory from "./SqlMemory.js"

const internal = (error: { readonly message: string }) => new ApiError.InternalError({ message: error.message })

/**
 * `GET` and `DELETE /api/users/:user_id/memory`, as one router layer (mounted
 * by `Server.Routes`). Without a `Memory` the user has none: `GET` answers an
 * empty one, `DELETE` still deletes conversations when asked.
 *
 * @since 0.1.0
 * @category layers
 */
export const MemoryRoutes = HttpLayerRouter.use((router) =>
  Effect.gen(function*() {
    const settings = yield* ServerConfig.ServerConfig
    const registry = yield* RunRegistry.RunRegistry
    const store = yield* ConversationStore.ConversationStore
    const sql = yield* SqlClient.SqlClient
    const memory = Option.getOrUndefined(yield* Effect.serviceOption(Memory.Memory))
    const guard = ApiError.authorize(settings.apiToken)
    const userOf = Effect.flatMap(HttpLayerRouter.params, (params) => Users.userIdOf(params.user_id ?? "", "user_id"))
      .pipe(
        Effect.flatMap((
          userId
        ) => (userId === undefined
          ? Effect.fail(new Users.InvalidUserId({ field: "user_id" }))
          : Effect.succeed(userId))
        )
      )

    yield* router.add(
      "GET",
      "/api/users/:user_id/memory",
      ApiError.handle(Effect.zipRight(
        guard,
        Effect.gen(function*() {
          const userId = yield* userOf
          const known = memory === undefined
            ? { working_memory: {}, items: [] }
            : yield* memory.inspect(userId).pipe(Effect.mapError(internal))
          return HttpServerResponse.unsafeJson(known)
        })
      ))
    )

    /** The user's conversations, their runs cancelled first (a run still going after the wait: 409). */
    const dropConversations = (userId: string) =>
      Effect.gen(function*() {
        const ids = yield* store.ofUser(userId).pipe(Effect.mapError(internal))
        yield* Effect.forEach(ids, (id) => registry.cancel(id), { discard: true })
        const active = yield* Effect.filter(ids, (id) => registry.isActive(id))
        if (active.length > 0) return yield* Effect.fail(new ApiError.RunInProgress({ conversationId: active[0] }))
        const runs = yield* ForgetRuns.runsOf(sql, ids).pipe(Effect.mapError(internal))
        const executions = yield* Effect.forEach(
          runs,
          (runId) => DurableRuns.AgentRun.executionId({ runId, conversationId: "", query: "", mode: "react" })
        )
        yield* ForgetRuns.remove(sql, ids, runs, executions).pipe(Effect.mapError(internal))
        yield* store.remove(ids).pipe(Effect.mapError(internal))
        yield* Effect.logInfo(`user memory: ${ids.length} conversations and ${runs.length} runs deleted`)
      })

    yield* router.add(
      "DELETE",
      "/api/users/:user_id/memory",
      ApiError.handle(Effect.zipRight(
        guard,
        Effect.gen(function*() {
          const userId = yield* userOf
          const request = yield* HttpServerRequest.HttpServerRequest
          const conversations = new URL(request.url, "http://localhost").searchParams.get("conversations") === "true"
          // the memory first: runs of the user still going write nothing more to it
          if (memory !== undefined) yield* memory.forget(userId).pipe(Effect.mapError(internal))
          if (conversations) yield* dropConversations(userId)
          yield* SqlMemory.checkpoint(sql).pipe(Effect.mapError(internal))
          return HttpServerResponse.empty({ status: 204 })
        })
      ))
    )
  })
)
