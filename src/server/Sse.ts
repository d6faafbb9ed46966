/**
 * Server-Sent Events encoding: one frame per run event (`id:` cursor, `event:`
 * channel, `data:` JSON), `: ping` heartbeats, and the `text/event-stream`
 * response with the headers proxies need.
 *
 * @since 0.1.0
 */
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { Channel } from "../RunEvent.js"

/**
 * One encoded SSE frame of a run.
 *
 * @since 0.1.0 @category models
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
 * @since 0.1.0 @category encoding
 */
export const encodeText = (id: number, channel: string, data: unknown): string =>
  `id: ${id}\nevent: ${channel}\ndata: ${JSON.stringify(data)}\n\n`

/** @since 0.1.0 @category constructors */
export const frame = (id: number, channel: Channel, data: Record<string, unknown>): Frame => ({
  id,
  channel,
  bytes: encoder.encode(encodeText(id, channel, data))
})

/**
 * The last frame of a stream cut by server shutdown (no `id:`, so a client's
 * cursor stays on the last run event and it can resume elsewhere).
 *
 * @since 0.1.0 @category encoding
 */
export const shutdownFrame: Uint8Array = encoder.encode(
  `event: error\ndata: ${JSON.stringify({ message: "Server is shutting down", retryable: true })}\n\n`
)

/** An SSE comment line (ignored by parsers). @since 0.1.0 @category encoding */
export const comment = (text: string): Uint8Array => encoder.encode(`: ${text}\n\n`)

/**
 * `: ping` comments: one immediately (it flushes the headers), then one per interval.
 *
 * @since 0.1.0 @category constructors
 */
export const heartbeat = (interval: Duration.DurationInput): Stream.Stream<Uint8Array> =>
  Stream.tick(interval).pipe(Stream.map(() => comment("ping")))

/**
 * The SSE response: frames with heartbeats until the frames end, cut short
 * (after a final comment) when `shutdown` completes.
 *
 * @since 0.1.0 @category constructors
 */
export const response = (
  frames: Stream.Stream<Uint8Array>,
  options: {
    readonly heartbeatMs: number
    readonly shutdown: Deferred.Deferred<void>
    readonly headers?: Record<string, string>
  }
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.stream(
    Stream.suspend(() => {
      // the shutdown frame only goes out when shutdown cut the frames short
      let complete = false
      return frames.pipe(
        Stream.onEnd(Effect.sync(() => {
          complete = true
        })),
        Stream.merge(heartbeat(Duration.millis(options.heartbeatMs)), { haltStrategy: "left" }),
        Stream.interruptWhenDeferred(options.shutdown),
        Stream.concat(Stream.suspend(() => (complete ? Stream.empty : Stream.make(shutdownFrame))))
      )
    }),
    {
      contentType: "text/event-stream",
      headers: {
        "cache-control": "no-cache",
        "x-accel-buffering": "no",
        ...options.headers
      }
    }
  )
