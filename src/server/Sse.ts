/**
 * Server-Sent Events encoding: one frame per run event (`id:` cursor, `event:`
 * channel, `data:` JSON), `: ping` heartbeats, and the `text/event-stream`
 * response with the headers proxies need.
 *
 * @since 0.1.0
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { Readable } from "node:stream"
import type { Channel } from "./EventWire.js"

/**
 * One encoded SSE frame of a run.
 *
 * @since 0.1.0
 * @category models
 */
export interface Frame {
  /** Per-run cursor, 1, 2, 3… */
  readonly id: number
  readonly channel: Channel
  /** The encoded frame (shared by every subscriber). */
  readonly bytes: Uint8Array
}

const encoder = new TextEncoder()

/**
 * The text of a frame. `JSON.stringify` never emits a raw newline, so `data:`
 * is always one line.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encodeText = (id: number, channel: string, data: unknown): string =>
  `id: ${id}\nevent: ${channel}\ndata: ${JSON.stringify(data)}\n\n`

/**
 * @since 0.1.0
 * @category constructors
 */
export const frame = (id: number, channel: Channel, data: Record<string, unknown>): Frame => ({
  id,
  channel,
  bytes: encoder.encode(encodeText(id, channel, data))
})

/**
 * The frame of an ephemeral event (`RunEvent.isEphemeral`: tool progress,
 * partial output): live only, never stored, no `id:` line (a client's
 * `Last-Event-ID` stays on the last stored event); its `id` is 0.
 *
 * @since 0.1.0
 * @category constructors
 */
export const ephemeralFrame = (channel: Channel, data: Record<string, unknown>): Frame => ({
  id: 0,
  channel,
  bytes: encoder.encode(`event: ${channel}\ndata: ${JSON.stringify(data)}\n\n`)
})

const decoder = new TextDecoder()

/**
 * The JSON payload of a frame (the inverse of `frame`: its `data:` line, parsed).
 *
 * @since 0.1.0
 * @category encoding
 */
export const dataOf = (frame: Frame): Record<string, unknown> => {
  const text = decoder.decode(frame.bytes)
  const start = text.indexOf("\ndata: ") + 7
  return JSON.parse(text.slice(start, text.indexOf("\n", start)))
}

/**
 * The last frame of a stream cut by server shutdown (no `id:`, so a client's
 * cursor stays on the last run event and it can resume elsewhere).
 *
 * @since 0.1.0
 * @category encoding
 */
export const shutdownFrame: Uint8Array = encoder.encode(
  `event: error\ndata: ${JSON.stringify({ message: "Server is shutting down", retryable: true })}\n\n`
)

/**
 * An SSE comment line (ignored by parsers).
 *
 * @since 0.1.0
 * @category encoding
 */
export const comment = (text: string): Uint8Array => encoder.encode(`: ${text}\n\n`)

/**
 * One SSE connection: a Node `Readable` the HTTP layer pipes to the socket.
 * Frames are pushed synchronously (no per-connection fiber or Stream: an Effect
 * Stream pipeline with a merged heartbeat costs ~80 KB of heap per connection,
 * this ~2 KB). It sends `: ping` at once (flushing the headers) and then every
 * `heartbeatMs`, and runs `onClose` exactly once when it ends or the client goes.
 *
 * A client that does not read (its socket stays full) is dropped: when more than
 * `maxBacklogBytes` of live frames wait unread in the sink as a frame comes, the
 * sink is destroyed, which closes the connection. Its run goes on; the client can
 * resume from its last event id. Replayed frames (`replay`, read back from the run
 * log when the client attached) do not count: they come all at once.
 *
 * @since 0.1.0
 * @category models
 */
export interface Sink {
  readonly readable: Readable
  /** Pushes an encoded live frame (ignored once closed). */
  readonly write: (bytes: Uint8Array) => void
  /** Pushes a frame replayed from the run's buffer (not counted in the backlog). */
  readonly replay: (bytes: Uint8Array) => void
  /** Ends the response (idempotent). */
  readonly end: () => void
  readonly isClosed: () => boolean
}

/**
 * @since 0.1.0
 * @category constructors
 */
export const makeSink = (heartbeatMs: number, onClose: () => void, maxBacklogBytes = Infinity): Sink => {
  let closed = false
  const close = () => {
    if (closed) return
    closed = true
    clearInterval(timer)
    onClose()
  }
  const readable = new Readable({
    read() {},
    destroy(error, callback) {
      close()
      callback(error)
    }
  })
  // Unread bytes are the last `readableLength` bytes pushed; of those, at most
  // `live` are live frames. Checked before this frame: one large frame to a reading
  // client is fine.
  let live = 0
  const push = (bytes: Uint8Array) => {
    if (closed) return
    if (Math.min(readable.readableLength, live) > maxBacklogBytes) {
      readable.destroy(new Error(`SSE client dropped: more than ${maxBacklogBytes} bytes unread`))
      return
    }
    live += bytes.length
    readable.push(bytes)
  }
  const ping = comment("ping")
  // Node edge: the heartbeat belongs to the Node Readable (written by the run synchronously,
  // read by Node's socket), not to a fiber; it stops when the Readable closes.
  const timer = setInterval(() => push(ping), heartbeatMs)
  timer.unref()
  readable.push(ping)
  return {
    readable,
    write: push,
    replay: (bytes) => {
      if (!closed) readable.push(bytes)
    },
    end: () => {
      if (closed) return
      close()
      readable.push(null)
    },
    isClosed: () => closed
  }
}

/**
 * The `text/event-stream` response over a sink, with the headers proxies need.
 *
 * @since 0.1.0
 * @category constructors
 */
export const response = (sink: Sink, headers?: Record<string, string>): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.raw(sink.readable, {
    contentType: "text/event-stream",
    headers: {
      "content-type": "text/event-stream",
      "cache-control": "no-cache",
      "x-accel-buffering": "no",
      ...headers
    }
  })
