/**
 * `Llm.forEachChunk` reads a stream the way `Stream.runForEachChunk` runs it: the same
 * chunks in the same order, the same failure, the stream's resources released at the end
 * (also when the stream or the callback fails) — by pulling chunks one at a time.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Stream from "effect/Stream"
import * as Llm from "../src/Llm.js"

/** A stream of `chunks` (then `failure`, if any) holding a resource; `log` records what happened. */
const source = (log: Array<string>, chunks: ReadonlyArray<ReadonlyArray<number>>, failure?: string) => {
  const body = Stream.concat(
    Stream.fromIterable(chunks).pipe(Stream.flatMap((c) => Stream.fromChunk(Chunk.fromIterable(c)))),
    failure === undefined ? Stream.empty : Stream.fail(failure)
  )
  return Stream.unwrapScoped(Effect.as(
    Effect.acquireRelease(Effect.sync(() => log.push("open")), () => Effect.sync(() => log.push("close"))),
    body
  ))
}

const both = (chunks: ReadonlyArray<ReadonlyArray<number>>, failure?: string, failAt?: number) =>
  Effect.gen(function*() {
    const run = (consume: typeof Llm.forEachChunk) => {
      const log: Array<string> = []
      const f = (chunk: Chunk.Chunk<number>) => {
        log.push(`chunk ${Chunk.join(Chunk.map(chunk, String), ",")}`)
        return Chunk.some(chunk, (n) => n === failAt) ? Effect.fail("callback failed") : Effect.void
      }
      return Effect.map(Effect.exit(consume(source(log, chunks, failure), f)), (exit) => ({ exit, log }))
    }
    const ours = yield* run(Llm.forEachChunk)
    const reference = yield* run((stream, f) => Stream.runForEachChunk(stream, f))
    return { ours, reference }
  })

describe("Llm.forEachChunk", () => {
  it.effect("the chunks in order, then the resource released", () =>
    Effect.gen(function*() {
      const { ours, reference } = yield* both([[1, 2], [3], [4, 5, 6]])
      assert.isTrue(Exit.isSuccess(ours.exit))
      assert.deepStrictEqual(ours.log, reference.log)
      assert.deepStrictEqual(ours.log[0], "open")
      assert.deepStrictEqual(ours.log[ours.log.length - 1], "close")
      assert.strictEqual(
        ours.log.filter((l) => l.startsWith("chunk")).join(";"),
        reference.log.filter((l) => l.startsWith("chunk")).join(";")
      )
    }))

  it.effect("one chunk known whole: one call", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      yield* Llm.forEachChunk(Stream.fromChunk(Chunk.make(1, 2, 3)), (chunk) =>
        Effect.sync(() => log.push(Chunk.join(Chunk.map(chunk, String), ","))))
      assert.deepStrictEqual(log, ["1,2,3"])
    }))

  it.effect("a stream that fails: the same failure, after the chunks before it, the resource released", () =>
    Effect.gen(function*() {
      const { ours, reference } = yield* both([[1], [2]], "boom")
      assert.deepStrictEqual(ours.exit, Exit.fail("boom"))
      assert.deepStrictEqual(ours.log, reference.log)
      assert.include(ours.log, "close")
    }))

  it.effect("a callback that fails stops the reading: no chunk after it, the resource released", () =>
    Effect.gen(function*() {
      const { ours, reference } = yield* both([[1], [2], [3]], undefined, 2)
      assert.deepStrictEqual(ours.exit, Exit.fail("callback failed"))
      assert.deepStrictEqual(ours.log, reference.log)
      assert.notInclude(ours.log, "chunk 3")
      assert.include(ours.log, "close")
    }))
})
