/**
 * The agent as an OpenAI model: `POST /v1/chat/completions` and
 * `GET /v1/models`, so any OpenAI client — the official SDKs, this project's
 * own `OpenAiLlm`, tools that speak the chat-completions API — can use the
 * agent as a model.
 *
 * - The last user message is the query; the user and assistant messages before
 *   it are the history. The request's own `tools`, `temperature` etc. are
 *   ignored: the agent runs with its own prompt, tools and models, and the
 *   reply is always text (never `tool_calls`).
 * - Models: `react-agent` (the ReAct loop) and `react-agent-dag` (DAG mode).
 * - `stream: true` streams the answer as `content` deltas and the tool activity
 *   (reasoning, each call and its result, DAG plans and steps) as
 *   `reasoning_content` deltas; `usage` comes in a last chunk without choices
 *   when `stream_options.include_usage` is set. A run that fails mid-stream
 *   ends with a `data: {"error": …}` frame (the openai SDKs raise it).
 * - Runs are stateless (the history is in the request) and live in the
 *   request's fiber: a client that disconnects cancels its run (LLM request
 *   aborted, tools interrupted).
 * - Errors use OpenAI's body, `{error: {message, type, param, code}}`, with the
 *   API's statuses: 400 (the invalid field in `param`), 401 (`API_TOKEN`), 404
 *   `model_not_found`, 413, 415; a failed run is 500 (503 when retryable).
 * - A tool call that needs a person's approval (`REACT_APPROVAL_TOOLS`) stops the run
 *   at once: `422 approval_required` naming the tool, the call and the approval id (a
 *   stream ends with that error frame); the caller has no conversation to approve in.
 *
 * @since 0.1.0
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { randomUUID } from "node:crypto"
import * as Attachments from "../Attachments.js"
import * as DagAgent from "../DagAgent.js"
import * as ReactAgent from "../ReactAgent.js"
import { isOwn, type RunEvent, settledAnswers } from "../RunEvent.js"
import * as ApiError from "./ApiError.js"
import * as AttachmentInput from "./internal/attachmentInput.js"
import * as Typed from "./internal/openAiOutput.js"
import * as Compat from "./internal/openAiRoutes.js"
import * as Users from "./internal/users.js"
import * as RunRegistry from "./RunRegistry.js"
import * as ServerConfig from "./ServerConfig.js"
import * as Sse from "./Sse.js"

/**
 * 404: the request names a model this endpoint does not serve.
 *
 * @since 0.1.0
 * @category errors
 */
export class ModelNotFound extends Schema.TaggedError<ModelNotFound>()("ModelNotFound", { model: Schema.String }) {}

/**
 * The model ids served (`react-agent`, `react-agent-dag`).
 *
 * @since 0.1.0
 * @category constants
 */
export const models: ReadonlyArray<string> = Compat.MODELS.map((m) => m.id)

const OWNER = "effect-react-engine"

type Done = Extract<RunEvent, { _tag: "Done" }>
type Failed = Extract<RunEvent, { _tag: "RunFailed" }>
type Waiting = Extract<RunEvent, { _tag: "ApprovalRequested" }>

/** Ends the run at its first approval request: a `/v1` caller cannot approve (see `Compat.approvalRequired`). */
const untilApproval = (events: Stream.Stream<RunEvent>): Stream.Stream<RunEvent> =>
  Stream.takeUntil(events, (event) => event._tag === "ApprovalRequested")

/**
 * The `/v1` routes as one router layer (mounted by `Server.Routes`). Needs the
 * app's `ReactAgent` and `DagAgent`, `ServerConfig` (bearer token, body limit,
 * heartbeat) and the `RunRegistry` (its shutdown ends open streams).
 *
 * @since 0.1.0
 * @category layers
 */
export const OpenAiRoutes = HttpLayerRouter.use((router) =>
  Effect.gen(function*() {
    const settings = yield* ServerConfig.ServerConfig
    const agents = { react: yield* ReactAgent.ReactAgent, dag: yield* DagAgent.DagAgent }
    const registry = yield* RunRegistry.RunRegistry
    const guard = ApiError.authorize(settings.apiToken)
    const files = yield* Attachments.Attachments
    const startedAt = Math.floor((yield* Clock.currentTimeMillis) / 1000)
    const modelObject = (id: string) => ({ id, object: "model", created: startedAt, owned_by: OWNER })

    const route = <R>(
      method: "GET" | "POST",
      path: `/${string}`,
      handler: Effect.Effect<HttpServerResponse.HttpServerResponse, ApiError.ApiError | ModelNotFound, R>
    ) =>
      router.add(
        method,
        path,
        Effect.zipRight(guard, handler).pipe(
          Effect.catchAll((error) =>
            Effect.succeed(
              error._tag === "ModelNotFound"
                ? Compat.errorResponse(
                  404,
                  `The model \`${error.model}\` does not exist`,
                  "invalid_request_error",
                  "model",
                  "model_not_found"
                )
                : Compat.fromApiError(error)
            )
          )
        )
      )

    const heartbeat = Stream.tick(settings.heartbeatMs).pipe(Stream.map(() => Sse.comment("ping")))

    /** The stream of a run: a role chunk, content / reasoning deltas, then finish + usage, or an error frame. */
    const streamOf = (
      id: Compat.CompletionId,
      events: Stream.Stream<RunEvent>,
      includeUsage: boolean,
      typed: boolean
    ) =>
      Stream.suspend(() => {
        let done: Done | undefined
        let failed: Failed | undefined
        let waiting: Waiting | undefined
        const body = untilApproval(events).pipe(
          // content is append-only: a streamed loop reply shows once it is known to be the answer
          Stream.mapConcat(settledAnswers()),
          // and a typed answer once its value validated
          Stream.mapConcat(typed ? Typed.settledTypedAnswer() : (event: RunEvent) => [event]),
          Stream.mapConcat((event): ReadonlyArray<Uint8Array> => {
            if (event._tag === "AnswerDelta" && isOwn(event)) {
              return [Compat.frame(Compat.chunk(id, { content: event.content }))]
            }
            if (event._tag === "Done") done = event
            else if (event._tag === "RunFailed") failed = event
            else if (event._tag === "ApprovalRequested") waiting = event
            const line = Compat.activityOf(event)
            return line === undefined ? [] : [Compat.frame(Compat.chunk(id, { reasoning_content: line }))]
          }),
          // server shutdown: the run is interrupted, the tail below says so
          Stream.interruptWhenDeferred(registry.shutdown)
        )
        const tail = Stream.suspend(() => {
          if (waiting !== undefined) return Stream.make(Compat.frame(Compat.approvalRequired(waiting)), Compat.DONE)
          if (failed !== undefined || done === undefined) {
            const message = failed?.message ?? "Server is shutting down"
            const type = failed === undefined || failed.retryable ? "server_error" : "api_error"
            return Stream.make(Compat.frame(Compat.errorBody(message, type, null, failed?.code ?? null)), Compat.DONE)
          }
          const finish = Compat.frame(Compat.chunk(id, {}, "stop"))
          return includeUsage
            ? Stream.make(finish, Compat.frame(Compat.usageChunk(id, done.usage)), Compat.DONE)
            : Stream.make(finish, Compat.DONE)
        })
        return Stream.make(Compat.frame(Compat.chunk(id, { role: "assistant", content: "" }))).pipe(
          Stream.concat(body),
          Stream.concat(tail),
          Stream.merge(heartbeat, { haltStrategy: "left" })
        )
      })

    /** Runs to the end in the request's fiber: the answer, the activity text, how it ended. */
    const collect = (events: Stream.Stream<RunEvent>) =>
      Effect.suspend(() => {
        let reasoning = ""
        let done: Done | undefined
        let failed: Failed | undefined
        let waiting: Waiting | undefined
        return Stream.runForEach(untilApproval(events), (event) =>
          Effect.sync(() => {
            if (event._tag === "Done") done = event
            else if (event._tag === "RunFailed") failed = event
            else if (event._tag === "ApprovalRequested") waiting = event
            reasoning += Compat.activityOf(event) ?? ""
          })).pipe(Effect.map(() => ({ reasoning, done, failed, waiting })))
      })

    yield* route(
      "POST",
      "/v1/chat/completions",
      Effect.gen(function*() {
        // inline images and files are base64 in the body: room for one of the largest beside the rest
        const decoded = yield* AttachmentInput.decodeBody(Compat.ChatCompletionRequest, settings)
        // image_url and file parts: stored (all checked first), then referred to by hash
        const body = yield* Compat.withAttachments(decoded, files, settings.maxAttachments)
        const input = Compat.inputOf(body)
        if (input === undefined) {
          return yield* Effect.fail(
            new ApiError.InvalidRequest({
              issues: [{ path: "messages", message: "Expected a user message with content" }]
            })
          )
        }
        const model = Compat.MODELS.find((m) => m.id === body.model)
        if (model === undefined) return yield* Effect.fail(new ModelNotFound({ model: body.model }))
        const userId = yield* Users.userIdOf(body.user, "user")
        const id: Compat.CompletionId = {
          id: `chatcmpl-${randomUUID().replaceAll("-", "")}`,
          created: Math.floor((yield* Clock.currentTimeMillis) / 1000),
          model: model.id
        }
        // the run is consumed by this request (its fiber, or its response stream): a disconnect cancels it
        const events = DagAgent.runWithMode(agents, model.mode, userId === undefined ? input : { ...input, userId })
        if (body.stream === true) {
          return HttpServerResponse.stream(
            streamOf(id, events, body.stream_options?.include_usage === true, input.output !== undefined),
            {
              contentType: "text/event-stream",
              headers: { "cache-control": "no-cache", "x-accel-buffering": "no" }
            }
          )
        }
        const { done, failed, reasoning, waiting } = yield* collect(events)
        // a tool call waits for a person: answered now, saying what waits (the run ended with the request)
        if (waiting !== undefined) {
          return HttpServerResponse.unsafeJson(Compat.approvalRequired(waiting), { status: 422 })
        }
        if (failed !== undefined || done === undefined) {
          const retryable = failed?.retryable ?? true
          // `output_invalid`: the answer did not match `response_format` (code and param say so)
          const invalid = failed?.code === "output_invalid"
          return Compat.errorResponse(
            retryable ? 503 : 500,
            failed?.message ?? "The run ended without a result",
            "server_error",
            invalid ? "response_format" : null,
            failed?.code ?? null
          )
        }
        return HttpServerResponse.unsafeJson(Compat.completion(id, done.answer, reasoning, done.usage))
      })
    )

    yield* route(
      "GET",
      "/v1/models",
      Effect.succeed(HttpServerResponse.unsafeJson({ object: "list", data: models.map(modelObject) }))
    )

    yield* route(
      "GET",
      "/v1/models/:model",
      Effect.flatMap(HttpLayerRouter.params, (params) => {
        const model = params.model ?? ""
        return models.includes(model)
          ? Effect.succeed(HttpServerResponse.unsafeJson(modelObject(model)))
          : Effect.fail(new ModelNotFound({ model }))
      })
    )
  })
)
