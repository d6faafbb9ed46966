/**
 * A small OpenAI-compatible HTTP server on `node:http` for end-to-end tests of the
 * real `openai` SDK layer (and of the server built on it).
 *
 * - Replies are scripted per request (`POST …/chat/completions`), in order, or
 *   computed by a responder function; a request past the end of the script gets a
 *   500 with a clear message.
 * - Reply kinds: a JSON completion, an SSE stream of chunks (tool-call deltas may
 *   be split across chunks), an error status, a raw body, a hang (never answers),
 *   a dropped connection, a stall (headers and part of the body, then nothing).
 *   Each can be delayed.
 * - `GET …/models` lists `options.models` when given (404 otherwise).
 * - A request the real API refuses is a 400 (`wireParts.openAiProblem`: parts
 *   where the API takes none, bad image or PDF data, unanswered tool calls).
 * - Every request is recorded (path, headers, parsed body) with whether the client
 *   closed it before the reply finished; sockets are tracked (open / closed).
 *
 * ```ts
 * const server = yield* FakeOpenAi.scoped([FakeOpenAi.completion({ content: "hi" })])
 * // OpenAiLlm.makeUnsafe({ baseURL: server.url, apiKey: "test", model: "fake" })
 * ```
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { openAiProblem } from "./wireParts.js"

/** A tool call in a scripted completion. */
export interface FakeToolCall {
  readonly id: string
  readonly name: string
  /** Raw argument text (may be invalid JSON on purpose). */
  readonly arguments: string
}

/** What the server does for one request. */
export type FakeReply =
  | {
    readonly _tag: "Json"
    readonly status: number
    readonly body: unknown
    readonly delayMs?: number
    readonly headers?: Record<string, string>
  }
  | {
    readonly _tag: "Sse"
    /** Each chunk is JSON-encoded into one `data:` frame (strings are sent verbatim). */
    readonly chunks: ReadonlyArray<unknown>
    readonly delayMs?: number
    readonly chunkDelayMs?: number
    /** Append `data: [DONE]` and end (default true); false keeps the stream open after the chunks. */
    readonly done?: boolean
  }
  | {
    readonly _tag: "Raw"
    readonly status: number
    readonly body: string
    readonly contentType?: string
    readonly delayMs?: number
  }
  | { readonly _tag: "Hang" }
  | { readonly _tag: "Drop"; readonly delayMs?: number }
  | {
    /** Sends the status, the headers and `partialBody`, then nothing more (the socket stays open). */
    readonly _tag: "Stall"
    readonly status: number
    readonly partialBody: string
    readonly contentType?: string
    readonly delayMs?: number
  }

/** A recorded request. */
export interface RecordedHttpRequest {
  readonly method: string
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  /** The parsed JSON body (undefined when not JSON). */
  readonly body: any
  /** True once the client closed the connection before the reply was complete. */
  readonly abortedByClient: boolean
  /** True once the reply was completely written. */
  readonly finished: boolean
  /** `Date.now()` when the request arrived. */
  readonly receivedAt: number
}

/** Computes a reply from the request body and its index. */
export type FakeResponder = (body: any, index: number) => FakeReply

/** A running fake server. */
export interface FakeOpenAiServer {
  /** Base URL including `/v1`, for `new OpenAI({ baseURL })`. */
  readonly url: string
  readonly port: number
  /** Chat-completion requests received, in order. */
  readonly requests: ReadonlyArray<RecordedHttpRequest>
  /** Sockets currently open. */
  readonly openSockets: number
  /** Sockets closed so far. */
  readonly closedSockets: number
  /** Resolves when some request was aborted by the client (or after `timeoutMs` with false). */
  readonly waitForClientAbort: (timeoutMs?: number) => Promise<boolean>
  /** Resolves when at least `count` sockets have closed (or after `timeoutMs` with false). */
  readonly waitForClosedSockets: (count: number, timeoutMs?: number) => Promise<boolean>
  /** Resolves when `count` requests have arrived (or after `timeoutMs` with false). */
  readonly waitForRequests: (count: number, timeoutMs?: number) => Promise<boolean>
  readonly close: () => Promise<void>
}

// ---------------------------------------------------------------------------
// Reply builders

let seq = 0

/**
 * A tool-call id of its own for the `k`-th call of the reply to the request at `index`
 * (0-based, as a `FakeResponder` gets it): `call_<request#>_<k>`, request# counted from 1.
 * A model asked again answers with new ids, as a real one does: a test whose fake uses
 * these sees a re-asked model as new ids (and a tool run again under its new id).
 */
export const freshCallId = (index: number, k = 0): string => `call_${index + 1}_${k}`

/** A chat.completion JSON body. */
export const completionBody = (options: {
  readonly content?: string | null
  readonly toolCalls?: ReadonlyArray<FakeToolCall>
  readonly reasoningContent?: string
  readonly finishReason?: string
  readonly usage?: { readonly prompt: number; readonly completion: number; readonly cached?: number }
  readonly model?: string
}) => ({
  id: `chatcmpl-${++seq}`,
  object: "chat.completion",
  created: 1_700_000_000,
  model: options.model ?? "fake-model",
  choices: [{
    index: 0,
    message: {
      role: "assistant",
      content: options.content === undefined ? null : options.content,
      ...(options.reasoningContent !== undefined ? { reasoning_content: options.reasoningContent } : {}),
      ...(options.toolCalls && options.toolCalls.length > 0
        ? {
          tool_calls: options.toolCalls.map((c) => ({
            id: c.id,
            type: "function",
            function: { name: c.name, arguments: c.arguments }
          }))
        }
        : {})
    },
    finish_reason: options.finishReason ?? (options.toolCalls && options.toolCalls.length > 0 ? "tool_calls" : "stop")
  }],
  ...(options.usage ? { usage: usageBody(options.usage) } : {})
})

const usageBody = (u: { readonly prompt: number; readonly completion: number; readonly cached?: number }) => ({
  prompt_tokens: u.prompt,
  completion_tokens: u.completion,
  total_tokens: u.prompt + u.completion,
  ...(u.cached !== undefined ? { prompt_tokens_details: { cached_tokens: u.cached } } : {})
})

/** A 200 JSON completion. */
export const completion = (
  options: Parameters<typeof completionBody>[0] & { readonly delayMs?: number }
): FakeReply => ({
  _tag: "Json",
  status: 200,
  body: completionBody(options),
  ...(options.delayMs !== undefined ? { delayMs: options.delayMs } : {})
})

/** An error reply in the OpenAI error shape. */
export const error = (
  status: number,
  message: string,
  options?: {
    readonly code?: string
    readonly type?: string
    readonly delayMs?: number
    readonly headers?: Record<string, string>
  }
): FakeReply => ({
  _tag: "Json",
  status,
  body: {
    error: { message, type: options?.type ?? "invalid_request_error", code: options?.code ?? null, param: null }
  },
  ...(options?.delayMs !== undefined ? { delayMs: options.delayMs } : {}),
  ...(options?.headers ? { headers: options.headers } : {})
})

/** A raw body (e.g. invalid JSON with status 200). */
export const raw = (status: number, body: string, contentType = "application/json"): FakeReply => ({
  _tag: "Raw",
  status,
  body,
  contentType
})

/** Never answers (the client must time out or abort). */
export const hang: FakeReply = { _tag: "Hang" }

/**
 * Sends the headers and the first half of a JSON completion, then stalls (a
 * provider that hangs mid-body: the SDK's own timer stops at the headers).
 */
export const stall = (options?: { readonly partialBody?: string; readonly delayMs?: number }): FakeReply => {
  const body = JSON.stringify(completionBody({ content: "never finished" }))
  return {
    _tag: "Stall",
    status: 200,
    partialBody: options?.partialBody ?? body.slice(0, Math.floor(body.length / 2)),
    contentType: "application/json",
    ...(options?.delayMs !== undefined ? { delayMs: options.delayMs } : {})
  }
}

/** Destroys the socket without answering. */
export const drop: FakeReply = { _tag: "Drop" }

/** An SSE stream of chunk bodies (see `chunk`). */
export const sse = (
  chunks: ReadonlyArray<unknown>,
  options?: { readonly delayMs?: number; readonly chunkDelayMs?: number; readonly done?: boolean }
): FakeReply => ({ _tag: "Sse", chunks, ...options })

const chunkBody = (
  delta: Record<string, unknown>,
  finishReason: string | null = null,
  extra?: Record<string, unknown>
) => ({
  id: "chatcmpl-stream",
  object: "chat.completion.chunk",
  created: 1_700_000_000,
  model: "fake-model",
  choices: [{ index: 0, delta, finish_reason: finishReason }],
  ...extra
})

/** Builders of `chat.completion.chunk` bodies. */
export const chunk = {
  role: () => chunkBody({ role: "assistant", content: "" }),
  content: (text: string) => chunkBody({ content: text }),
  reasoning: (text: string) => chunkBody({ reasoning_content: text }),
  /** One tool-call delta: the first for an index usually carries `id` and `name`, later ones argument pieces. */
  toolCall: (index: number, part: { readonly id?: string; readonly name?: string; readonly arguments?: string }) =>
    chunkBody({
      tool_calls: [{
        index,
        ...(part.id !== undefined ? { id: part.id, type: "function" } : {}),
        function: {
          ...(part.name !== undefined ? { name: part.name } : {}),
          ...(part.arguments !== undefined ? { arguments: part.arguments } : {})
        }
      }]
    }),
  finish: (reason: string) => chunkBody({}, reason),
  /** The final usage chunk (`stream_options.include_usage`): empty choices. */
  usage: (prompt: number, completion: number, cached?: number) => ({
    id: "chatcmpl-stream",
    object: "chat.completion.chunk",
    created: 1_700_000_000,
    model: "fake-model",
    choices: [],
    usage: usageBody({ prompt, completion, ...(cached !== undefined ? { cached } : {}) })
  }),
  /** An error event in the middle of a stream (providers send these). */
  error: (message: string, code?: string) => ({ error: { message, code: code ?? null, type: "server_error" } })
}

/**
 * A streamed text reply: word-sized content chunks, `finish_reason: stop` and a
 * usage chunk (e.g. for answer synthesis in end-to-end tests).
 */
export const sseText = (
  text: string,
  options?: {
    readonly delayMs?: number
    readonly chunkDelayMs?: number
    readonly usage?: { readonly prompt: number; readonly completion: number }
  }
): FakeReply =>
  sse([
    chunk.role(),
    ...(text.match(/\s*\S+|\s+$/g) ?? []).map(chunk.content),
    chunk.finish("stop"),
    chunk.usage(options?.usage?.prompt ?? 10, options?.usage?.completion ?? Math.ceil(text.length / 4))
  ], {
    ...(options?.delayMs !== undefined ? { delayMs: options.delayMs } : {}),
    ...(options?.chunkDelayMs !== undefined ? { chunkDelayMs: options.chunkDelayMs } : {})
  })

// ---------------------------------------------------------------------------
// Server

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const parts: Array<Buffer> = []
    req.on("data", (c: Buffer) => parts.push(c))
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")))
    req.on("error", reject)
  })

const sleep = (ms: number | undefined) =>
  ms === undefined || ms <= 0 ? Promise.resolve() : new Promise<void>((r) => setTimeout(r, ms))

/**
 * Starts a fake server on 127.0.0.1 (random port).
 */
export const start = async (
  script: ReadonlyArray<FakeReply> | FakeResponder,
  options?: { readonly models?: ReadonlyArray<string> }
): Promise<FakeOpenAiServer> => {
  const requests: Array<{ -readonly [K in keyof RecordedHttpRequest]: RecordedHttpRequest[K] }> = []
  const sockets = new Set<Socket>()
  let closedSockets = 0
  const waiters = new Set<() => void>()
  const notify = () => {
    for (const w of [...waiters]) w()
  }
  const waitFor = (predicate: () => boolean, timeoutMs: number) =>
    new Promise<boolean>((resolve) => {
      if (predicate()) return resolve(true)
      const check = () => {
        if (predicate()) {
          waiters.delete(check)
          clearTimeout(timer)
          resolve(true)
        }
      }
      const timer = setTimeout(() => {
        waiters.delete(check)
        resolve(false)
      }, timeoutMs)
      waiters.add(check)
    })

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const text = await readBody(req)
    let body: any
    try {
      body = JSON.parse(text)
    } catch {
      body = undefined
    }
    const record = {
      method: req.method ?? "",
      path: req.url ?? "",
      headers: req.headers,
      body,
      abortedByClient: false,
      finished: false,
      receivedAt: Date.now()
    }
    res.on("close", () => {
      if (!res.writableFinished) record.abortedByClient = true
      notify()
    })
    res.on("finish", () => {
      record.finished = true
      notify()
    })
    if (req.method === "GET" && (req.url ?? "").endsWith("/models") && options?.models) {
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify({
        object: "list",
        data: options.models.map((id) => ({ id, object: "model", created: 1_700_000_000, owned_by: "fake" }))
      }))
      return
    }
    if (req.method !== "POST" || !(req.url ?? "").endsWith("/chat/completions")) {
      res.writeHead(404, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: { message: `fake server: no route ${req.method} ${req.url}` } }))
      return
    }
    const index = requests.length
    requests.push(record)
    notify()
    // a request the real API refuses (a part where it takes none, tool calls left unanswered) is refused here too
    const problem = openAiProblem(body)
    if (problem !== undefined) {
      res.writeHead(400, { "content-type": "application/json" })
      res.end(
        JSON.stringify({ error: { message: problem, type: "invalid_request_error", param: "messages", code: null } })
      )
      return
    }
    const reply: FakeReply | undefined = typeof script === "function"
      ? script(body, index)
      : script[index]
    if (reply === undefined) {
      res.writeHead(500, { "content-type": "application/json" })
      res.end(JSON.stringify({
        error: {
          message: `fake server: script exhausted (request ${index + 1}, ${
            (script as ReadonlyArray<FakeReply>).length
          } replies)`
        }
      }))
      return
    }
    const alive = () => !res.destroyed && !record.abortedByClient
    switch (reply._tag) {
      case "Json": {
        await sleep(reply.delayMs)
        if (!alive()) return
        res.writeHead(reply.status, { "content-type": "application/json", ...reply.headers })
        res.end(JSON.stringify(reply.body))
        return
      }
      case "Raw": {
        await sleep(reply.delayMs)
        if (!alive()) return
        res.writeHead(reply.status, { "content-type": reply.contentType ?? "text/plain" })
        res.end(reply.body)
        return
      }
      case "Hang":
        return
      case "Stall": {
        await sleep(reply.delayMs)
        if (!alive()) return
        res.writeHead(reply.status, { "content-type": reply.contentType ?? "application/json" })
        res.write(reply.partialBody)
        return
      }
      case "Drop": {
        await sleep(reply.delayMs)
        req.socket.destroy()
        return
      }
      case "Sse": {
        await sleep(reply.delayMs)
        if (!alive()) return
        res.writeHead(200, {
          "content-type": "text/event-stream",
          "cache-control": "no-cache",
          connection: "keep-alive"
        })
        res.flushHeaders()
        for (const c of reply.chunks) {
          await sleep(reply.chunkDelayMs)
          if (!alive()) return
          res.write(`data: ${typeof c === "string" ? c : JSON.stringify(c)}\n\n`)
        }
        if (reply.done === false) return
        res.end("data: [DONE]\n\n")
        return
      }
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      if (!res.headersSent) res.writeHead(500)
      res.end(String(e))
    })
  })
  server.on("connection", (socket) => {
    sockets.add(socket)
    socket.on("close", () => {
      sockets.delete(socket)
      closedSockets++
      notify()
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    requests,
    get openSockets() {
      return sockets.size
    },
    get closedSockets() {
      return closedSockets
    },
    waitForClientAbort: (timeoutMs = 2000) => waitFor(() => requests.some((r) => r.abortedByClient), timeoutMs),
    waitForRequests: (count, timeoutMs = 2000) => waitFor(() => requests.length >= count, timeoutMs),
    waitForClosedSockets: (count, timeoutMs = 2000) => waitFor(() => closedSockets >= count, timeoutMs),
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      })
  }
}

/** The server as a scoped resource (closed with the scope). */
export const scoped = (
  script: ReadonlyArray<FakeReply> | FakeResponder,
  options?: { readonly models?: ReadonlyArray<string> }
): Effect.Effect<FakeOpenAiServer, never, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.promise(() => start(script, options)),
    (server) => Effect.promise(() => server.close())
  )
