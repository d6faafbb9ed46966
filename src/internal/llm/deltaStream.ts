/**
 * Streams of a reply's deltas: made from a reply that may be known whole, and
 * read chunk by chunk without a stream run. Re-exported by `Llm` (the docs are
 * there).
 *
 * @internal
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { ChatDelta } from "../../Llm.js"

/** Runs `f` on each chunk of `stream`, pulled one at a time. */
export const forEachChunk = <A, E, R, E2, R2>(
  stream: Stream.Stream<A, E, R>,
  f: (chunk: Chunk.Chunk<A>) => Effect.Effect<void, E2, R2>
): Effect.Effect<void, E | E2, R | R2> =>
  Effect.scoped(Effect.flatMap(Stream.toPull(stream), (pull) => {
    // the pull fails with None at the stream's end, with Some(error) when the stream fails
    const next: Effect.Effect<void, E | E2, R | R2> = Effect.matchEffect(pull, {
      onFailure: Option.match({ onNone: () => Effect.void, onSome: (error: E) => Effect.fail(error) }),
      onSuccess: (chunk) => Effect.zipRight(f(chunk), next)
    })
    return next
  }))

// a reply known whole is one chunk, written at once (`fromIterable` would pull it through an iterator loop)
const toStream = <E>(r: ReadonlyArray<ChatDelta> | Stream.Stream<ChatDelta, E>): Stream.Stream<ChatDelta, E> =>
  Array.isArray(r)
    ? Stream.fromChunk(Chunk.fromIterable(r as ReadonlyArray<ChatDelta>))
    : (r as Stream.Stream<ChatDelta, E>)

/** A streamed reply decided when the stream runs: the deltas, or the stream of them. */
export const unwrapDeltas = <E>(
  effect: Effect.Effect<ReadonlyArray<ChatDelta> | Stream.Stream<ChatDelta, E>, E>
): Stream.Stream<ChatDelta, E> => Stream.unwrap(Effect.map(effect, toStream))

/** `unwrapDeltas` for an effect that needs a scope. */
export const unwrapDeltasScoped = <E>(
  effect: Effect.Effect<ReadonlyArray<ChatDelta> | Stream.Stream<ChatDelta, E>, E, Scope.Scope>
): Stream.Stream<ChatDelta, E> => Stream.unwrapScoped(Effect.map(effect, toStream))
