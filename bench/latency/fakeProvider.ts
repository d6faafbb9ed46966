/**
 * A latency-modelled fake OpenAI chat-completions provider on 127.0.0.1.
 *
 * Latency model: every reply costs `ttftMs` before its first token, then
 * `1000 / tokensPerSecond` ms per token. A streamed reply sends token i at
 * `ttft + i / rate` and ends (finish, usage, `[DONE]`) at `ttft + n / rate`; a
 * non-streamed reply arrives whole at `ttft + n / rate`. Times are scheduled from
 * the request's arrival (absolute, so timer overshoot does not accumulate).
 *
 * Tokens: one per word of text (`/\s*\S+/`); a tool call is one token for its id
 * and name plus one per 4 characters of its arguments. The reply's `usage` reports
 * exactly the tokens generated (`completion_tokens`), in streams only when
 * `stream_options.include_usage` is set (as OpenAI does).
 *
 * What the model says is the `behaviour` function's (scenarios.ts). Every call
 * served is recorded (kind, streamed or not, tokens) for the per-run figures.
 *
 * @since 0.1.0
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { chunk, completionBody } from "../../test/utils/fakeOpenAiServer.js"
import type { Plan, PlanKind, PlannedCall } from "./scenarios.js"

/** @since 0.1.0 */
export interface LatencyModel {
  readonly ttftMs: number
  readonly tokensPerSecond: number
}

/** One call the provider served. @since 0.1.0 */
export interface ServedCall {
  readonly kind: PlanKind | "error"
  readonly stream: boolean
  readonly outputTokens: number
  /** ms from the request's arrival to the end of the reply (or its abort). */
  readonly durationMs: number
  readonly aborted: boolean
}

/** @since 0.1.0 */
export interface LatencyProvider {
  /** Base URL including `/v1`. */
  readonly url: string
  /** The calls served since the last `take()` (calls still in flight are not included). */
  readonly take: () => Array<ServedCall>
  readonly close: () => Promise<void>
}

/** The pieces a reply is streamed in: one per token. */
type Piece =
  | { readonly _tag: "text"; readonly text: string }
  | {
    readonly _tag: "call"
    readonly index: number
    readonly id?: string
    readonly name?: string
    readonly arguments: string
  }

/** Splits a plan into tokens (see the module doc). @since 0.1.0 */
export const pieces = (plan: Plan): Array<Piece> => {
  const out: Array<Piece> = []
  const content = "content" in plan ? plan.content : undefined
  for (const word of content?.match(/\s*\S+/g) ?? []) out.push({ _tag: "text", text: word })
  const calls: ReadonlyArray<PlannedCall> = ("toolCalls" in plan ? plan.toolCalls : undefined) ?? []
  calls.forEach((c, index) => {
    out.push({ _tag: "call", index, id: c.id, name: c.name, arguments: "" })
    for (let i = 0; i < c.arguments.length; i += 4) {
      out.push({ _tag: "call", index, arguments: c.arguments.slice(i, i + 4) })
    }
  })
  return out
}

const readBody = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const parts: Array<Buffer> = []
    req.on("data", (c: Buffer) => parts.push(c))
    req.on("end", () => resolve(Buffer.concat(parts).toString("utf8")))
    req.on("error", reject)
  })

const sleepUntil = (at: number): Promise<void> => {
  const wait = at - performance.now()
  return wait <= 0 ? Promise.resolve() : new Promise((resolve) => setTimeout(resolve, wait))
}

/** Starts the provider on 127.0.0.1 (random port). @since 0.1.0 */
export const start = async (model: LatencyModel, behaviour: (body: any) => Plan): Promise<LatencyProvider> => {
  const perToken = 1000 / model.tokensPerSecond
  let served: Array<ServedCall> = []
  const sockets = new Set<Socket>()

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const t0 = performance.now()
    const text = await readBody(req)
    if (req.method !== "POST" || !(req.url ?? "").endsWith("/chat/completions")) {
      res.writeHead(404, { "content-type": "application/json" })
      res.end(JSON.stringify({ error: { message: `latency provider: no route ${req.method} ${req.url}` } }))
      return
    }
    let body: any
    let plan: Plan
    try {
      body = JSON.parse(text)
      plan = behaviour(body)
    } catch (e) {
      served.push({ kind: "error", stream: false, outputTokens: 0, durationMs: performance.now() - t0, aborted: false })
      res.writeHead(400, { "content-type": "application/json" })
      res.end(
        JSON.stringify({
          error: {
            message: `latency provider: ${e instanceof Error ? e.message : String(e)}`,
            type: "invalid_request_error"
          }
        })
      )
      return
    }
    const stream = body.stream === true
    const tokens = pieces(plan)
    const n = tokens.length
    const usage = { prompt: Math.ceil(text.length / 4), completion: n }
    let aborted = false
    res.on("close", () => {
      if (!res.writableFinished) aborted = true
    })
    const record = () =>
      served.push({ kind: plan.kind, stream, outputTokens: n, durationMs: performance.now() - t0, aborted })
    const content = "content" in plan ? plan.content : undefined
    const calls = "toolCalls" in plan ? plan.toolCalls : undefined
    if (!stream) {
      await sleepUntil(t0 + model.ttftMs + n * perToken)
      if (aborted) return record()
      res.writeHead(200, { "content-type": "application/json" })
      res.end(JSON.stringify(completionBody({
        ...(content !== undefined ? { content } : {}),
        ...(calls !== undefined ? { toolCalls: calls } : {}),
        usage
      })))
      return record()
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" })
    res.flushHeaders()
    const send = (c: unknown) => res.write(`data: ${JSON.stringify(c)}\n\n`)
    for (let i = 0; i < n; i++) {
      await sleepUntil(t0 + model.ttftMs + i * perToken)
      if (aborted) return record()
      const p = tokens[i]
      if (p._tag === "text") {
        const c = chunk.content(p.text)
        if (i === 0) (c.choices[0].delta as Record<string, unknown>).role = "assistant"
        send(c)
      } else {
        send(chunk.toolCall(p.index, {
          ...(p.id !== undefined ? { id: p.id } : {}),
          ...(p.name !== undefined ? { name: p.name } : {}),
          arguments: p.arguments
        }))
      }
    }
    await sleepUntil(t0 + model.ttftMs + n * perToken)
    if (aborted) return record()
    send(chunk.finish(calls !== undefined && calls.length > 0 ? "tool_calls" : "stop"))
    if (body.stream_options?.include_usage === true) send(chunk.usage(usage.prompt, usage.completion))
    res.end("data: [DONE]\n\n")
    record()
  }

  const server = createServer({ noDelay: true }, (req, res) => {
    handle(req, res).catch((e) => {
      if (!res.headersSent) res.writeHead(500)
      res.end(String(e))
    })
  })
  server.on("connection", (socket) => {
    sockets.add(socket)
    socket.on("close", () => sockets.delete(socket))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}/v1`,
    take: () => {
      const out = served
      served = []
      return out
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      })
  }
}
