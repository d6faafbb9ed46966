// A w2 loop step in miniature, the same program on Effect 3 and on Effect 4 (issue 45, item 5: what
// Effect 4 would change, measured rather than guessed). Our engine's runtime work per w2 step
// (10 steps × 4 parallel calls), as bench/loopProfile.ts counts it on Effect 3: 796 operations of the
// fiber loop and 5 fibers started (596 operations when the calls run one after the other in place).
// This program does the same: 4 calls forked by `Effect.forEach` (concurrency 4), each a chain of the
// same kinds of operations, built from APIs both lines have. FiberRef reads (the `Commit` operations)
// have no Effect 4 twin and are left out.
//
//   npm i --prefix /tmp/effect4 effect@4.1.5
//   node bench/effect4/w2mini.mjs node_modules/effect fanout        # Effect 3 (ours)
//   node bench/effect4/w2mini.mjs /tmp/effect4/node_modules/effect fanout
//   node bench/effect4/w2mini.mjs <dir> inplace                      # the calls one after the other
//   node bench/effect4/w2mini.mjs node_modules/effect count          # the operations, Effect 3 only
//
// Prints the median CPU µs per step over 9 batches of 1,000 steps (after 3 warm-up batches).
import { readFileSync } from "node:fs"
import { resolve } from "node:path"
import { pathToFileURL } from "node:url"

const [dirArg = "node_modules/effect", mode = "fanout"] = process.argv.slice(2)
const dir = pathToFileURL(resolve(dirArg)).href
const load = (m) => import(`${dir}/dist/esm/${m}.js`).catch(() => import(`${dir}/dist/${m}.js`))
const Effect = await load("Effect")
const version = JSON.parse(readFileSync(new URL(`${dir}/package.json`), "utf8")).version

// per call (a quarter of a step): 17 fiber id reads under a flatMap and a map (WithRuntime, OnSuccess ×2,
// Success ×2), 13 matchCauseEffect of a ready value (OnSuccessAndFailure, Success), 10 uninterruptible
// regions (UpdateRuntimeFlags), 12 syncs under a flatMap (OnSuccess, Sync)
const call = (i) => {
  let e = Effect.succeed(i)
  for (let k = 0; k < 17; k++) e = Effect.flatMap(e, (n) => Effect.map(Effect.fiberId, () => n))
  for (let k = 0; k < 13; k++) {
    e = Effect.matchCauseEffect(e, { onFailure: Effect.failCause, onSuccess: Effect.succeed })
  }
  for (let k = 0; k < 10; k++) e = Effect.uninterruptible(e)
  for (let k = 0; k < 12; k++) e = Effect.flatMap(e, (n) => Effect.sync(() => n + 1))
  return e
}
const items = [0, 1, 2, 3]
const step = (fanout) => fanout ? Effect.forEach(items, call, { concurrency: 4 }) : Effect.forEach(items, call)

if (mode === "count") {
  // Effect 3's fiber loop tells a supervisor every operation it evaluates under the OpSupervision flag
  const Supervisor = await load("Supervisor")
  const RuntimeFlags = await load("RuntimeFlags")
  const RuntimeFlagsPatch = await load("RuntimeFlagsPatch")
  class Counting extends Supervisor.AbstractSupervisor {
    ops = 0
    fibers = 0
    byOp = {}
    get value() {
      return Effect.void
    }
    onStart() {
      this.fibers++
    }
    onEffect(_fiber, effect) {
      this.ops++
      this.byOp[effect._op] = (this.byOp[effect._op] ?? 0) + 1
    }
  }
  for (const fanout of [true, false]) {
    const counting = new Counting()
    await Effect.runPromise(
      step(fanout).pipe(
        Effect.supervised(counting),
        Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
      )
    )
    console.log(
      `effect ${version} ${fanout ? "fanout" : "inplace"}: ${counting.ops} operations, ${counting.fibers} fibers ${
        JSON.stringify(counting.byOp)
      }`
    )
  }
} else {
  const N = 1000
  const batch = async () => {
    const program = Effect.gen(function*() {
      for (let i = 0; i < N; i++) yield* step(mode === "fanout")
    })
    const t = process.cpuUsage()
    await Effect.runPromise(program)
    const u = process.cpuUsage(t)
    return (u.user + u.system) / N
  }
  for (let w = 0; w < 3; w++) await batch()
  const xs = []
  for (let r = 0; r < 9; r++) xs.push(await batch())
  xs.sort((a, b) => a - b)
  console.log(
    `effect ${version} ${mode}: ${xs[4].toFixed(1)} µs per step (min ${xs[0].toFixed(1)}, max ${xs[8].toFixed(1)})`
  )
}
