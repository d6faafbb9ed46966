/**
 * The HTTP API routes (`/api/*`, `/health`) on `HttpLayerRouter`. Services are
 * resolved once when the layer is built; each handler checks auth, then decodes
 * its body (400 before any lookup), then looks things up (404 / 409).
 *
 * @since 0.1.0
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Predicate from "effect/Predicate"
import * as Schema from "effect/Schema"
import { randomUUID } from "node:crypto"
import type * as Approvals from "../Approvals.js"
import * as Attachments from "../Attachments.js"
import * as Budget from "../Budget.js"
import * as Interrupts from "../Interrupts.js"
import * as ReactAgent from "../ReactAgent.js"
import * as Toolkit from "../Toolkit.js"
import * as ApiError from "./ApiError.js"
import * as ApiSchema from "./ApiSchema.js"
import { AppInfo, toolCatalogue } from "./AppInfo.js"
import * as ConversationStore from "./ConversationStore.js"
import * as AttachmentInput from "./internal/attachmentInput.js"
import * as Compat from "./internal/openAiRoutes.js"
import * as Users from "./internal/users.js"
import * as RunRegistry from "./RunRegistry.js"
import * as ServerConfig from "./ServerConfig.js"
import * as Sse from "./Sse.js"

const storeFailure = (error: { readonly message: string }) => new ApiError.InternalError({ message: error.message })

/**
 * The `Last-Event-ID` cursor: absent or empty = 0; else a plain decimal cursor
 * (`ApiSchema.Cursor`), anything else (`0x10`, `1e3`, `-1`, `1.5`) a 400 — never
 * a resume from another place than the client's.
 */
const lastEventId = (request: HttpServerRequest.HttpServerRequest): Effect.Effect<number, ApiError.InvalidRequest> => {
  const raw = request.headers["last-event-id"]
  if (raw === undefined || raw.trim() === "") return Effect.succeed(0)
  return Schema.decodeUnknown(ApiSchema.Cursor)(raw.trim()).pipe(
    Effect.mapError(() =>
      new ApiError.InvalidRequest({ issues: [{ path: "Last-Event-ID", message: ApiSchema.CURSOR_MESSAGE }] })
    )
  )
}

const isRouteNotFound = (error: unknown): error is HttpServerError.RouteNotFound =>
  Predicate.isTagged(error, "RouteNotFound")

/** The path of a request, without its query (which may hold `access_token`), cut to 200 characters. */
const pathOf = (url: string): string => {
  const path = url.split("?")[0] ?? ""
  return path.length > 200 ? `${path.slice(0, 200)}…` : path
}

/**
 * The answer when no route matches (unknown path, or a method the path does not
 * take): 404 in the documented JSON error shape, `{error: "not_found", message,
 * method, path}` — OpenAI's `{error: {message, type, param, code}}` under `/v1`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const routeNotFound = (method: string, url: string): HttpServerResponse.HttpServerResponse => {
  const path = pathOf(url)
  const message = `No route for ${method} ${path}`
  return path === "/v1" || path.startsWith("/v1/")
    ? Compat.errorResponse(404, message, "invalid_request_error", null, "not_found")
    : HttpServerResponse.unsafeJson({ error: "not_found", message, method, path }, { status: 404 })
}

/**
 * A global router middleware that answers unmatched requests with `routeNotFound`
 * (the platform's default is a 404 with an empty body). `Server.Routes` includes it.
 *
 * @since 0.1.0
 * @category layers
 */
export const NotFoundRoutes = HttpLayerRouter.middleware(
  (app) =>
    Effect.catchIf(
      app,
      isRouteNotFound,
      (error) => Effect.succeed(routeNotFound(error.request.method, error.request.url))
    ),
  { global: true }
)

/** The answer to a refused approval decision: 404 unknown, 409 already decided or not the call's. */
const refusedDecision = (error: Approvals.DecideError): HttpServerResponse.HttpServerResponse => {
  switch (error._tag) {
    case "ApprovalNotFound":
      return HttpServerResponse.unsafeJson({
        error: "approval_not_found",
        message: "No such approval in this conversation",
        conversation_id: error.conversationId,
        approval_id: error.approvalId
      }, { status: 404 })
    case "AlreadyDecided":
      return HttpServerResponse.unsafeJson({
        error: "already_decided",
        message: error.message,
        approval_id: error.approvalId,
        status: error.status
      }, { status: 409 })
    case "ApprovalMismatch":
      return HttpServerResponse.unsafeJson({
        error: "approval_mismatch",
        message: error.message,
        approval_id: error.approvalId,
        field: error.field
      }, { status: 409 })
  }
}

/**
 * Every API route, as one router layer.
 *
 * @since 0.1.0
 * @category layers
 */
export const ApiRoutes = HttpLayerRouter.use((router) =>
  Effect.gen(function*() {
    const settings = yield* ServerConfig.ServerConfig
    const registry = yield* RunRegistry.RunRegistry
    const store = yield* ConversationStore.ConversationStore
    const interrupts = yield* Interrupts.Interrupts
    const agent = yield* ReactAgent.ReactAgent
    const info = yield* AppInfo
    const toolkit = yield* Toolkit.Toolkit
    const limit = settings.maxBodyBytes
    const files = yield* Attachments.Attachments
    const guard = ApiError.authorize(settings.apiToken)
    const sse = (following: RunRegistry.Following, conversationId: string) =>
      Sse.response(following, {
        shutdown: registry.shutdown,
        maxBacklogBytes: settings.sseMaxBacklogBytes,
        headers: { "x-conversation-id": conversationId }
      })

    const api = <E extends ApiError.ApiError, R>(
      method: "GET" | "POST",
      path: `/${string}`,
      handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
    ) => router.add(method, path, ApiError.handle(Effect.zipRight(guard, handler)))

    yield* router.add(
      "GET",
      "/health",
      HttpServerResponse.unsafeJson({ status: "ok", model: info.model, demo: info.demo, tools: toolkit.size })
    )

    // every tool the agent has, with where it comes from, and the MCP servers that did not start
    const catalogue = toolCatalogue(info, toolkit)
    yield* api("GET", "/api/tools", Effect.sync(() => HttpServerResponse.unsafeJson(catalogue)))

    yield* api(
      "POST",
      "/api/react",
      Effect.gen(function*() {
        // inline attachments are base64 in the body: room for one of the largest beside the rest
        const body = yield* AttachmentInput.decodeBody(ApiSchema.ReactRequest, settings)
        // the conversation is the user's, or becomes theirs (docs/memory.md): 400 / 409 before anything starts
        const userId = yield* Users.userIdOf(body.user_id)
        // every attachment checked, then stored, before the run starts (a refusal stores nothing, starts nothing)
        const attachments = body.attachments === undefined
          ? []
          : yield* AttachmentInput.resolve(AttachmentInput.fromReact(body.attachments), files, settings.maxAttachments)
        const requested = body.conversation_id ?? (userId === undefined ? undefined : `conv_${randomUUID()}`)
        if (requested !== undefined) yield* Users.claim(store, requested, userId, body.query)
        // start + attach without a gap: the run is never left without its first lease
        const { conversationId, following } = yield* Effect.uninterruptible(Effect.gen(function*() {
          const handle = yield* registry.start({
            query: body.query,
            ...(attachments.length > 0 ? { attachments } : {}),
            ...(requested !== undefined ? { conversationId: requested } : {}),
            ...(body.max_iterations !== undefined ? { maxIterations: body.max_iterations } : {}),
            ...(body.mode !== undefined ? { mode: body.mode } : {}),
            ...(body.output_schema !== undefined ? { outputSchema: body.output_schema } : {}),
            ...(userId !== undefined ? { userId } : {})
          })
          // the run just started (not "the conversation's latest", which another start could have become)
          const following = yield* registry.follow({ runId: handle.runId }, 0).pipe(Effect.orDie)
          return { conversationId: handle.conversationId, following }
        }))
        return yield* sse(following, conversationId)
      })
    )

    yield* api(
      "GET",
      "/api/react/events",
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const query = yield* HttpServerRequest.schemaSearchParams(ApiSchema.EventsQuery).pipe(
          Effect.mapError((error) =>
            new ApiError.InvalidRequest({
              issues: error._tag === "ParseError"
                ? ApiError.formatIssues(error)
                : [{ path: "", message: "Invalid query string" }]
            })
          )
        )
        const fromHeader = yield* lastEventId(request)
        const after = query.after ?? fromHeader
        // nothing more will come: 204 tells a browser EventSource to stop reconnecting
        if (yield* registry.caughtUp(query.conversation_id, after)) {
          return HttpServerResponse.empty({ status: 204 })
        }
        const following = yield* registry.follow(query.conversation_id, after).pipe(
          Effect.catchTag("NotFound", (error) =>
            store.exists(query.conversation_id).pipe(
              Effect.mapError(storeFailure),
              Effect.flatMap((exists) =>
                Effect.fail(
                  exists
                    ? error
                    : new ApiError.NotFound({ code: "conversation_not_found", conversationId: query.conversation_id })
                )
              )
            ))
        )
        return yield* sse(following, query.conversation_id)
      })
    )

    yield* api(
      "POST",
      "/api/react/inject",
      Effect.gen(function*() {
        const body = yield* ApiError.decodeBody(ApiSchema.InjectRequest, limit)
        const injection = yield* interrupts.inject(body.conversation_id, body.content).pipe(
          Effect.catchTag("NoActiveRun", () =>
            Effect.fail(new ApiError.NotFound({ code: "no_active_execution", conversationId: body.conversation_id })))
        )
        return HttpServerResponse.unsafeJson({ id: injection.id })
      })
    )

    yield* api(
      "POST",
      "/api/react/inject/recall",
      Effect.gen(function*() {
        const body = yield* ApiError.decodeBody(ApiSchema.RecallRequest, limit)
        const recalled = yield* interrupts.recall(body.conversation_id, body.id)
        return HttpServerResponse.unsafeJson({ recalled })
      })
    )

    yield* api(
      "POST",
      "/api/react/approve",
      Effect.gen(function*() {
        const body = yield* ApiError.decodeBody(ApiSchema.ApproveRequest, limit)
        return yield* agent.approve({
          conversationId: body.conversation_id,
          approvalId: body.approval_id,
          decision: body.decision,
          ...(body.reason !== undefined ? { reason: body.reason } : {}),
          ...(body.tool_call_id !== undefined ? { toolCallId: body.tool_call_id } : {}),
          ...(body.args_hash !== undefined ? { argsHash: body.args_hash } : {})
        }).pipe(
          Effect.match({
            onFailure: refusedDecision,
            onSuccess: (decided) =>
              HttpServerResponse.unsafeJson(decided)
          })
        )
      })
    )

    yield* api(
      "POST",
      "/api/react/budget",
      Effect.gen(function*() {
        const body = yield* ApiError.decodeBody(ApiSchema.BudgetRequest, limit)
        // the run waits like an approval: its wait is the conversation's pending budget approval
        const waiting = (yield* agent.approvals.pending(body.conversation_id)).find((p) =>
          p.toolName === Budget.WAIT_TOOL
        )
        if (waiting === undefined) {
          return HttpServerResponse.unsafeJson({
            error: "no_budget_wait",
            message: "No run of this conversation waits for more budget",
            conversation_id: body.conversation_id
          }, { status: 404 })
        }
        return yield* agent.approve({
          conversationId: body.conversation_id,
          approvalId: waiting.approvalId,
          decision: body.decision === "extend" ? "approve" : "deny",
          ...(body.decision === "extend" ? { reason: String(body.add_usd) } : {})
        }).pipe(
          Effect.match({
            onFailure: refusedDecision,
            onSuccess: () =>
              HttpServerResponse.unsafeJson({
                conversation_id: body.conversation_id,
                decision: body.decision,
                ...(body.decision === "extend" ? { add_usd: body.add_usd } : {})
              })
          })
        )
      })
    )

    yield* api(
      "POST",
      "/api/react/cancel",
      Effect.gen(function*() {
        const body = yield* ApiError.decodeBody(ApiSchema.CancelRequest, limit)
        const cancelled = yield* registry.cancel(body.conversation_id)
        if (!cancelled) {
          return yield* Effect.fail(
            new ApiError.NotFound({ code: "no_active_execution", conversationId: body.conversation_id })
          )
        }
        return HttpServerResponse.unsafeJson({ cancelled: true, conversation_id: body.conversation_id })
      })
    )

    yield* api(
      "GET",
      "/api/conversations",
      Effect.gen(function*() {
        const conversations = yield* store.list().pipe(Effect.mapError(storeFailure))
        // a run waiting for a person says so; a conversation whose first run waits is not stored yet
        const waiting = new Set((yield* agent.approvals.pending()).map((p) =>
          p.conversationId
        ))
        const listed = conversations.map((c) => ({ ...c, waiting_approval: waiting.has(c.id) }))
        for (const c of conversations) waiting.delete(c.id)
        const unsaved = [...waiting].map((id) => ({
          id,
          title: "",
          updated_at: null,
          turns: 0,
          waiting_approval: true
        }))
        return HttpServerResponse.unsafeJson({ conversations: [...unsaved, ...listed] })
      })
    )

    yield* api(
      "GET",
      "/api/conversations/:id",
      Effect.gen(function*() {
        const params = yield* HttpLayerRouter.params
        const id = params.id ?? ""
        if (!Schema.is(ApiSchema.ConversationId)(id)) {
          return yield* Effect.fail(
            new ApiError.InvalidRequest({ issues: [{ path: "id", message: "Invalid conversation id" }] })
          )
        }
        const found = yield* store.get(id).pipe(Effect.mapError(storeFailure))
        if (Option.isNone(found)) {
          return yield* Effect.fail(new ApiError.NotFound({ code: "conversation_not_found", conversationId: id }))
        }
        const active = yield* registry.isActive(id)
        const waiting = yield* agent.approvals.pending(id)
        return HttpServerResponse.unsafeJson({ ...found.value, active, waiting_approval: waiting.length > 0 })
      })
    )
  })
)
