/**
 * An OpenAI-compatible `POST /embeddings` on `node:http`, for the memory tests
 * of the real `openai` SDK path (`Embedder.layer`). As the real API:
 *
 * - `encoding_format: "base64"` (what the SDK asks for by default) answers
 *   each vector as the base64 of its little-endian float32 bytes, `"float"`
 *   (or none) as numbers; `dimensions` shortens the vectors;
 * - it refuses (400) an empty input, an empty string in it, more than 2048
 *   inputs, a missing model, an unknown `encoding_format`;
 * - `usage.prompt_tokens` counts the input (≈ 4 characters a token).
 *
 * Vectors are the local deterministic embedder's (texts sharing words are
 * close), so a test can reason about what is recalled. Every request is
 * recorded (inputs included); `down` makes it answer 503 as an outage would.
 */
import * as Effect from "effect/Effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import * as Embedder from "../../src/Embedder.js"

export interface FakeEmbeddings {
  /** `http://127.0.0.1:PORT/v1` (an `EMBEDDING_BASE_URL`). */
  readonly url: string
  /** Every request's body, in order (refused ones too). */
  readonly requests: Array<{ readonly model?: string; readonly input?: unknown; readonly encoding_format?: string }>
  /** Every text embedded (accepted requests only). */
  readonly texts: () => ReadonlyArray<string>
  /** While true, every request gets 503. */
  down: boolean
  readonly close: () => Promise<void>
}

const read = (req: IncomingMessage): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

const refuse = (res: ServerResponse, status: number, message: string) => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify({ error: { message, type: "invalid_request_error", param: "input", code: null } }))
}

export const start = async (options: {
  readonly dimensions?: number
  /** The tokens billed for a text (default ≈ 4 characters a token). */
  readonly tokensOf?: (text: string) => number
} = {}): Promise<FakeEmbeddings> => {
  const local = Embedder.makeLocal({ dimensions: options.dimensions ?? 256 })
  const embedded: Array<string> = []
  const state: FakeEmbeddings = {
    url: "",
    requests: [],
    texts: () => embedded,
    down: false,
    close: () => new Promise((resolve) => server.close(() => resolve()))
  }
  const server = createServer(async (req, res) => {
    const text = await read(req)
    if (req.method !== "POST" || !(req.url ?? "").endsWith("/embeddings")) {
      return refuse(res, 404, `no route ${req.method} ${req.url}`)
    }
    let body: any
    try {
      body = JSON.parse(text)
    } catch {
      return refuse(res, 400, "We could not parse the JSON body of your request.")
    }
    state.requests.push(body)
    if (state.down) return refuse(res, 503, "The server is overloaded or not ready yet.")
    if (typeof body?.model !== "string" || body.model === "") {
      return refuse(res, 400, "you must provide a model parameter")
    }
    const format = body.encoding_format ?? "float"
    if (format !== "float" && format !== "base64") {
      return refuse(res, 400, `'${format}' is not one of ['float', 'base64']`)
    }
    const inputs: Array<unknown> = typeof body.input === "string"
      ? [body.input]
      : Array.isArray(body.input)
      ? body.input
      : []
    if (inputs.length === 0 || inputs.length > 2048 || inputs.some((i) => typeof i !== "string" || i === "")) {
      return refuse(
        res,
        400,
        "'$.input' is invalid. Please check the API reference: https://platform.openai.com/docs/api-reference."
      )
    }
    const texts = inputs as Array<string>
    for (const text of texts) embedded.push(text)
    const vectors = Effect.runSync(local.embed(texts)).vectors.map((v) =>
      typeof body.dimensions === "number" ? v.slice(0, body.dimensions) : v
    )
    const tokens = texts.reduce((sum, t) => sum + (options.tokensOf?.(t) ?? Math.ceil(t.length / 4)), 0)
    res.writeHead(200, { "content-type": "application/json" })
    res.end(JSON.stringify({
      object: "list",
      model: body.model,
      data: vectors.map((v, index) => ({
        object: "embedding",
        index,
        embedding: format === "base64"
          ? Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64")
          : Array.from(v)
      })),
      usage: { prompt_tokens: tokens, total_tokens: tokens }
    }))
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()))
  const port = (server.address() as AddressInfo).port
  return Object.assign(state, { url: `http://127.0.0.1:${port}/v1` })
}
