/**
 * The agent behind the AI SDK's `useChat`: `POST /api/chat` takes the
 * body the default transport sends (`{id, messages: UIMessage[], trigger?,
 * messageId?}`) and answers with the UI message stream (`UiMessageStream`);
 * `GET /api/chat/:id/stream` resumes the chat's active run (204 when there is
 * none), which `useChat({ resume: true })` calls on mount.
 *
 * These are conversation runs, like `POST /api/react`: the chat id is the
 * conversation id, the last (user) message is the query, and the earlier turns
 * come from the server's stored conversation (the `messages` before the last one
 * are not used). The run belongs to the `RunRegistry`: a dropped connection
 * leaves it running for the detach grace, and the resume stream replays it from
 * its first event (the transport's `resumeStreamIsReplay` default) then follows
 * it live. Same auth, body checks and statuses as the rest of `/api` (409 while
 * the chat has an active run). Extra body fields `mode`, `max_iterations` and
 * `output_schema` (from the transport's `body` option) work as on `/api/react`.
 *
 * @since 0.1.0
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import type * as Stream from "effect/Stream"
import * as Attachments from "../Attachments.js"
import { Mode } from "../DagAgent.js"
import * as ApiError from "./ApiError.js"
import * as ApiSchema from "./ApiSchema.js"
import * as ConversationStore from "./ConversationStore.js"
import * as AttachmentInput from "./internal/attachmentInput.js"
import * as Users from "./internal/users.js"
import * as RunRegistry from "./RunRegistry.js"
import * as ServerConfig from "./ServerConfig.js"
import * as UiMessageStream from "./UiMessageStream.js"

/** A part of a UI message (text parts, and `file` parts of the last message: `{mediaType, url, filename?}`). */
const UiPart = Schema.Struct({
  type: Schema.String,
  text: Schema.optional(Schema.String),
  mediaType: Schema.optional(Schema.String),
  url: Schema.optional(Schema.String),
  filename: Schema.optional(Schema.String)
})

/**
 * A `UIMessage` as the transport sends it (fields beyond these are ignored).
 *
 * @since 0.1.0
 * @category models
 */
export const UiMessage = Schema.Struct({
  id: Schema.String,
  role: Schema.Literal("system", "user", "assistant"),
  parts: Schema.Array(UiPart)
})

/**
 * The body of `POST /api/chat`.
 *
 * @since 0.1.0
 * @category models
 */
export const ChatRequest = Schema.Struct({
  /** The chat id: the conversation id. */
  id: ApiSchema.ConversationId,
  messages: Schema.Array(UiMessage).pipe(Schema.minItems(1, { message: () => "Expected at least one message" })),
  trigger: Schema.optional(Schema.Literal("submit-message", "regenerate-message")),
  messageId: Schema.optional(Schema.String),
  max_iterations: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 200, { message: () => "Expected an integer between 1 and 200" }))
  ),
  mode: Schema.optional(Mode),
  /** A typed answer, as on `/api/react`: its partial and final values come as `data-output` parts. */
  output_schema: ApiSchema.ReactRequest.fields.output_schema,
  /** The user (docs/memory.md). */
  user_id: Schema.optional(Schema.Unknown)
})
/**
 * @since 0.1.0
 * @category models
 */
export type ChatRequest = typeof ChatRequest.Type

/** The query of a chat request: the text of its last message, which must be the user's. */
const queryOf = (body: ChatRequest): Effect.Effect<string, ApiError.InvalidRequest> => {
  const index = body.messages.length - 1
  const last = body.messages[index]
  const invalid = (path: string, message: string) =>
    Effect.fail(new ApiError.InvalidRequest({ issues: [{ path: `messages.${index}.${path}`, message }] }))
  if (last.role !== "user") return invalid("role", "The last message must be the user's")
  const text = last.parts.flatMap((p) => (p.type === "text" && p.text !== undefined ? [p.text] : [])).join("\n")
  if (text.trim() === "") return invalid("parts", "Expected a text part")
  if (text.length > ApiSchema.MAX_TEXT_CHARS) {
    return invalid("parts", `longer than ${ApiSchema.MAX_TEXT_CHARS} characters`)
  }
  return Effect.succeed(text)
}

/** The file parts of the last message, as attachments to check and store. */
const filesOf = (body: ChatRequest): ReadonlyArray<AttachmentInput.Spec> => {
  const index = body.messages.length - 1
  return body.messages[index].parts.flatMap((p, j) =>
    p.type === "file"
      ? [AttachmentInput.fromUrl(`messages.${index}.parts.${j}`, p.url ?? "", p.mediaType, p.filename)]
      : []
  )
}

/**
 * `POST /api/chat` and `GET /api/chat/:id/stream` as one router layer (mounted
 * by `Server.Routes`). Needs the `RunRegistry` and `ServerConfig`.
 *
 * @since 0.1.0
 * @category layers
 */
export const ChatRoutes = HttpLayerRouter.use((router) =>
  Effect.gen(function*() {
    const settings = yield* ServerConfig.ServerConfig
    const registry = yield* RunRegistry.RunRegistry
    const store = Option.getOrUndefined(yield* Effect.serviceOption(ConversationStore.ConversationStore))
    const guard = ApiError.authorize(settings.apiToken)
    const files = yield* Attachments.Attachments
    // heartbeats come with the events (`RunRegistry.events`)
    const respond = (conversationId: string, events: Stream.Stream<RunRegistry.Followed>) =>
      HttpServerResponse.stream(
        UiMessageStream.toBytes(UiMessageStream.fromEvents(events, { conversationId })),
        {
          contentType: "text/event-stream",
          headers: { ...UiMessageStream.HEADERS, "x-conversation-id": conversationId }
        }
      )

    yield* router.add(
      "POST",
      "/api/chat",
      ApiError.handle(Effect.zipRight(
        guard,
        Effect.gen(function*() {
          // file parts are base64 data URLs in the body: room for one of the largest beside the rest
          const body = yield* AttachmentInput.decodeBody(ChatRequest, settings)
          const query = yield* queryOf(body)
          const userId = yield* Users.userIdOf(body.user_id)
          // the last message's file parts (data URLs, or https image URLs): checked all, then stored
          const attachments = yield* AttachmentInput.resolve(filesOf(body), files, settings.maxAttachments, "messages")
          yield* Users.claim(store, body.id, userId, query)
          // start + subscribe without a gap: the run is never left without its first lease
          const events = yield* Effect.uninterruptible(Effect.gen(function*() {
            const handle = yield* registry.start({
              query,
              ...(attachments.length > 0 ? { attachments } : {}),
              conversationId: body.id,
              ...(body.max_iterations !== undefined ? { maxIterations: body.max_iterations } : {}),
              ...(body.mode !== undefined ? { mode: body.mode } : {}),
              ...(body.output_schema !== undefined ? { outputSchema: body.output_schema } : {}),
              ...(userId !== undefined ? { userId } : {})
            })
            return yield* registry.events({ runId: handle.runId }, 0).pipe(Effect.orDie)
          }))
          return respond(body.id, events)
        })
      ))
    )

    yield* router.add(
      "GET",
      "/api/chat/:id/stream",
      ApiError.handle(Effect.zipRight(
        guard,
        Effect.gen(function*() {
          const id = (yield* HttpLayerRouter.params).id ?? ""
          if (!Schema.is(ApiSchema.ConversationId)(id)) {
            return yield* Effect.fail(
              new ApiError.InvalidRequest({ issues: [{ path: "id", message: "Invalid chat id" }] })
            )
          }
          // nothing to resume: 204 tells the transport there is no stream
          if (!(yield* registry.isActive(id))) return HttpServerResponse.empty({ status: 204 })
          return yield* registry.events(id, 0).pipe(
            Effect.map((events) => respond(id, events)),
            Effect.catchTag("NotFound", () => Effect.succeed(HttpServerResponse.empty({ status: 204 })))
          )
        })
      ))
    )
  })
)
