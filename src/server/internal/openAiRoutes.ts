/**
 * The OpenAI chat-completions wire format of the agent: the request schema, the
 * run input a request becomes, the tool activity as `reasoning_content` text,
 * completion / chunk bodies and OpenAI-style error bodies.
 *
 * @internal
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type * as Attachments from "../../Attachments.js"
import type { Mode } from "../../DagAgent.js"
import type { ChatMessage, Content } from "../../Message.js"
import * as Message from "../../Message.js"
import type { RunInput } from "../../ReactAgent.js"
import { agentOf, isOwn, type RunEvent } from "../../RunEvent.js"
import type { RunUsage } from "../../Usage.js"
import type * as ApiError from "../ApiError.js"
import { attachmentStatus } from "./apiError.js"
import * as AttachmentInput from "./attachmentInput.js"
import { outputOf, ResponseFormat } from "./openAiOutput.js"

/** The models the endpoint serves, and the mode each runs in. */
export const MODELS: ReadonlyArray<{ readonly id: string; readonly mode: Mode }> = [
  { id: "react-agent", mode: "react" },
  { id: "react-agent-dag", mode: "dag" }
]

/** A PDF (or any attachment) as chat completions send it: its bytes as a data URL, or an uploaded id. */
const FileIn = Schema.Struct({
  type: Schema.Literal("file"),
  file: Schema.Struct({
    filename: Schema.optional(Schema.String),
    file_data: Schema.optional(Schema.String),
    file_id: Schema.optional(Schema.String)
  })
})

const Part = Schema.Union(Message.TextPart, Message.ImagePart, FileIn)

const InMessage = Schema.Struct({
  role: Schema.Literal("system", "developer", "user", "assistant", "tool").annotations({
    message: () => "Expected one of system, developer, user, assistant, tool"
  }),
  content: Schema.optional(Schema.NullOr(Schema.Union(Schema.String, Schema.Array(Part))))
})

type InPart = typeof Part.Type

const specOf = (part: Exclude<InPart, Message.TextPart>, field: string): AttachmentInput.Spec => {
  if (part.type === "image_url") return AttachmentInput.fromUrl(field, part.image_url.url)
  if (part.file.file_id !== undefined) {
    return { _tag: "Id", field: `${field}.file.file_id`, id: part.file.file_id, name: part.file.filename }
  }
  return AttachmentInput.fromUrl(`${field}.file`, part.file.file_data ?? "", undefined, part.file.filename)
}

/**
 * The request with its `image_url` and `file` parts stored (checked all first:
 * one refused stores none) and replaced by file parts that refer to them.
 */
export const withAttachments = (
  request: ChatCompletionRequest,
  store: Attachments.AttachmentsService,
  maxAttachments: number
): Effect.Effect<ChatCompletionRequest, Attachments.AttachmentError> => {
  const specs: Array<AttachmentInput.Spec> = []
  request.messages.forEach((m, i) => {
    if (m.role !== "user" || !Array.isArray(m.content)) return
    m.content.forEach((p, j) => {
      if (p.type !== "text") specs.push(specOf(p, `messages.${i}.content.${j}`))
    })
  })
  if (specs.length === 0) return Effect.succeed(request)
  return Effect.map(AttachmentInput.resolve(specs, store, maxAttachments, "messages"), (refs) => {
    let k = 0
    const messages = request.messages.map((m) =>
      m.role !== "user" || !Array.isArray(m.content)
        ? m
        : { ...m, content: m.content.map((p) => (p.type === "text" ? p : Message.file(refs[k++]))) as never }
    )
    return { ...request, messages }
  })
}

/** `POST /v1/chat/completions` (fields the agent does not use, e.g. `tools`, `temperature`, are ignored). */
export const ChatCompletionRequest = Schema.Struct({
  model: Schema.String,
  messages: Schema.Array(InMessage).pipe(Schema.minItems(1, { message: () => "Expected at least one message" })),
  stream: Schema.optional(Schema.NullOr(Schema.Boolean)),
  stream_options: Schema.optional(
    Schema.NullOr(Schema.Struct({ include_usage: Schema.optional(Schema.NullOr(Schema.Boolean)) }))
  ),
  /** `json_schema` / `json_object`: a typed answer (`openAiOutput.ts`). */
  response_format: Schema.optional(Schema.NullOr(ResponseFormat)),
  /** OpenAI's end-user id: the user whose memory the run uses (docs/memory.md; 400 `invalid_user_id` when it is not a user id). */
  user: Schema.optional(Schema.Unknown)
})
export type ChatCompletionRequest = typeof ChatCompletionRequest.Type

type InMessage = typeof InMessage.Type

// only the text parts are read
const textOf = (m: InMessage): string => Message.textOf((m.content ?? null) as Content | null)

/**
 * The run of a request: the last user message is the query, the user and
 * assistant messages before it the history (system, developer and tool messages
 * and assistant tool calls are not: the agent has its own prompt and tools).
 * `undefined` when there is no user message with content.
 */
export const inputOf = (request: ChatCompletionRequest): Omit<RunInput, "cancel"> | undefined => {
  const messages = request.messages
  let last = -1
  for (let i = messages.length - 1; i >= 0; i--) {
    if (messages[i].role === "user") {
      last = i
      break
    }
  }
  if (last < 0) return undefined
  const content = messages[last].content
  if (content == null || (typeof content === "string" ? content.trim() === "" : content.length === 0)) return undefined
  const history: Array<ChatMessage> = []
  for (const m of messages.slice(0, last)) {
    if (m.role === "user" && m.content != null) history.push(Message.user(m.content as Content))
    else if (m.role === "assistant" && textOf(m) !== "") history.push(Message.assistant(textOf(m)))
  }
  const output = outputOf(request.response_format)
  return { query: content as Content, history, ...(output !== undefined ? { output } : {}) }
}

const MAX_OBSERVATION = 500

const clip = (text: string): string => (text.length > MAX_OBSERVATION ? `${text.slice(0, MAX_OBSERVATION)}…` : text)

const inStep = (stepId: string | undefined, line: string) => (stepId === undefined ? line : `[step ${stepId}] ${line}`)

/** The tool activity of an event as a line of `reasoning_content`; undefined for events that have none. */
export const activityOf = (event: RunEvent): string | undefined => {
  const line = ownActivityOf(event)
  // a sub-agent's activity, marked with its name (its answer is an observation of the parent's call)
  return line === undefined || event._tag === "AgentStart" || event._tag === "AgentDone" || isOwn(event)
    ? line
    : `[${agentOf(event)?.name}] ${line}`
}

const ownActivityOf = (event: RunEvent): string | undefined => {
  switch (event._tag) {
    case "AgentStart":
      return `Sub-agent ${event.agent.name}: ${clip(event.query)}\n`
    case "AgentDone":
      return `Sub-agent ${event.agent.name} ${event.error !== undefined ? `failed: ${clip(event.error)}` : "done"}\n`
    case "ThinkingDone":
      return event.reasoning.trim() === "" ? undefined : inStep(event.step_id, `${event.reasoning.trim()}\n`)
    case "ToolStart":
      return inStep(event.step_id, `→ ${event.tool_name}(${JSON.stringify(event.tool_args) ?? ""})\n`)
    case "ToolDone":
      return inStep(
        event.step_id,
        event.error !== null
          ? `✗ ${event.tool_name}: ${clip(event.error)}\n`
          : `← ${event.tool_name}: ${clip(event.observation)}\n`
      )
    case "PhaseChange":
      return inStep(event.step_id, `Selecting tools among ${event.total_tools}\n`)
    case "Compact":
      return inStep(event.step_id, `Context compacted: ${event.original_messages} → ${event.kept_messages} messages\n`)
    case "Inject":
      return `User interrupt: ${event.content}\n`
    case "DagPlan":
      return `Plan (round ${event.round}): ${event.steps.map((s) => `${s.id}. ${s.task}`).join("; ")}\n`
    case "DagStep":
      return `Step ${event.step_id}: ${event.status}${event.error !== undefined ? ` (${clip(event.error)})` : ""}\n`
    case "DagPhase":
      return `${event.phase.replace("_", " ")}${event.reasoning !== undefined ? `: ${clip(event.reasoning)}` : ""}\n`
    default:
      return undefined
  }
}

/** The OpenAI `usage` object of a run's usage. */
export const usageOf = (usage: RunUsage) => ({
  prompt_tokens: usage.prompt_tokens,
  completion_tokens: usage.completion_tokens,
  total_tokens: usage.total_tokens,
  ...(usage.cached_tokens !== undefined ? { prompt_tokens_details: { cached_tokens: usage.cached_tokens } } : {})
})

/** What identifies one completion in every chunk. */
export interface CompletionId {
  readonly id: string
  readonly created: number
  readonly model: string
}

/** A non-streaming completion. */
export const completion = (c: CompletionId, answer: string, reasoning: string, usage: RunUsage) => ({
  id: c.id,
  object: "chat.completion",
  created: c.created,
  model: c.model,
  choices: [{
    index: 0,
    message: { role: "assistant", content: answer, ...(reasoning !== "" ? { reasoning_content: reasoning } : {}) },
    finish_reason: "stop",
    logprobs: null
  }],
  usage: usageOf(usage)
})

/** A streamed chunk with one choice delta. */
export const chunk = (c: CompletionId, delta: Record<string, unknown>, finishReason: string | null = null) => ({
  id: c.id,
  object: "chat.completion.chunk",
  created: c.created,
  model: c.model,
  choices: [{ index: 0, delta, finish_reason: finishReason, logprobs: null }]
})

/** The last chunk when `stream_options.include_usage` is set: no choices, the usage. */
export const usageChunk = (c: CompletionId, usage: RunUsage) => ({
  id: c.id,
  object: "chat.completion.chunk",
  created: c.created,
  model: c.model,
  choices: [],
  usage: usageOf(usage)
})

/** The `{error: {message, type, param, code}}` body OpenAI clients read. */
export const errorBody = (message: string, type: string, param: string | null = null, code: string | null = null) => ({
  error: { message, type, param, code }
})

/** An OpenAI-style error response. */
export const errorResponse = (
  status: number,
  message: string,
  type: string,
  param: string | null = null,
  code: string | null = null
) => HttpServerResponse.unsafeJson(errorBody(message, type, param, code), { status })

/** The API's errors in OpenAI's error shape (same statuses as on `/api`). */
export const fromApiError = (error: ApiError.ApiError): HttpServerResponse.HttpServerResponse => {
  switch (error._tag) {
    case "InvalidRequest":
      return errorResponse(400, error.message, "invalid_request_error", error.issues[0]?.path || null)
    case "Unauthorized":
      return HttpServerResponse.unsafeJson(
        errorBody("Missing or invalid bearer token", "invalid_request_error", null, "invalid_api_key"),
        { status: 401, headers: { "www-authenticate": "Bearer" } }
      )
    case "PayloadTooLarge":
      return errorResponse(413, `Request body exceeds ${error.limit} bytes`, "invalid_request_error")
    case "UnsupportedMediaType":
      return errorResponse(
        415,
        "The body must be JSON, sent with Content-Type: application/json",
        "invalid_request_error"
      )
    case "AttachmentError":
      return errorResponse(
        attachmentStatus(error.code),
        error.message,
        "invalid_request_error",
        error.field ?? null,
        error.code
      )
    case "InvalidUserId":
      return errorResponse(400, error.message, "invalid_request_error", "user", "invalid_user_id")
    default:
      return errorResponse(500, error.message, "server_error")
  }
}

type Waiting = Extract<RunEvent, { _tag: "ApprovalRequested" }>

/**
 * A `/v1` run cannot wait for a person (it lives in the request, and the caller has no
 * conversation to approve in): at its first approval request it is stopped, and the reply
 * says what waited — `422 approval_required` naming the tool, the call and the approval id
 * (the same body is the error frame of a stream).
 */
export const approvalRequired = (waiting: Waiting) => ({
  error: {
    message: `The run stopped at a tool call that needs a person's approval: ${waiting.tool_name}` +
      `${
        waiting.tool_call_id !== undefined ? ` (tool call ${waiting.tool_call_id})` : ""
      }, approval ${waiting.approval_id}. ` +
      "/v1/chat/completions cannot wait for an approval: run it through POST /api/react or /api/chat, " +
      "or leave the tool out of REACT_APPROVAL_TOOLS",
    type: "invalid_request_error",
    param: null,
    code: "approval_required",
    approval: {
      approval_id: waiting.approval_id,
      tool_name: waiting.tool_name,
      ...(waiting.tool_call_id !== undefined ? { tool_call_id: waiting.tool_call_id } : {})
    }
  }
})

const encoder = new TextEncoder()

/** One `data:` frame of an OpenAI stream. */
export const frame = (body: unknown): Uint8Array => encoder.encode(`data: ${JSON.stringify(body)}\n\n`)

/** The end of an OpenAI stream. */
export const DONE: Uint8Array = encoder.encode("data: [DONE]\n\n")
