/**
 * A local fake of OpenAI's Responses API (`POST /v1/responses`) on `node:http`,
 * for tests of the real `@effect/ai-openai` client (`LLM_PROVIDER=openai`).
 *
 * - JSON replies and SSE event streams (`response.created`,
 *   `response.output_item.added`, `response.output_text.delta`,
 *   `response.function_call_arguments.delta` in pieces, `response.output_item.done`,
 *   `response.completed` with usage).
 * - Errors in OpenAI's shape (`{error:{message,type,code}}`), with `retry-after`.
 * - Requests validated as the API does (every `function_call_output` answers a
 *   `function_call` sent earlier in `input`; a forced `tool_choice` names a function
 *   of `tools`); fresh ids per request
 *   (`resp_<n>`, `call_<n>_<k>`); every request recorded and counted.
 * - Usage: `input_tokens` a deterministic estimate (ceil(bytes of the request's
 *   instructions, input and tools ÷ 4)); `cached_tokens` is 0 (this fake does not
 *   model OpenAI's automatic prefix cache).
 */
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"

export type FakeResponsesReply =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "Calls"; readonly calls: ReadonlyArray<{ readonly name: string; readonly input: unknown }> }
  | {
    readonly _tag: "Error"
    readonly status: number
    readonly type: string
    readonly code?: string
    readonly message: string
    readonly headers?: Record<string, string>
  }
  | { readonly _tag: "Hang" }

export interface RecordedResponsesRequest {
  readonly path: string
  readonly headers: IncomingMessage["headers"]
  readonly body: any
}

export interface FakeResponsesServer {
  /** Base URL including `/v1`. */
  readonly url: string
  readonly requests: ReadonlyArray<RecordedResponsesRequest>
  readonly close: () => Promise<void>
}

const tokens = (value: unknown) => Math.ceil(Buffer.byteLength(JSON.stringify(value ?? "")) / 4)

const pieces = (s: string, size = 7): Array<string> => {
  const out: Array<string> = []
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size))
  return out.length === 0 ? [""] : out
}

const validate = (body: any): string | undefined => {
  if (typeof body?.model !== "string") return "model: required"
  if (!Array.isArray(body.input) && typeof body.input !== "string") return "input: required"
  const calls = new Set<string>()
  for (const item of Array.isArray(body.input) ? body.input : []) {
    if (item.type === "function_call") calls.add(item.call_id)
    if (item.type === "function_call_output" && !calls.has(item.call_id)) {
      return `No tool call found for function call output with call_id ${item.call_id}.`
    }
  }
  const choice = body.tool_choice
  if (choice !== undefined && typeof choice === "object" && choice.type === "function") {
    const names = (body.tools ?? []).filter((t: any) => t.type === "function").map((t: any) => t.name)
    if (!names.includes(choice.name)) return `tool_choice: function '${choice.name}' not found in 'tools'.`
  }
  return undefined
}

export const start = (
  script: ReadonlyArray<FakeResponsesReply> | ((body: any, index: number) => FakeResponsesReply)
): Promise<FakeResponsesServer> => {
  const requests: Array<RecordedResponsesRequest> = []
  const sockets = new Set<Socket>()
  const sendError = (
    res: ServerResponse,
    status: number,
    type: string,
    message: string,
    code: string | null = null,
    headers?: Record<string, string>
  ) => {
    res.writeHead(status, { "content-type": "application/json", ...headers })
    res.end(JSON.stringify({ error: { message, type, param: null, code } }))
  }
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Array<Buffer> = []
    for await (const c of req) chunks.push(c as Buffer)
    if (req.method !== "POST" || !(req.url ?? "").startsWith("/v1/responses")) {
      return sendError(res, 404, "invalid_request_error", "not found")
    }
    const body = JSON.parse(Buffer.concat(chunks).toString("utf8"))
    const index = requests.length
    requests.push({ path: req.url ?? "", headers: req.headers, body })
    if (req.headers.authorization === undefined) {
      return sendError(res, 401, "invalid_request_error", "Missing bearer authentication")
    }
    const bad = validate(body)
    if (bad) return sendError(res, 400, "invalid_request_error", bad)
    const reply = typeof script === "function"
      ? script(body, index)
      : script[index] ??
        {
          _tag: "Error",
          status: 500,
          type: "server_error",
          message: `fake Responses API: no reply for request ${index + 1}`
        }
    if (reply._tag === "Hang") return
    if (reply._tag === "Error") {
      return sendError(res, reply.status, reply.type, reply.message, reply.code ?? null, reply.headers)
    }
    const n = index + 1
    const output: Array<any> = reply._tag === "Text"
      ? [{
        type: "message",
        id: `msg_${n}`,
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: reply.text, annotations: [] }]
      }]
      : reply.calls.map((c, k) => ({
        type: "function_call",
        id: `fc_${n}_${k}`,
        call_id: `call_${n}_${k}`,
        name: c.name,
        arguments: JSON.stringify(c.input),
        status: "completed"
      }))
    const input = tokens([body.instructions, body.input, body.tools])
    const outputTokens = Math.max(1, tokens(output))
    const response = (status: string, out: Array<any>) => ({
      id: `resp_${n}`,
      object: "response",
      created_at: 1_760_000_000,
      status,
      error: null,
      incomplete_details: null,
      instructions: null,
      model: body.model,
      output: out,
      parallel_tool_calls: true,
      tool_choice: body.tool_choice ?? "auto",
      tools: [],
      metadata: {},
      temperature: null,
      top_p: null,
      ...(body.prompt_cache_key !== undefined ? { prompt_cache_key: body.prompt_cache_key } : {}),
      usage: status === "completed"
        ? {
          input_tokens: input,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: outputTokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: input + outputTokens
        }
        : null
    })
    if (body.stream !== true) {
      res.writeHead(200, { "content-type": "application/json" })
      return res.end(JSON.stringify(response("completed", output)))
    }
    res.writeHead(200, { "content-type": "text/event-stream" })
    let seq = 0
    const event = (type: string, data: object) =>
      res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: seq++, ...data })}\n\n`)
    event("response.created", { response: response("in_progress", []) })
    output.forEach((item, i) => {
      if (item.type === "message") {
        event("response.output_item.added", { output_index: i, item: { ...item, status: "in_progress", content: [] } })
        for (const p of pieces(item.content[0].text)) {
          event("response.output_text.delta", {
            item_id: item.id,
            output_index: i,
            content_index: 0,
            delta: p,
            logprobs: []
          })
        }
      } else {
        event("response.output_item.added", {
          output_index: i,
          item: { ...item, status: "in_progress", arguments: "" }
        })
        for (const p of pieces(item.arguments)) {
          event("response.function_call_arguments.delta", { item_id: item.id, output_index: i, delta: p })
        }
      }
      event("response.output_item.done", { output_index: i, item })
    })
    event("response.completed", { response: response("completed", output) })
    res.end()
  }
  const server = createServer((req, res) => {
    handle(req, res).catch((e) => (res.headersSent ? res.end() : sendError(res, 500, "server_error", String(e))))
  })
  server.on("connection", (s) => {
    sockets.add(s)
    s.on("close", () => sockets.delete(s))
  })
  return new Promise((resolve) =>
    server.listen(0, "127.0.0.1", () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
        requests,
        close: () =>
          new Promise<void>((done) => {
            for (const s of sockets) s.destroy()
            server.close(() => done())
          })
      }))
  )
}

export const scoped = (
  script: Parameters<typeof start>[0]
): Effect.Effect<FakeResponsesServer, never, Scope.Scope> =>
  Effect.acquireRelease(Effect.promise(() => start(script)), (s) => Effect.promise(() => s.close()))
