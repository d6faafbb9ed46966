/**
 * What Effect's building blocks cost on this machine (CPU µs per operation),
 * the figures the "Where we lose" analysis cites: the loop's per-call and
 * per-run costs are made of these.
 *
 * @since 0.1.0
 */
import { Tool } from "effect-react-engine"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Mailbox from "effect/Mailbox"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"

/** @since 0.1.0 */
export interface PrimitiveFigure {
  readonly name: string
  readonly us: number
}

/** Median CPU µs per run of `mk()` over `rounds` timed rounds of `n` runs (after two warm-ups). */
export const measure = async (n: number, mk: () => Effect.Effect<unknown, unknown>, rounds = 5): Promise<number> => {
  const program = Effect.gen(function*() {
    for (let i = 0; i < n; i++) yield* Effect.either(mk())
  })
  await Effect.runPromise(program)
  await Effect.runPromise(program)
  const xs: Array<number> = []
  for (let r = 0; r < rounds; r++) {
    const c0 = process.cpuUsage()
    await Effect.runPromise(program)
    const c = process.cpuUsage(c0)
    xs.push((c.user + c.system) / n)
  }
  xs.sort((a, b) => a - b)
  return xs[Math.floor(rounds / 2)]
}

const four = [1, 2, 3, 4]
const ok = Effect.succeed("ok")
const tool = Tool.make({
  name: "lookup",
  description: "d",
  parameters: Schema.Struct({ index: Schema.Number }),
  handler: () => Effect.succeed("ok")
})

/** @since 0.1.0 */
export const run = async (quick = false): Promise<Array<PrimitiveFigure>> => {
  const n = quick ? 1000 : 4000
  const cases: Array<[string, number, () => Effect.Effect<unknown, unknown>]> = [
    ["Effect.gen returning at once", n, () =>
      Effect.gen(function*() {
        return 1
      })],
    ["Tool.execute (Schema decode + handler)", n, () => Tool.execute(tool, { index: 1 })],
    ["fork + join", n, () => Effect.flatMap(Effect.fork(ok), Fiber.join)],
    [
      "Effect.timeoutFail on an instant effect",
      n,
      () => ok.pipe(Effect.timeoutFail({ duration: "60 seconds", onTimeout: () => new Error("t") }))
    ],
    ["4 effects: Effect.forEach sequential", n / 4, () => Effect.forEach(four, () => ok)],
    [
      "4 effects: Effect.forEach { concurrency: \"unbounded\" }",
      n / 4,
      () => Effect.forEach(four, () => ok, { concurrency: "unbounded" })
    ],
    [
      "4 effects: fork each, then join in order",
      n / 4,
      () => Effect.flatMap(Effect.forEach(four, () => Effect.fork(ok)), (fs) => Effect.forEach(fs, Fiber.join))
    ],
    ["Stream.fromIterable(4 items) drained", n / 10, () => Stream.runDrain(Stream.fromIterable(four))],
    [
      "10 events: Mailbox → Mailbox.toStream → Stream.runDrain",
      n / 10,
      () =>
        Effect.gen(function*() {
          const m = yield* Mailbox.make<number>()
          for (let i = 0; i < 10; i++) m.unsafeOffer(i)
          yield* m.end
          yield* Stream.runDrain(Mailbox.toStream(m))
        })
    ]
  ]
  const out: Array<PrimitiveFigure> = []
  for (const [name, count, mk] of cases) out.push({ name, us: await measure(count, mk) })
  return out
}
