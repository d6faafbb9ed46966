/**
 * A local fake of the Anthropic Messages API (`POST /v1/messages`) on `node:http`,
 * for end-to-end tests and benchmarks of the real `@effect/ai-anthropic` client
 * (and of the server built on it).
 *
 * - JSON replies and SSE event streams as Anthropic sends them: `message_start`
 *   (with the input usage), `content_block_start` / `content_block_delta`
 *   (`text_delta`, `input_json_delta` in pieces, `thinking_delta` +
 *   `signature_delta`) / `content_block_stop`, `ping`, `message_delta` (stop
 *   reason, output usage), `message_stop`; an `error` event mid-stream on request.
 * - Error replies in Anthropic's shape (`{type:"error", error:{type, message}}`),
 *   with `retry-after` when given; hangs and dropped connections.
 * - Requests are validated the way the API does it (roles alternate starting with
 *   `user`, every `tool_result` answers a `tool_use` of the previous assistant
 *   turn, at most 4 `cache_control` breakpoints, `max_tokens` present): a bad
 *   request is a 400 `invalid_request_error`, so a client that sends one fails.
 * - Fresh ids per request (`msg_<n>_…`, `toolu_<n>_<k>`): the script names tools
 *   and inputs, the fake assigns the ids. Every request is recorded and counted.
 * - Honest prefix caching (see `cacheUsage`): the prompt is the sequence of blocks
 *   tools → system → messages; a breakpoint is a block with `cache_control`. A
 *   request WRITES the prefix up to each of its breakpoints (when that prefix is at
 *   least `minCacheTokens`, 1,024 by default) and READS the longest prefix, ending
 *   at most 20 blocks before one of its breakpoints, that equals one written
 *   before and not expired (5 minutes, refreshed on each read). Tokens are a
 *   deterministic estimate: ceil(bytes / 4) of each block's canonical JSON
 *   (without its `cache_control`). `input_tokens` is what is neither read nor
 *   written, as the API reports it.
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { createHash } from "node:crypto"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { anthropicBlocksProblem } from "./wireParts.js"

/** A block of a scripted reply (the fake assigns tool-use ids). */
export type FakeBlock =
  | { readonly type: "text"; readonly text: string }
  | { readonly type: "tool_use"; readonly name: string; readonly input: unknown; readonly rawJson?: string }
  | { readonly type: "thinking"; readonly thinking: string }

/** What the fake does for one request. */
export type FakeAnthropicReply =
  | {
    readonly _tag: "Message"
    readonly content: ReadonlyArray<FakeBlock>
    readonly stopReason?: "end_turn" | "tool_use" | "max_tokens" | "stop_sequence"
    readonly delayMs?: number
    /** Streams only: send an `error` event of this type after the first block. */
    readonly streamError?: string
    /** Streams only: close the connection after the first block. */
    readonly cutStream?: boolean
  }
  | {
    readonly _tag: "Error"
    readonly status: number
    readonly type: string
    readonly message: string
    readonly headers?: Record<string, string>
  }
  | { readonly _tag: "Hang" }
  | { readonly _tag: "Drop" }

/** Computes a reply from the request body and its 0-based index. */
export type FakeAnthropicResponder = (body: any, index: number) => FakeAnthropicReply

/** A recorded request. */
export interface RecordedRequest {
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  readonly body: any
  readonly stream: boolean
  /** The usage the fake reported (undefined for errors). */
  usage?: CacheUsage
}

/** Usage as the fake computed it. */
export interface CacheUsage {
  readonly input_tokens: number
  readonly cache_read_input_tokens: number
  readonly cache_creation_input_tokens: number
  readonly output_tokens: number
}

/** A running fake. */
export interface FakeAnthropicServer {
  /** The API origin, without `/v1` (what `AnthropicClient` and `LLM_BASE_URL` take). */
  readonly url: string
  readonly requests: ReadonlyArray<RecordedRequest>
  /** Entries in the prompt cache (expired ones included until they are looked up). */
  readonly cacheEntries: () => number
  /** Moves the fake's clock forward (to expire cache entries). */
  readonly advance: (ms: number) => void
  readonly close: () => Promise<void>
}

export interface FakeAnthropicOptions {
  readonly minCacheTokens?: number
  readonly cacheTtlMs?: number
  /** Characters per streamed text / JSON piece (default 7). */
  readonly pieceSize?: number
  /** Streams only: a pause after each text / JSON piece (default none: the pieces go out at once). */
  readonly pieceDelayMs?: number
}

// ---------------------------------------------------------------------------
// Reply builders

export const text = (t: string, options?: { readonly delayMs?: number }): FakeAnthropicReply => ({
  _tag: "Message",
  content: [{ type: "text", text: t }],
  ...(options?.delayMs !== undefined ? { delayMs: options.delayMs } : {})
})

export const toolUse = (
  calls: ReadonlyArray<{ readonly name: string; readonly input: unknown }>,
  preface?: string
): FakeAnthropicReply => ({
  _tag: "Message",
  content: [
    ...(preface !== undefined ? [{ type: "text" as const, text: preface }] : []),
    ...calls.map((c) => ({ type: "tool_use" as const, name: c.name, input: c.input }))
  ],
  stopReason: "tool_use"
})

export const error = (
  status: number,
  type: string,
  message: string,
  headers?: Record<string, string>
): FakeAnthropicReply => ({ _tag: "Error", status, type, message, ...(headers ? { headers } : {}) })

export const hang: FakeAnthropicReply = { _tag: "Hang" }
export const drop: FakeAnthropicReply = { _tag: "Drop" }

// ---------------------------------------------------------------------------
// Tokens and the prompt cache

const stripCache = (value: any): any => {
  if (Array.isArray(value)) return value.map(stripCache)
  if (value === null || typeof value !== "object") return value
  const out: Record<string, unknown> = {}
  for (const key of Object.keys(value).sort()) {
    if (key === "cache_control") continue
    if (value[key] === undefined) continue
    out[key] = stripCache(value[key])
  }
  return out
}

/** The deterministic token estimate of a block: ceil(bytes of its canonical JSON / 4). */
export const blockTokens = (block: unknown): number =>
  Math.ceil(Buffer.byteLength(JSON.stringify(stripCache(block))) / 4)

interface PromptBlock {
  readonly key: string
  readonly tokens: number
  readonly breakpoint: boolean
}

/** The request as Anthropic caches it: tools → system → message blocks, in order. */
export const promptBlocks = (body: any): Array<PromptBlock> => {
  const out: Array<PromptBlock> = []
  const push = (block: any, where: string) =>
    out.push({
      key: `${where}:${JSON.stringify(stripCache(block))}`,
      tokens: blockTokens(block),
      breakpoint: block !== null && typeof block === "object" && block.cache_control != null
    })
  for (const tool of body.tools ?? []) push(tool, "tool")
  const system = typeof body.system === "string" ? [{ type: "text", text: body.system }] : body.system ?? []
  for (const block of system) push(block, "system")
  for (const message of body.messages ?? []) {
    const content = typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content
    for (const block of content) push(block, message.role)
  }
  return out
}

const LOOKBACK = 20

/** Prompt cache with Anthropic's rules (see the module comment). */
const makeCache = (minTokens: number, ttlMs: number, now: () => number) => {
  const entries = new Map<string, number>() // prefix hash → expiry
  const usage = (body: any): { read: number; write: number; total: number } => {
    const blocks = promptBlocks(body)
    const hashes: Array<string> = []
    const cumulative: Array<number> = []
    const hash = createHash("sha256")
    let tokens = 0
    for (const block of blocks) {
      hash.update(block.key).update("\u0000")
      hashes.push(hash.copy().digest("hex"))
      tokens += block.tokens
      cumulative.push(tokens)
    }
    const breakpoints = blocks.flatMap((b, i) => (b.breakpoint ? [i] : []))
    const t = now()
    let readEnd = -1
    for (const bp of breakpoints) {
      for (let i = bp; i >= Math.max(0, bp - LOOKBACK); i--) {
        const expiry = entries.get(hashes[i])
        if (expiry !== undefined && expiry > t) {
          if (i > readEnd) readEnd = i
          break
        }
      }
    }
    const read = readEnd >= 0 ? cumulative[readEnd] : 0
    if (readEnd >= 0) entries.set(hashes[readEnd], t + ttlMs)
    let writeEnd = readEnd
    for (const bp of breakpoints) {
      if (cumulative[bp] < minTokens) continue
      entries.set(hashes[bp], t + ttlMs)
      if (bp > writeEnd) writeEnd = bp
    }
    const write = writeEnd > readEnd ? cumulative[writeEnd] - read : 0
    return { read, write, total: tokens }
  }
  return { usage, size: () => entries.size }
}

// ---------------------------------------------------------------------------
// Validation

const invalid = (message: string) => ({ status: 400, type: "invalid_request_error", message })

const validate = (body: any): { status: number; type: string; message: string } | undefined => {
  if (body === null || typeof body !== "object") return invalid("body: expected an object")
  if (typeof body.model !== "string" || body.model === "") return invalid("model: Field required")
  if (typeof body.max_tokens !== "number") return invalid("max_tokens: Field required")
  if (!Array.isArray(body.messages) || body.messages.length === 0) {
    return invalid("messages: at least one message is required")
  }
  let breakpoints = 0
  const count = (b: any) => {
    if (b && typeof b === "object" && b.cache_control != null) breakpoints++
  }
  for (const t of body.tools ?? []) {
    if (typeof t.name !== "string" || !/^[a-zA-Z0-9_-]{1,64}$/.test(t.name)) {
      return invalid(`tools: invalid name ${t.name}`)
    }
    if (!t.input_schema || t.input_schema.type !== "object") {
      return invalid(`tools.${t.name}.input_schema: type must be object`)
    }
    count(t)
  }
  if (Array.isArray(body.system)) body.system.forEach(count)
  let previousToolUses = new Set<string>()
  for (let i = 0; i < body.messages.length; i++) {
    const m = body.messages[i]
    const expected = i % 2 === 0 ? "user" : "assistant"
    if (m.role !== expected) {
      return invalid(`messages.${i}.role: roles must alternate user/assistant starting with user, got ${m.role}`)
    }
    const content = typeof m.content === "string" ? [{ type: "text", text: m.content }] : m.content
    if (!Array.isArray(content) || content.length === 0) return invalid(`messages.${i}.content: must not be empty`)
    const uses = new Set<string>()
    const blocks = anthropicBlocksProblem(m.role, content, i)
    if (blocks !== undefined) return invalid(blocks)
    for (const block of content) {
      count(block)
      if (block.type === "text" && (typeof block.text !== "string" || block.text === "")) {
        return invalid(`messages.${i}: text content blocks must be non-empty`)
      }
      if (block.type === "tool_use") {
        if (m.role !== "assistant") return invalid(`messages.${i}: tool_use only in assistant messages`)
        if (block.input === null || typeof block.input !== "object" || Array.isArray(block.input)) {
          return invalid(`messages.${i}: tool_use.input must be an object`)
        }
        uses.add(block.id)
      }
      if (block.type === "tool_result") {
        if (m.role !== "user") return invalid(`messages.${i}: tool_result only in user messages`)
        if (!previousToolUses.has(block.tool_use_id)) {
          return invalid(`messages.${i}: unexpected tool_use_id found in tool_result blocks: ${block.tool_use_id}`)
        }
      }
    }
    if (m.role === "user" && previousToolUses.size > 0) {
      const answered = new Set(content.filter((b: any) => b.type === "tool_result").map((b: any) => b.tool_use_id))
      for (const id of previousToolUses) {
        if (!answered.has(id)) {
          return invalid(`messages.${i}: tool_use ids were found without tool_result blocks: ${id}`)
        }
      }
    }
    previousToolUses = m.role === "assistant" ? uses : new Set()
  }
  if (breakpoints > 4) return invalid(`A maximum of 4 blocks with cache_control may be provided. Found ${breakpoints}.`)
  const choice = body.tool_choice
  if (choice?.type === "tool" || choice?.type === "any") {
    const names = (body.tools ?? []).map((t: any) => t.name)
    if (choice.type === "tool" && !names.includes(choice.name)) {
      return invalid(`tool_choice.name: tool '${choice.name}' is not in tools`)
    }
    if (names.length === 0) return invalid(`tool_choice: type '${choice.type}' needs tools`)
    if (body.thinking?.type === "enabled") {
      return invalid("Thinking may not be enabled when tool_choice forces tool use.")
    }
  }
  return undefined
}

// ---------------------------------------------------------------------------
// The server

const pieces = (s: string, size: number): Array<string> => {
  if (s === "") return [""]
  const out: Array<string> = []
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size))
  return out
}

/**
 * Starts the fake on a free port, released with the scope. `script`: replies in
 * order (a request past its end is a 500 naming the fake) or a responder.
 */
export const scoped = (
  script: ReadonlyArray<FakeAnthropicReply> | FakeAnthropicResponder,
  options?: FakeAnthropicOptions
): Effect.Effect<FakeAnthropicServer, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.promise(() => start(script, options)), (s) => Effect.promise(() => s.close()))

export const start = (
  script: ReadonlyArray<FakeAnthropicReply> | FakeAnthropicResponder,
  options?: FakeAnthropicOptions
): Promise<FakeAnthropicServer> => {
  const requests: Array<RecordedRequest> = []
  let offset = 0
  const now = () => Date.now() + offset
  const cache = makeCache(options?.minCacheTokens ?? 1024, options?.cacheTtlMs ?? 5 * 60_000, now)
  const size = options?.pieceSize ?? 7
  const pause = options?.pieceDelayMs === undefined
    ? () => Promise.resolve()
    : () => new Promise((r) => setTimeout(r, options.pieceDelayMs))
  const sockets = new Set<Socket>()
  const replyFor = (body: any, index: number): FakeAnthropicReply =>
    typeof script === "function"
      ? script(body, index)
      : script[index] ?? error(500, "api_error", `fake Anthropic: no scripted reply for request ${index + 1}`)

  const sendError = (
    res: ServerResponse,
    e: { status: number; type: string; message: string },
    headers?: Record<string, string>
  ) => {
    res.writeHead(e.status, { "content-type": "application/json", "request-id": `req_${requests.length}`, ...headers })
    res.end(
      JSON.stringify(
        { type: "error", error: { type: e.type, message: e.message }, request_id: `req_${requests.length}` },
        null,
        2
      )
    )
  }

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Array<Buffer> = []
    for await (const c of req) chunks.push(c as Buffer)
    const url = new URL(req.url ?? "/", "http://x")
    if (req.method !== "POST" || url.pathname !== "/v1/messages") {
      return sendError(res, {
        status: 404,
        type: "not_found_error",
        message: `Not found: ${req.method} ${url.pathname}`
      })
    }
    let body: any
    try {
      body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    } catch {
      return sendError(res, invalid("body: invalid JSON"))
    }
    const recorded: RecordedRequest = { path: req.url ?? "", headers: req.headers, body, stream: body?.stream === true }
    const index = requests.length
    requests.push(recorded)
    if (req.headers["x-api-key"] === undefined) {
      return sendError(res, { status: 401, type: "authentication_error", message: "x-api-key header is required" })
    }
    const bad = validate(body)
    if (bad) return sendError(res, bad)
    const reply = replyFor(body, index)
    if (reply._tag === "Hang") return
    if (reply._tag === "Drop") return req.socket.destroy()
    if (reply._tag === "Error") return sendError(res, reply, reply.headers)
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs))
    const { read, total, write } = cache.usage(body)
    const n = index + 1
    const content = reply.content.map((b, k) =>
      b.type === "text"
        ? { type: "text", text: b.text }
        : b.type === "thinking"
        ? { type: "thinking", thinking: b.thinking, signature: `sig_${n}_${k}` }
        : { type: "tool_use", id: `toolu_${n}_${k}`, name: b.name, input: b.input }
    )
    const outputTokens = Math.max(1, content.reduce((s, b) => s + blockTokens(b), 0))
    const usage: CacheUsage = {
      input_tokens: total - read - write,
      cache_read_input_tokens: read,
      cache_creation_input_tokens: write,
      output_tokens: outputTokens
    }
    recorded.usage = usage
    const stopReason = reply.stopReason ?? (content.some((b) => b.type === "tool_use") ? "tool_use" : "end_turn")
    const id = `msg_${n}_${Math.random().toString(36).slice(2, 10)}`
    const wireUsage = {
      ...usage,
      cache_creation: { ephemeral_5m_input_tokens: write, ephemeral_1h_input_tokens: 0 },
      service_tier: "standard"
    }
    if (body.stream !== true) {
      res.writeHead(200, { "content-type": "application/json", "request-id": `req_${n}` })
      return res.end(JSON.stringify({
        id,
        type: "message",
        role: "assistant",
        model: body.model,
        content,
        stop_reason: stopReason,
        stop_sequence: null,
        usage: wireUsage
      }))
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", "request-id": `req_${n}` })
    const event = (type: string, data: unknown) =>
      res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...(data as object) })}\n\n`)
    event("message_start", {
      message: {
        id,
        type: "message",
        role: "assistant",
        model: body.model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...wireUsage, output_tokens: 1 }
      }
    })
    event("ping", {})
    for (let k = 0; k < content.length; k++) {
      const block = content[k] as any
      const source = reply.content[k]
      if (block.type === "text") {
        event("content_block_start", { index: k, content_block: { type: "text", text: "" } })
        for (const p of pieces(block.text, size)) {
          event("content_block_delta", { index: k, delta: { type: "text_delta", text: p } })
          await pause()
        }
      } else if (block.type === "thinking") {
        event("content_block_start", { index: k, content_block: { type: "thinking", thinking: "", signature: "" } })
        for (const p of pieces(block.thinking, size)) {
          event("content_block_delta", { index: k, delta: { type: "thinking_delta", thinking: p } })
        }
        event("content_block_delta", { index: k, delta: { type: "signature_delta", signature: block.signature } })
      } else {
        event("content_block_start", {
          index: k,
          content_block: { type: "tool_use", id: block.id, name: block.name, input: {} }
        })
        const json = source.type === "tool_use" && source.rawJson !== undefined
          ? source.rawJson
          : JSON.stringify(block.input)
        event("content_block_delta", { index: k, delta: { type: "input_json_delta", partial_json: "" } })
        for (const p of pieces(json, size)) {
          event("content_block_delta", { index: k, delta: { type: "input_json_delta", partial_json: p } })
          await pause()
        }
      }
      event("content_block_stop", { index: k })
      if (k === 0 && reply.cutStream) return req.socket.destroy()
      if (k === 0 && reply.streamError) {
        event("error", { error: { type: reply.streamError, message: "Overloaded" } })
        return res.end()
      }
    }
    event("message_delta", {
      delta: { stop_reason: stopReason, stop_sequence: null },
      usage: { output_tokens: outputTokens }
    })
    event("message_stop", {})
    res.end()
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((e) => {
      if (!res.headersSent) sendError(res, { status: 500, type: "api_error", message: String(e) })
      else res.end()
    })
  })
  server.on("connection", (s) => {
    sockets.add(s)
    s.on("close", () => sockets.delete(s))
  })
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as AddressInfo).port
      resolve({
        url: `http://127.0.0.1:${port}`,
        requests,
        cacheEntries: () => cache.size(),
        advance: (ms) => {
          offset += ms
        },
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy()
            server.close(() => done())
          })
      })
    })
  })
}
