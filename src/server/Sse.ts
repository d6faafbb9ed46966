/**
 * Server-Sent Events: the edge encoder of a run's typed events (`RunRegistry`'s
 * stream) — one frame per event (`id:` its sequence number, absent on an
 * ephemeral event; `event:` its channel; `data:` its JSON payload, `EventWire`),
 * `: ping` for a heartbeat — and the `text/event-stream` response with the
 * headers proxies need.
 *
 * @since 0.1.0
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { Readable } from "node:stream"
import { toWire } from "./EventWire.js"
import type { Followed, Following } from "./internal/runFeed.js"
import { isItem } from "./internal/runFeed.js"

const encoder = new TextEncoder()

/**
 * The text of a frame. `JSON.stringify` never emits a raw newline, so `data:`
 * is always one line. Without an id (an ephemeral event) the frame has no
 * `id:` line: a client's `Last-Event-ID` stays on the last stored event.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encodeText = (id: number | undefined, channel: string, data: unknown): string =>
  `${id === undefined ? "" : `id: ${id}\n`}event: ${channel}\ndata: ${JSON.stringify(data)}\n\n`

/**
 * An SSE comment line (ignored by parsers).
 *
 * @since 0.1.0
 * @category encoding
 */
export const comment = (text: string): Uint8Array => encoder.encode(`: ${text}\n\n`)

const ping = comment("ping")

/**
 * The frame of a followed item: an event's frame, or `: ping` for a heartbeat.
 *
 * @since 0.1.0
 * @category encoding
 */
export const encode = (item: Followed): Uint8Array => {
  if (!isItem(item)) return ping
  const { channel, data } = toWire(item.event)
  return encoder.encode(encodeText(item.seq, channel, data))
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
 * The headers of an event stream (what proxies need to pass it through unbuffered).
 *
 * @since 0.1.0
 * @category constants
 */
export const HEADERS: Readonly<Record<string, string>> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  "x-accel-buffering": "no"
}

/**
 * The `text/event-stream` response of a follower (`RunRegistry.follow`): `: ping`
 * at once (it flushes the headers), the replayed events, then the live ones until
 * `done` (a heartbeat as `: ping`); a stream ended by a server shutting down
 * (`shutdown` is done) ends with `shutdownFrame`. The stream is consumed by a fiber of the request's scope.
 *
 * The last adapter is a Node `Readable` the HTTP layer pipes to the socket, for the
 * one rule an Effect response stream cannot keep: a client that does not read is
 * dropped. The platform's stream response pulls only while the socket drains, so
 * a paused client's events would pile up in its subscription, unbounded. Here the
 * fiber takes every event as it comes and pushes its frame; when more than
 * `maxBacklogBytes` of live frames wait unread as a frame comes, the readable is
 * destroyed, which closes the connection (the run goes on; the client can resume
 * from its last event id). Replayed frames do not count: they come all at once.
 *
 * @since 0.1.0
 * @category constructors
 */
export const response = (
  following: Following,
  options: {
    readonly shutdown: Deferred.Deferred<void>
    readonly maxBacklogBytes?: number
    readonly headers?: Record<string, string>
  }
): Effect.Effect<HttpServerResponse.HttpServerResponse, never, Scope.Scope> =>
  Effect.gen(function*() {
    const max = options.maxBacklogBytes ?? Infinity
    const readable = new Readable({ read() {} })
    readable.push(ping)
    for (const item of following.replay) readable.push(encode(item))
    /** What went out live: bytes so far, and whether the run's `done` was among them. */
    interface Sent {
      readonly live: number
      readonly done: boolean
    }
    const push = (sent: Sent, item: Followed): Sent => {
      if (readable.destroyed) return sent
      // unread bytes are the last `readableLength` pushed; of those, at most `live` are live frames
      if (Math.min(readable.readableLength, sent.live) > max) {
        readable.destroy(new Error(`SSE client dropped: more than ${max} bytes unread`))
        return sent
      }
      const bytes = encode(item)
      readable.push(bytes)
      return { live: sent.live + bytes.length, done: sent.done || (isItem(item) && item.event._tag === "Done") }
    }
    // pulled chunk by chunk (`Stream.toPull`): a stream run through a sink (`runForEach`, `runFold`) costs
    // ~17 KB more heap per idle client (docs/benchmarks.md, idle followers)
    const pull = yield* Stream.toPull(following.live)
    const drain = (sent: Sent): Effect.Effect<Sent> =>
      Effect.matchEffect(pull, {
        onFailure: () => Effect.succeed(sent),
        onSuccess: (chunk) => drain(Chunk.reduce(chunk, sent, push))
      })
    yield* drain({ live: 0, done: following.replay.some((item) => item.event._tag === "Done") }).pipe(
      Effect.flatMap((sent) =>
        Effect.map(Deferred.isDone(options.shutdown), (stopping) => {
          if (readable.destroyed) return
          // cut by a shutdown: a last frame without an id (the client resumes from its last event)
          if (stopping && !sent.done) readable.push(shutdownFrame)
          readable.push(null)
        })
      ),
      Effect.forkScoped
    )
    return HttpServerResponse.raw(readable, {
      contentType: "text/event-stream",
      headers: { ...HEADERS, ...options.headers }
    })
  })
