/**
 * Where the loop's marginal cost per iteration goes, piece by piece (issue 45, item 3): one
 * engine and one workload (bench/scenario.ts `loopCases`) in two profiled child processes
 * (V8's sampling profiler through `node:inspector`, 200 µs, started after the
 * warm-up), the same warm-up in both, then N runs of the workload's long
 * scenario in one and N of its short one in the other. Per bucket (the Effect runtime, our
 * package, the peer's library, GC…), (profile time of the long child − of the short one) ÷
 * (N × the extra steps) is what one more iteration costs there, the way the loop section's
 * marginal figure cancels fixed per-run costs. A sample's time in a V8 profile is wall time, so each
 * child's process CPU time (user + system, over its profiled runs) is split by its profile's shares. The children load the built package (dist/, as
 * an installed dependency: bench/tsconfig.dist.json has no path to src/), so no tsx `__name(…)`
 * wrapping counts as ours; run `npm run build` first.
 *
 * It also counts what the Effect runtime executes per iteration of our engine: the operations its
 * fiber loop evaluates (a `Supervisor`'s `onEffect` under the `OpSupervision` flag, by opcode) and
 * the fibers started — figures that do not depend on the machine's load.
 *
 *   npx tsx bench/loopProfile.ts <w1|w2|w3> <ours|ai|agents> <generate|stream> [runs=300] [rounds=5] [warmup=100]
 *
 * `warmup`: runs of each scenario before the profiler starts (the child-process method warms up 20).
 * Each round runs the long child, then the short one; each piece's figure is its median over the
 * rounds (the rounds' totals are printed beside it: on a loaded machine they spread).
 *
 * Only for analysis: prints, writes nothing.
 *
 * @since 0.1.0
 */
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { Session } from "node:inspector"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import type { Engine, Flavour, Scenario } from "./scenario.js"
import { loopCases } from "./scenario.js"

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string }
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const ourDist = new URL("../dist/", import.meta.url).href
const harness = new URL("./", import.meta.url).href

/** The piece of the process a profile frame belongs to. */
const bucketOf = ({ functionName: f, url: u }: ProfileNode["callFrame"]): string => {
  if (f === "(idle)") return "idle"
  if (f === "(garbage collector)") return "GC"
  if (f === "(program)" || u === "") return "V8 / native builtins"
  if (/node_modules\/effect\//.test(u)) return "Effect runtime (effect)"
  if (u.startsWith(ourDist)) return "ours (the built package)"
  if (u.startsWith(harness)) return "the harness (scenario, tool, mocks)"
  if (u.startsWith("node:")) return "Node internals"
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u)
  return dep ? `library: ${dep[1]}` : "other"
}

const busyByBucket = (profile: Profile): Map<string, number> => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const out = new Map<string, number>()
  profile.samples.forEach((id, i) => {
    const bucket = bucketOf(byId.get(id)!.callFrame)
    if (bucket !== "idle") out.set(bucket, (out.get(bucket) ?? 0) + (profile.timeDeltas[i] ?? 0))
  })
  return out
}

const engineOf = async (name: string, flavour: Flavour): Promise<Engine> => {
  if (name === "ours") {
    const m = await import("./peers/ours.js")
    return flavour === "stream" ? m.streamEngine : m.engine
  }
  if (name === "ai") {
    const m = await import("./peers/aiSdk.js")
    return flavour === "stream" ? m.streamEngine : m.engine
  }
  const m = await import("./peers/agentsSdk.js")
  return flavour === "stream" ? m.streamEngine : m.engine
}

/**
 * The child: warm up on both scenarios, then `runs` runs of one of them under V8's sampling profiler
 * (`node:inspector`, started after the warm-up: module loading and the first compilations stay out).
 */
const child = async (
  label: string,
  name: string,
  flavour: Flavour,
  which: "long" | "short",
  runs: number,
  warmup: number,
  out: string
) => {
  const c = loopCases.find((x) => x.label === label)!
  const engine = await engineOf(name, flavour)
  // tsx (which loads this file) turns source maps on, which makes every stack trace an engine or its
  // web streams take map through them: off, as in a plain `node` process
  process.setSourceMapsEnabled(false)
  const long = await engine.prepare(c.long)
  const short = await engine.prepare(c.short)
  for (let i = 0; i < warmup; i++) {
    await long()
    await short()
  }
  const run = which === "long" ? long : short
  const session = new Session()
  session.connect()
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) =>
      session.post(method, params, (error, result) => (error ? reject(error) : resolve(result)))
    )
  await post("Profiler.enable")
  await post("Profiler.setSamplingInterval", { interval: 200 })
  await post("Profiler.start")
  const started = process.cpuUsage()
  for (let i = 0; i < runs; i++) await run()
  const cpu = process.cpuUsage(started)
  const { profile } = (await post("Profiler.stop")) as { readonly profile: Profile }
  session.disconnect()
  writeFileSync(out, JSON.stringify(profile))
  console.log(JSON.stringify({ cpuMs: (cpu.user + cpu.system) / 1000 }))
}

/** Our engine's runtime work per iteration: operations evaluated and fibers started (long − short ÷ extra steps). */
const countOps = async (label: string, flavour: Flavour) => {
  const [{ ReactAgent }, Effect, ManagedRuntime, Supervisor, RuntimeFlags, RuntimeFlagsPatch, ours, scenario] =
    await Promise.all([
      import("effect-react-engine"),
      import("effect/Effect"),
      import("effect/ManagedRuntime"),
      import("effect/Supervisor"),
      import("effect/RuntimeFlags"),
      import("effect/RuntimeFlagsPatch"),
      import("./peers/ours.js"),
      import("./scenario.js")
    ])
  class Counting extends Supervisor.AbstractSupervisor<void> {
    ops = 0
    fibers = 0
    readonly byOp = new Map<string, number>()
    get value() {
      return Effect.void
    }
    override onStart() {
      this.fibers++
    }
    override onEffect(_fiber: unknown, effect: unknown) {
      this.ops++
      const op = String((effect as { readonly _op?: string })._op ?? "?")
      this.byOp.set(op, (this.byOp.get(op) ?? 0) + 1)
    }
  }
  const count = async (s: Scenario) => {
    const scripted = ours.resettableScript(ours.scriptFor(s))
    const runtime = ManagedRuntime.make(
      ours.agentLayer(scripted.llm.service, [ours.lookupTool(s)], {
        synthesis: flavour === "stream" ? "auto" : "always"
      })
    )
    const agent = await runtime.runPromise(ReactAgent.ReactAgent)
    for (let i = 0; i < 20; i++) {
      scripted.reset()
      await runtime.runPromise(agent.runCollect({ query: scenario.QUERY }))
    }
    const counting = new Counting()
    scripted.reset()
    await runtime.runPromise(
      agent.runCollect({ query: scenario.QUERY }).pipe(
        Effect.supervised(counting),
        Effect.withRuntimeFlagsPatch(RuntimeFlagsPatch.enable(RuntimeFlags.OpSupervision))
      )
    )
    await runtime.dispose()
    return counting
  }
  const c = loopCases.find((x) => x.label === label)!
  const long = await count(c.long)
  const short = await count(c.short)
  const extra = c.long.steps - c.short.steps
  const per = (a: number, b: number) => ((a - b) / extra).toFixed(0)
  const ops = [...new Set([...long.byOp.keys(), ...short.byOp.keys()])]
    .map((op) => [op, ((long.byOp.get(op) ?? 0) - (short.byOp.get(op) ?? 0)) / extra] as const)
    .filter(([, n]) => n >= 1)
    .sort((a, b) => b[1] - a[1])
  console.log(
    `our runtime work per iteration: ${per(long.ops, short.ops)} operations, ${
      per(long.fibers, short.fibers)
    } fibers started (${ops.map(([op, n]) => `${op} ${n.toFixed(0)}`).join(", ")})`
  )
}

/** Runs a child; the process CPU time of its profiled runs (profiler included). */
const spawnProfiled = (args: ReadonlyArray<string>) =>
  new Promise<number>((resolve, reject) => {
    execFile(
      process.execPath,
      ["--import", "tsx", fileURLToPath(import.meta.url), "--child", ...args],
      {
        env: { ...process.env, TSX_TSCONFIG_PATH: fileURLToPath(new URL("tsconfig.dist.json", import.meta.url)) },
        maxBuffer: 1 << 24
      },
      (error, out, err) =>
        error
          ? reject(new Error(`${error.message}\n${err}`))
          : resolve((JSON.parse(out.trim().split("\n").at(-1)!) as { readonly cpuMs: number }).cpuMs)
    )
  })

const main = async () => {
  const [label = "w2", name = "ours", flavour = "generate", runsText = "300", roundsText = "5", warmupText = "100"] =
    process.argv.slice(2)
  const c = loopCases.find((x) => x.label === label)
  if (c === undefined) throw new Error(`unknown workload ${label} (w1, w2, w3)`)
  if (!["ours", "ai", "agents"].includes(name)) throw new Error(`unknown engine ${name} (ours, ai, agents)`)
  if (flavour !== "generate" && flavour !== "stream") throw new Error(`unknown flavour ${flavour}`)
  const runs = Number(runsText)
  const rounds = Number(roundsText)
  const extra = (c.long.steps - c.short.steps) * runs
  // per round: the long child, then the short one; per bucket the median over the rounds
  const perRound: Array<Map<string, number>> = []
  for (let r = 0; r < rounds; r++) {
    const busy: Record<"long" | "short", Map<string, number>> = { long: new Map(), short: new Map() }
    const cpu = { long: 0, short: 0 }
    for (const which of ["long", "short"] as const) {
      const dir = mkdtempSync(join(tmpdir(), "react-engine-loop-prof-"))
      try {
        const file = join(dir, "profile.cpuprofile")
        cpu[which] = await spawnProfiled([label, name, flavour, which, String(runs), warmupText, file])
        busy[which] = busyByBucket(JSON.parse(readFileSync(file, "utf8")) as Profile)
      } finally {
        rmSync(dir, { recursive: true, force: true })
      }
    }
    // a sample's time delta is wall time (a descheduled thread's wait lands on the frame it was in):
    // each child's process CPU is split by its profile's shares, then long − short
    const cpuOf = (which: "long" | "short", b: string) => {
      const total = [...busy[which].values()].reduce((sum, us) => sum + us, 0)
      return total === 0 ? 0 : ((busy[which].get(b) ?? 0) / total) * cpu[which] * 1000
    }
    const diff = new Map<string, number>()
    for (const b of new Set([...busy.long.keys(), ...busy.short.keys()])) {
      diff.set(b, (cpuOf("long", b) - cpuOf("short", b)) / extra)
    }
    perRound.push(diff)
  }
  const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? 0
  const buckets = [...new Set(perRound.flatMap((m) => [...m.keys()]))]
    .map((b) => [b, median(perRound.map((m) => m.get(b) ?? 0))] as const)
    .sort((a, b) => b[1] - a[1])
  const totals = perRound.map((m) => [...m.values()].reduce((s, us) => s + us, 0))
  const total = buckets.reduce((s, [, us]) => s + us, 0)
  console.log(
    `${name} ${flavour} ${label} (${c.title}), ${rounds} rounds of ${runs} runs: µs of CPU per extra iteration, ` +
      `the median per piece (the total per round: ${totals.map((t) => t.toFixed(0)).join(", ")})`
  )
  for (const [b, us] of buckets) {
    if (Math.abs(us) >= 0.5) {
      console.log(`  ${us.toFixed(1).padStart(7)} µs  ${((100 * us) / total).toFixed(1).padStart(5)} %  ${b}`)
    }
  }
  if (name === "ours") await countOps(label, flavour)
}

if (process.argv[2] === "--child") {
  const [label, name, flavour, which, runs, warmup, out] = process.argv.slice(3)
  void child(label!, name!, flavour as Flavour, which as "long" | "short", Number(runs), Number(warmup), out!).then(
    () => process.exit(0),
    (e) => {
      console.error(e)
      process.exit(1)
    }
  )
} else if (process.argv[1]?.endsWith("loopProfile.ts")) {
  void main().catch((e) => {
    console.error(e)
    process.exit(1)
  })
}
