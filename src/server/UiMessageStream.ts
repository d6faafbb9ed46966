/**
 * A run's events (`RunRegistry`'s stream) as the AI SDK's UI message stream
 * (protocol v1, what `useChat`'s `DefaultChatTransport` reads), an encoder at
 * the edge: each event's wire payload (`EventWire.toWire`) becomes chunks:
 *
 * | run event | UI message chunks |
 * |---|---|
 * | first | `start` (`messageMetadata.conversation_id`) |
 * | `thinking` start (an iteration) | `finish-step` of the previous one, `start-step` |
 * | `thinking` done with reasoning | `reasoning-start` / `reasoning-delta` / `reasoning-end` |
 * | `iteration` start / done | `tool-input-available`, then `tool-output-available` (the observation) or `tool-output-error` (`dynamic: true`: the tools are the server's) |
 * | `answer` signal | `start-step` only when no step is open (the answer ends the last iteration's step) |
 * | `answer` start / delta / done | `text-start` / `text-delta` / `text-end` |
 * | `answer` reset | `text-end`, `data-answer` `{status:"reset"}` (a new text part follows) |
 * | `iteration` progress (ephemeral) | `data-progress` (id `progress-<call id>`: one part per call, updated in place) |
 * | `answer` output_partial (ephemeral), `done.output` | `data-output` (id `output`: the partial value, then the decoded one) |
 * | `phase`, `compact`, `inject`, `approval`, `dag`, … | `data-<channel>` with the payload |
 * | `error` | `error` (`errorText`) |
 * | `done` | `finish-step`, `finish` (`messageMetadata`: `usage`, `iterations`, `elapsed`); a cancelled run: `message-metadata` + `abort` |
 *
 * DAG steps' events (they carry `step_id`) open no steps of their own; their tool
 * call ids are prefixed with the step id (steps' ids may repeat). A call still
 * open at the end gets a `tool-output-error` ("interrupted"). The body starts with
 * `: ping`, has one for each heartbeat, and ends with `data: [DONE]`.
 *
 * @since 0.1.0
 */
import * as Stream from "effect/Stream"
import { type Channel, toWire } from "./EventWire.js"
import type { Followed } from "./internal/runFeed.js"
import { isItem } from "./internal/runFeed.js"

/** An event as the UI chunks are made from it: its SSE channel and payload. */
interface WireEvent {
  readonly channel: Channel
  readonly data: Record<string, unknown>
}

/**
 * One UI message chunk (`type` and its fields, as the AI SDK's
 * `UIMessageChunk`).
 *
 * @since 0.1.0
 * @category models
 */
export type UiChunk = { readonly type: string } & { readonly [key: string]: unknown }

/**
 * The response headers of a UI message stream.
 *
 * @since 0.1.0
 * @category constants
 */
export const HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
  "x-vercel-ai-ui-message-stream": "v1"
}

interface State {
  started: boolean
  stepOpen: boolean
  text: string | undefined
  texts: number
  /** Tool calls started and not finished (UI call id → true). */
  readonly open: Set<string>
  failed: boolean
  done: boolean
}

const str = (u: unknown): string | undefined => (typeof u === "string" ? u : undefined)

const callId = (data: Record<string, unknown>): string => {
  const id = str(data.tool_call_id) ?? `call_${String(data.iteration)}`
  const step = str(data.step_id)
  return step === undefined ? id : `${step}:${id}`
}

const finishStep = (s: State, out: Array<UiChunk>) => {
  if (s.stepOpen) out.push({ type: "finish-step" })
  s.stepOpen = false
}

const startStep = (s: State, out: Array<UiChunk>) => {
  finishStep(s, out)
  out.push({ type: "start-step" })
  s.stepOpen = true
}

const endText = (s: State, out: Array<UiChunk>) => {
  if (s.text !== undefined) out.push({ type: "text-end", id: s.text })
  s.text = undefined
}

const toolInput = (data: Record<string, unknown>): UiChunk => ({
  type: "tool-input-available",
  toolCallId: callId(data),
  toolName: str(data.tool_name) ?? "unknown",
  input: data.tool_args ?? {},
  dynamic: true
})

const onStep = (s: State, data: Record<string, unknown>, out: Array<UiChunk>) => {
  const nested = data.step_id !== undefined
  if (data.type === "thinking") {
    if (data.status === "start") {
      if (!nested) startStep(s, out)
      return
    }
    const reasoning = str(data.reasoning) ?? ""
    if (reasoning.trim() === "") return
    const id = `reasoning-${nested ? `${String(data.step_id)}-` : ""}${String(data.iteration)}`
    out.push({ type: "reasoning-start", id }, { type: "reasoning-delta", id, delta: reasoning }, {
      type: "reasoning-end",
      id
    })
    return
  }
  if (data.type === "iteration") {
    const id = callId(data)
    // a tool's progress: one data part per call, updated in place (same id) as reports come
    if (data.status === "progress") return void out.push({ type: "data-progress", id: `progress-${id}`, data })
    if (data.status === "start") {
      s.open.add(id)
      out.push(toolInput(data))
      return
    }
    // a result whose start was not seen (cut from the replay buffer) still needs its input part
    if (!s.open.delete(id)) out.push(toolInput(data))
    const error = str(data.error)
    out.push(
      error !== undefined
        ? { type: "tool-output-error", toolCallId: id, errorText: error, dynamic: true }
        : { type: "tool-output-available", toolCallId: id, output: data.observation ?? "", dynamic: true }
    )
    return
  }
  // the answer belongs to the last iteration's step (a run without iterations opens one)
  if (data.type === "answer" && !s.stepOpen) startStep(s, out)
}

const onAnswer = (s: State, data: Record<string, unknown>, out: Array<UiChunk>) => {
  // a typed answer as parsed so far: one data part, updated in place (the decoded value replaces it at `done`)
  if (data.type === "output_partial") return void out.push({ type: "data-output", id: "output", data: data.value })
  switch (data.status) {
    case "start":
      if (!s.stepOpen) startStep(s, out)
      endText(s, out)
      s.text = `text-${++s.texts}`
      out.push({ type: "text-start", id: s.text })
      return
    case "delta":
      if (s.text === undefined) onAnswer(s, { status: "start" }, out)
      out.push({ type: "text-delta", id: s.text!, delta: str(data.content) ?? "" })
      return
    case "done":
      endText(s, out)
      return
    case "reset":
      endText(s, out)
      out.push({ type: "data-answer", data })
  }
}

const closeCalls = (s: State, out: Array<UiChunk>) => {
  for (const id of s.open) {
    out.push({ type: "tool-output-error", toolCallId: id, errorText: "interrupted", dynamic: true })
  }
  s.open.clear()
}

const onDone = (s: State, data: Record<string, unknown>, out: Array<UiChunk>) => {
  s.done = true
  endText(s, out)
  closeCalls(s, out)
  finishStep(s, out)
  const { answer: _, pending_injections: pending, ...rest } = data
  const metadata = { ...rest, pending_injections: pending ?? [] }
  if (data.output !== undefined) out.push({ type: "data-output", id: "output", data: data.output })
  if (data.cancelled === true) {
    out.push({ type: "message-metadata", messageMetadata: metadata }, { type: "abort", reason: "cancelled" })
  } else {
    out.push({ type: "finish", finishReason: s.failed ? "error" : "stop", messageMetadata: metadata })
  }
}

const chunksOf = (s: State, event: WireEvent, conversationId: string | undefined): Array<UiChunk> => {
  const out: Array<UiChunk> = []
  if (!s.started) {
    s.started = true
    out.push(
      conversationId === undefined
        ? { type: "start" }
        : { type: "start", messageMetadata: { conversation_id: conversationId } }
    )
  }
  // a sub-agent's events (`agent` set) are not this message's text or tool parts: data parts of their own
  if (event.data.agent !== undefined && event.channel !== "agent") {
    out.push({ type: "data-agent", data: { channel: event.channel, ...event.data } })
    return out
  }
  switch (event.channel) {
    case "step":
      onStep(s, event.data, out)
      break
    case "answer":
      onAnswer(s, event.data, out)
      break
    case "error":
      s.failed = true
      out.push({ type: "error", errorText: str(event.data.message) ?? "The run failed" })
      break
    case "done":
      onDone(s, event.data, out)
      break
    default:
      out.push({ type: `data-${event.channel}`, data: event.data })
  }
  return out
}

/**
 * The UI message chunks of a run's events; a heartbeat passes through. A stream
 * that ends without `done` (server shutdown) ends with an `error` chunk and an
 * `abort`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromEvents = (
  events: Stream.Stream<Followed>,
  options?: { readonly conversationId?: string }
): Stream.Stream<UiChunk | Heartbeat> =>
  Stream.suspend(() => {
    const state: State = {
      started: false,
      stepOpen: false,
      text: undefined,
      texts: 0,
      open: new Set(),
      failed: false,
      done: false
    }
    const tail = Stream.suspend(() => {
      if (state.done) return Stream.empty
      const out: Array<UiChunk> = state.started ? [] : [{ type: "start" }]
      endText(state, out)
      closeCalls(state, out)
      finishStep(state, out)
      out.push({ type: "error", errorText: "The run's stream ended before the run did (server shutting down?)" }, {
        type: "abort",
        reason: "stream ended"
      })
      return Stream.fromIterable(out)
    })
    return events.pipe(
      Stream.mapConcat((item): ReadonlyArray<UiChunk | Heartbeat> =>
        isItem(item) ? chunksOf(state, toWire(item.event), options?.conversationId) : [item]
      ),
      Stream.concat(tail)
    )
  })

/** A keep-alive (`RunRegistry.Heartbeat`), encoded as `: ping`. */
type Heartbeat = Exclude<Followed, { readonly event: unknown }>

const encoder = new TextEncoder()

/**
 * One chunk as an SSE frame (`data: <json>`).
 *
 * @since 0.1.0
 * @category encoding
 */
export const encode = (chunk: UiChunk): Uint8Array => encoder.encode(`data: ${JSON.stringify(chunk)}\n\n`)

/**
 * The last frame of a UI message stream.
 *
 * @since 0.1.0
 * @category encoding
 */
export const DONE: Uint8Array = encoder.encode("data: [DONE]\n\n")

const PING: Uint8Array = encoder.encode(": ping\n\n")

/**
 * The response body: `: ping` (it flushes the headers), every chunk encoded (a
 * heartbeat as `: ping`), then `[DONE]`.
 *
 * @since 0.1.0
 * @category encoding
 */
export const toBytes = (chunks: Stream.Stream<UiChunk | Heartbeat>): Stream.Stream<Uint8Array> =>
  Stream.succeed(PING).pipe(
    Stream.concat(Stream.map(chunks, (chunk) => ("type" in chunk ? encode(chunk) : PING))),
    Stream.concat(Stream.succeed(DONE))
  )
