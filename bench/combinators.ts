/**
 * What the round's and the streamed reply's combinators cost alone (CPU µs per operation, median
 * of 9 batches of 2,000): `npx tsx bench/combinators.ts [filter]`. The figures bench/analysis.md
 * cites for issue 27's "what the combinators cost": a tool call's timeout, the round's container
 * (`Effect.forEach` with concurrency and its alternatives), a span, and one run of a one-chunk
 * stream by each way of building and consuming it.
 *
 * @since 0.1.0
 */
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as FiberSet from "effect/FiberSet"
import { identity } from "effect/Function"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { measure } from "./primitives.js"

const four = [1, 2, 3, 4]
const handler = (i: number) => Effect.sync(() => `record ${i}`)
const timed = (e: Effect.Effect<string>) =>
  Effect.timeoutTo(e, { duration: "60 seconds", onSuccess: identity, onTimeout: () => "timed out" })
const spanned = (e: Effect.Effect<string>) =>
  Effect.useSpan("execute_tool", { captureStackTrace: false }, (span) => Effect.withParentSpan(e, span))
const call = (i: number) => timed(handler(i))
/** A reply as a provider's stream of a whole reply carries it: three deltas. */
const deltas = () => [{ _tag: "ToolCall" }, { _tag: "Usage" }, { _tag: "Finish" }]
// a sink, never read: the consumer does a little work with each chunk
let _seen = 0
const count = (c: Chunk.Chunk<unknown>) => {
  _seen += Chunk.size(c)
  return Effect.void
}
const pullAll = <A, E>(s: Stream.Stream<A, E>) =>
  Effect.scoped(Effect.flatMap(Stream.toPull(s), (pull) => {
    const loop: Effect.Effect<void, E> = Effect.matchEffect(pull, {
      onFailure: (e) => (Option.isNone(e) ? Effect.void : Effect.fail(e.value)),
      onSuccess: (c) => Effect.zipRight(count(c), loop)
    })
    return loop
  }))

const cases: Array<[string, () => Effect.Effect<unknown, unknown>]> = [
  ["1 call: the handler alone", () => handler(1)],
  ["1 call: Effect.timeoutTo(handler)", () => call(1)],
  [
    "1 call: Effect.raceFirst(handler, sleep)",
    () => Effect.raceFirst(handler(1), Effect.as(Effect.sleep("60 seconds"), "t"))
  ],
  ["1 call: a span around the handler", () => spanned(handler(1))],
  ["1 call: fork + join", () => Effect.flatMap(Effect.fork(handler(1)), Fiber.join)],
  ["4 calls: forEach, sequential", () => Effect.forEach(four, handler)],
  ["4 calls: forEach { concurrency: 4 }", () => Effect.forEach(four, handler, { concurrency: 4 })],
  ["4 calls: Effect.all { concurrency: unbounded }", () => Effect.all(four.map(handler), { concurrency: "unbounded" })],
  [
    "4 calls: fork each, join each",
    () => Effect.flatMap(Effect.forEach(four, (i) => Effect.fork(handler(i))), (fs) => Effect.forEach(fs, Fiber.join))
  ],
  ["4 timed calls: forEach, sequential", () => Effect.forEach(four, call)],
  ["4 timed calls: forEach { concurrency: 4 }", () => Effect.forEach(four, call, { concurrency: 4 })],
  [
    "4 timed + spanned calls: forEach { concurrency: 4 }",
    () => Effect.forEach(four, (i) => spanned(call(i)), { concurrency: 4 })
  ],
  [
    "4 timed calls: Effect.scoped + forkScoped + join",
    () =>
      Effect.scoped(
        Effect.flatMap(Effect.forEach(four, (i) => Effect.forkScoped(call(i))), (fs) => Effect.forEach(fs, Fiber.join))
      )
  ],
  [
    "4 timed calls: FiberSet.run + join",
    () =>
      Effect.scoped(Effect.flatMap(FiberSet.make<string>(), (set) =>
        Effect.flatMap(
          Effect.forEach(four, (i) => FiberSet.run(set, call(i))),
          (fs) => Effect.forEach(fs, Fiber.join)
        )))
  ],
  [
    "4 timed calls: fork each, join each",
    () => Effect.flatMap(Effect.forEach(four, (i) => Effect.fork(call(i))), (fs) => Effect.forEach(fs, Fiber.join))
  ],
  [
    "stream: suspend(fromIterable) → runForEach",
    () => Stream.runForEach(Stream.suspend(() => Stream.fromIterable(deltas())), () => Effect.void)
  ],
  [
    "stream: suspend(fromChunk) → runForEach",
    () => Stream.runForEach(Stream.suspend(() => Stream.fromChunk(Chunk.unsafeFromArray(deltas()))), () => Effect.void)
  ],
  [
    "stream: suspend(fromChunk) → runForEachChunk",
    () => Stream.runForEachChunk(Stream.suspend(() => Stream.fromChunk(Chunk.unsafeFromArray(deltas()))), count)
  ],
  [
    "stream: unwrap(fromChunk) → runForEachChunk",
    () =>
      Stream.runForEachChunk(Stream.unwrap(Effect.sync(() => Stream.fromChunk(Chunk.unsafeFromArray(deltas())))), count)
  ],
  [
    "stream: suspend(fromChunk) → runFold",
    () => Stream.runFold(Stream.suspend(() => Stream.fromChunk(Chunk.unsafeFromArray(deltas()))), 0, (n) => n + 1)
  ],
  [
    "stream: suspend(fromChunk) → Stream.toPull loop in Effect.scoped",
    () => pullAll(Stream.suspend(() => Stream.fromChunk(Chunk.unsafeFromArray(deltas()))))
  ]
]

const filter = process.argv[2]
for (const [name, mk] of cases) {
  if (filter !== undefined && !name.includes(filter)) continue
  console.log(`${(await measure(2000, mk, 9)).toFixed(1).padStart(7)} µs  ${name}`)
}
