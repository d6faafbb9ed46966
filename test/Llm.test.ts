import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Stream from "effect/Stream"
import type { ChatDelta } from "../src/Llm.js"
import { LlmError, unwrapDeltas, unwrapDeltasScoped } from "../src/Llm.js"

const reply: ReadonlyArray<ChatDelta> = [
  { _tag: "Content", text: "Hello " },
  { _tag: "Content", text: "there." },
  { _tag: "Finish", reason: "stop" }
]

/** A whole reply that counts how often it was produced (once per run of its stream). */
const counted = () => {
  let runs = 0
  const stream = unwrapDeltas(Effect.sync(() => {
    runs++
    return reply
  }))
  return { stream, runs: () => runs }
}

const consume = <E>(stream: Stream.Stream<ChatDelta, E>) =>
  Effect.suspend(() => {
    const seen: Array<ChatDelta> = []
    return Effect.as(Stream.runForEach(stream, (d) => Effect.sync(() => void seen.push(d))), seen)
  })

describe("Llm.unwrapDeltas", () => {
  it.effect("a whole reply is the same deltas each time its stream runs, decided only then", () =>
    Effect.gen(function*() {
      const { runs, stream } = counted()
      assert.strictEqual(runs(), 0, "nothing happens before the stream runs")
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Stream.runCollect(stream)), reply)
      assert.deepStrictEqual(yield* consume(stream), reply)
      assert.strictEqual(runs(), 2, "each run produces the reply again")
    }))

  it.effect("a stream derived from a whole reply is an ordinary stream and keeps what the wrapper adds", () =>
    Effect.gen(function*() {
      const { stream } = counted()
      const tapped: Array<string> = []
      const wrapped = Stream.tap(stream, (d) => Effect.sync(() => void tapped.push(d._tag)))
      assert.deepStrictEqual(yield* consume(wrapped), reply)
      assert.deepStrictEqual(tapped, ["Content", "Content", "Finish"])
      const prefixed = Stream.concat(Stream.make<Array<ChatDelta>>({ _tag: "Reasoning", text: "hm" }), stream)
      assert.deepStrictEqual((yield* consume(prefixed)).map((d) => d._tag), [
        "Reasoning",
        "Content",
        "Content",
        "Finish"
      ])
    }))

  it.effect("the effect may decide on a stream instead, and its failure fails the consumer", () =>
    Effect.gen(function*() {
      const paced = unwrapDeltas(Effect.succeed(Stream.fromIterable(reply).pipe(Stream.rechunk(1))))
      assert.deepStrictEqual(yield* consume(paced), reply)
      const broken = unwrapDeltas(Effect.succeed(Stream.concat(
        Stream.make<Array<ChatDelta>>({ _tag: "Content", text: "Hel" }),
        Stream.fail(new LlmError({ reason: "Connection", message: "cut" }))
      )))
      const seen: Array<ChatDelta> = []
      const cut = yield* Effect.either(Stream.runForEach(broken, (d) => Effect.sync(() => void seen.push(d))))
      assert.deepStrictEqual(seen, [{ _tag: "Content", text: "Hel" }])
      assert.isTrue(Either.isLeft(cut) && cut.left.reason === "Connection")
      const refused = unwrapDeltas<LlmError>(Effect.fail(new LlmError({ reason: "Auth", message: "no key" })))
      const error = yield* Effect.flip(consume(refused))
      assert.strictEqual(error.reason, "Auth")
      assert.strictEqual((yield* Effect.flip(Stream.runDrain(refused))).reason, "Auth")
    }))

  it.effect("unwrapDeltasScoped: what the effect acquires is released once the rest of the stream is consumed, run either way", () =>
    Effect.gen(function*() {
      const log: Array<string> = []
      const opened = unwrapDeltasScoped(
        Effect.acquireRelease(
          Effect.sync(() => void log.push("open")),
          () => Effect.sync(() => void log.push("close"))
        ).pipe(Effect.as(
          Stream.fromIterable(reply).pipe(
            Stream.rechunk(1),
            Stream.tap((d) => Effect.sync(() => void log.push(d._tag)))
          )
        ))
      )
      assert.deepStrictEqual(yield* consume(opened), reply)
      assert.deepStrictEqual(log, ["open", "Content", "Content", "Finish", "close"])
      log.length = 0
      assert.deepStrictEqual(Chunk.toReadonlyArray(yield* Stream.runCollect(opened)), reply)
      assert.deepStrictEqual(log, ["open", "Content", "Content", "Finish", "close"])
      // a consumer that fails midway still releases
      log.length = 0
      const failed = yield* Effect.either(
        Stream.runForEach(opened, (d) => d._tag === "Finish" ? Effect.die("stop") : Effect.void).pipe(
          Effect.catchAllDefect(Effect.fail)
        )
      )
      assert.isTrue(Either.isLeft(failed))
      assert.strictEqual(log[log.length - 1], "close")
    }))
})
