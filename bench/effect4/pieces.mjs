// The loop's building blocks, timed alone: the same pieces on Effect 3 (the project's 3.22) and Effect 4.1.5
// (issue 45, item 5). Median CPU µs per piece over 7 batches of 2,000 (after 3 warm-up batches).
//
//   npm i --prefix /tmp/effect4 effect@4.1.5
//   node bench/effect4/pieces.mjs node_modules/effect 3
//   node bench/effect4/pieces.mjs /tmp/effect4/node_modules/effect 4
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"

const [dirArg, major] = process.argv.slice(2)
const dir = pathToFileURL(resolve(dirArg)).href
const Effect = await import(`${dir}/dist/esm/Effect.js`).catch(() => import(`${dir}/dist/Effect.js`))
const Stream = await import(`${dir}/dist/esm/Stream.js`).catch(() => import(`${dir}/dist/Stream.js`))
const Ref = await import(`${dir}/dist/esm/Ref.js`).catch(() => import(`${dir}/dist/Ref.js`))
const Chunk = major === "3" ? await import(`${dir}/dist/esm/Chunk.js`) : undefined
const Option = major === "3" ? await import(`${dir}/dist/esm/Option.js`) : undefined
const Pull = major === "4" ? await import(`${dir}/dist/Pull.js`) : undefined
const v = Effect.void
const items = [0, 1, 2, 3]
const timed = (e) =>
  major === "3"
    ? Effect.timeoutTo(e, { duration: "60 seconds", onSuccess: (a) => a, onTimeout: () => "timed out" })
    : Effect.timeoutOrElse(e, { duration: "60 seconds", orElse: () => Effect.succeed("timed out") })
const deltas = ["a", "b", "c"]
const oneChunk = () => major === "3" ? Stream.fromChunk(Chunk.fromIterable(deltas)) : Stream.fromArray(deltas)
const runStream = () =>
  major === "3" ? Stream.runForEachChunk(oneChunk(), () => v) : Stream.runForEachArray(oneChunk(), () => v)
const pullStream = () =>
  Effect.scoped(Effect.flatMap(Stream.toPull(oneChunk()), (pull) => {
    const next = major === "3"
      ? Effect.matchEffect(pull, {
        onFailure: Option.match({ onNone: () => v, onSome: Effect.fail }),
        onSuccess: () => next
      })
      : Pull.catchDone(Effect.flatMap(pull, () => next), () => v)
    return next
  }))
const ref = Effect.runSync(Ref.make(0))
const pieces = {
  "forEach of 4, one fiber each (a w2 round's fan-out)": () =>
    Effect.forEach(items, () => Effect.sync(() => 1), { concurrency: 4 }),
  "the same, each under a 60 s timeout": () =>
    Effect.forEach(items, () => timed(Effect.sync(() => 1)), { concurrency: 4 }),
  "one timeout around one call": () => timed(Effect.sync(() => 1)),
  "a one-chunk Stream run (runForEachChunk / runForEachArray)": runStream,
  "the same stream pulled (toPull in scoped)": pullStream,
  "a span (withSpan around a ready effect)": () => Effect.withSpan(v, "span"),
  "Ref.update then Ref.get": () => Effect.flatMap(Ref.update(ref, (n) => n + 1), () => Ref.get(ref)),
  "flatMap of a ready effect": () => Effect.flatMap(Effect.succeed(1), (n) => Effect.succeed(n + 1))
}
const N = 2000
const batch = async (make) => {
  const program = Effect.gen(function*() {
    for (let i = 0; i < N; i++) yield* make()
  })
  const t = process.cpuUsage()
  await Effect.runPromise(program)
  const u = process.cpuUsage(t)
  return (u.user + u.system) / N
}
for (const [name, make] of Object.entries(pieces)) {
  for (let w = 0; w < 3; w++) await batch(make)
  const xs = []
  for (let r = 0; r < 7; r++) xs.push(await batch(make))
  xs.sort((a, b) => a - b)
  console.log(`${major} ${name}: ${xs[3].toFixed(2)} µs`)
}
