/**
 * A small SSE client for the server tests, on `fetch` + `eventsource-parser`:
 * POST or GET a stream, collect its events (id, event, JSON data) and comments,
 * optionally hang up early (a client disconnect).
 */
import { createParser, type EventSourceMessage } from "eventsource-parser"

/** One parsed SSE event. */
export interface SseEvent {
  readonly id: string | undefined
  readonly event: string
  readonly data: any
}

/** What a stream delivered. */
export interface SseResult {
  readonly status: number
  readonly headers: Headers
  readonly events: ReadonlyArray<SseEvent>
  readonly comments: ReadonlyArray<string>
  /** The body when the response was not an event stream (an error). */
  readonly body?: any
  /** True when `until` stopped the read (the client hung up). */
  readonly hungUp: boolean
}

/** Options of `openSse`. */
export interface SseOptions {
  readonly method?: "GET" | "POST"
  readonly body?: unknown
  readonly headers?: Record<string, string>
  /** Hang up as soon as this returns true for an event (checked after each event). */
  readonly until?: (event: SseEvent, all: ReadonlyArray<SseEvent>) => boolean
  /** Called for each event as it arrives. */
  readonly onEvent?: (event: SseEvent) => void | Promise<void>
  /** Give up after this long (default 15 s): the promise rejects. */
  readonly timeoutMs?: number
}

const toEvent = (message: EventSourceMessage): SseEvent => {
  let data: any = message.data
  try {
    data = JSON.parse(message.data)
  } catch {
    // keep the text
  }
  return { id: message.id, event: message.event ?? "message", data }
}

/**
 * Opens an SSE request and reads it to its end (or until `until`).
 */
export const openSse = async (url: string, options: SseOptions = {}): Promise<SseResult> => {
  const controller = new AbortController()
  const timer = setTimeout(() => controller.abort(new Error(`SSE read timed out: ${url}`)), options.timeoutMs ?? 15_000)
  try {
    const response = await fetch(url, {
      method: options.method ?? (options.body === undefined ? "GET" : "POST"),
      headers: {
        ...(options.body === undefined ? {} : { "content-type": "application/json" }),
        ...options.headers
      },
      ...(options.body === undefined
        ? {}
        : { body: typeof options.body === "string" ? options.body : JSON.stringify(options.body) }),
      signal: controller.signal
    })
    const contentType = response.headers.get("content-type") ?? ""
    if (!contentType.startsWith("text/event-stream")) {
      const text = await response.text()
      let body: any = text
      try {
        body = JSON.parse(text)
      } catch {
        // not JSON
      }
      return { status: response.status, headers: response.headers, events: [], comments: [], body, hungUp: false }
    }
    const events: Array<SseEvent> = []
    const comments: Array<string> = []
    let stop = false
    const pending: Array<SseEvent> = []
    const parser = createParser({
      onEvent: (message) => {
        pending.push(toEvent(message))
      },
      onComment: (comment) => {
        comments.push(comment.trim())
      }
    })
    const reader = response.body!.getReader()
    const decoder = new TextDecoder()
    while (!stop) {
      const { done, value } = await reader.read()
      if (done) break
      parser.feed(decoder.decode(value, { stream: true }))
      while (pending.length > 0) {
        const event = pending.shift()!
        events.push(event)
        await options.onEvent?.(event)
        if (options.until?.(event, events)) {
          stop = true
          break
        }
      }
    }
    if (stop) {
      await reader.cancel().catch(() => undefined)
      controller.abort()
    }
    return { status: response.status, headers: response.headers, events, comments, hungUp: stop }
  } finally {
    clearTimeout(timer)
  }
}

/** POSTs JSON and returns status + parsed body. */
export const postJson = async (
  url: string,
  body: unknown,
  headers: Record<string, string> = {}
): Promise<{ readonly status: number; readonly body: any; readonly headers: Headers }> => {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })
  const text = await response.text()
  let parsed: any = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // not JSON
  }
  return { status: response.status, body: parsed, headers: response.headers }
}

/** GETs and returns status + parsed body. */
export const getJson = async (
  url: string,
  headers: Record<string, string> = {}
): Promise<{ readonly status: number; readonly body: any }> => {
  const response = await fetch(url, { headers })
  const text = await response.text()
  let parsed: any = text
  try {
    parsed = JSON.parse(text)
  } catch {
    // not JSON
  }
  return { status: response.status, body: parsed }
}

/** The `step`/`answer`/… sequence of a run as short labels, e.g. `step:thinking:start`. */
export const labels = (events: ReadonlyArray<SseEvent>): Array<string> =>
  events.map((e) => {
    const d = e.data ?? {}
    if (e.event === "step") return `step:${d.type}:${d.status}`
    if (e.event === "answer") return `answer:${d.status}`
    return e.event
  })
