/**
 * Where a durable run's CPU goes: the bench's server (embedded SQLite,
 * zero-latency scripted model) under `node --cpu-prof` (500 µs), 30 warm-up
 * and N sequential one-tool runs, then the profile's busy time by where the
 * code lives (the Effect runtime, the SQLite driver, `@effect/cluster`, ours…)
 * and the top functions by self time.
 *
 *   npx tsx bench/cpuProfile.ts [runs=300] [top=25]
 *
 * `--marginal`: one stored loop iteration by bucket beside the engine's floor
 * (issue 45 item 2). Two profiled servers one after the other, configured as
 * bench/durableStep.ts configures its SQLite server, each warmed alike (20 runs of
 * 2 steps, 4 of 22); then `runs` runs of 22 steps in process A and `runs` of 2 in
 * process B. Each profile is cut to the measured runs (`process.hrtime` around them,
 * the clock of V8's sample timestamps; idle samples left out), and per bucket
 * (A busy − B busy) ÷ (runs × 20) is the CPU of one stored iteration. The floor:
 * bench/engineAlone.ts as durableStep.ts runs it (`--expose-gc --import tsx`, SQLite),
 * under `--cpu-prof` too, its profile cut to the measured workflow of `activities`
 * sequential activities (bench/engineAloneProfile.ts notes when it starts and ends)
 * and divided by their number; × 2 (the two activities a tool iteration stores) is
 * the floor. Prints, per bucket, the iteration, the floor and the excess, then the
 * same for the Effect runtime's modules, our modules and single functions. A sample's
 * busy time is wall time, so it swells when the machine is loaded: the row "process
 * CPU" (the server's user + system time over the window from /proc, all threads,
 * against engineAlone's own `activityCpuMs`) is the check, and `load` is printed.
 *
 *   npx tsx bench/cpuProfile.ts --marginal [runs=60] [activities=300]
 *
 * @since 0.1.0
 */
import { execFileSync } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { loadavg, tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { runOnce } from "./concurrency.js"
import { ACTIVITIES_PER_ITERATION, type EngineFigures, runOnce as runDurable } from "./durableStep.js"
import { quantile } from "./harness.js"
import { startServerProcess } from "./serverLoad.js"

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
  readonly startTime: number
}

const where = ({ functionName: f, url: u }: ProfileNode["callFrame"]): string => {
  if (f === "(idle)") return "idle"
  if (f === "(garbage collector)") return "GC"
  if (f === "(program)") return "native, unattributed"
  if (/node_modules\/effect\//.test(u)) return "Effect runtime"
  if (/@effect\/sql-sqlite-node|better-sqlite3/.test(u)) return "SQLite driver (statements run and compiled)"
  const scoped = /node_modules\/(@effect\/[^/]+)/.exec(u)
  if (scoped) return scoped[1]
  if (/\/src\//.test(u) && !u.includes("node_modules")) return "ours (src/)"
  if (u === "") return "native builtins"
  if (u.startsWith("node:")) return "Node internals"
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u)
  return dep ? `other: ${dep[1]}` : "other"
}

/** Busy time shares by where the code lives, and the top functions by self time. @since 0.1.0 */
export const summarize = (profile: Profile, top = 25): string => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const self = new Map<number, number>()
  profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)))
  const buckets = new Map<string, number>()
  const functions = new Map<string, number>()
  let busy = 0
  let idle = 0
  for (const [id, us] of self) {
    const frame = byId.get(id)!.callFrame
    const bucket = where(frame)
    if (bucket === "idle") {
      idle += us
      continue
    }
    busy += us
    buckets.set(bucket, (buckets.get(bucket) ?? 0) + us)
    const name = `${frame.functionName || "(anonymous)"} ${frame.url.split("/").slice(-2).join("/")}:${
      frame.lineNumber + 1
    }`
    functions.set(name, (functions.get(name) ?? 0) + us)
  }
  const pct = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)} %`
  const sorted = (m: Map<string, number>) => [...m].sort((a, b) => b[1] - a[1])
  return [
    `busy ${(busy / 1e6).toFixed(2)} s, idle ${(idle / 1e6).toFixed(2)} s`,
    ...sorted(buckets).filter(([, us]) => us / busy >= 0.001).map(([b, us]) => `${pct(us)}  ${b}`),
    "top functions by self time:",
    ...sorted(functions).slice(0, top).map(([f, us]) => `${pct(us)}  ${f}`)
  ].join("\n")
}

/** The server's own profile is the largest in `dir` (tsx's loader thread writes a small one too). */
const largestProfile = (dir: string): Profile => {
  const files = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile")).map((f) => join(dir, f))
  const largest = files.map((f) => readFileSync(f, "utf8")).sort((a, b) => b.length - a.length)[0]
  if (largest === undefined) throw new Error(`no profile written in ${dir}`)
  return JSON.parse(largest) as Profile
}

/** A profile's busy µs by bucket (`where`), of the samples taken in [start, end] (µs, the profile's clock). */
interface Buckets {
  readonly busy: number
  readonly idle: number
  readonly byBucket: ReadonlyMap<string, number>
  /** The Effect runtime bucket by module (`effect/dist/esm/…`). */
  readonly byEffectModule: ReadonlyMap<string, number>
  /** Ours (src/) by module. */
  readonly byOwnModule: ReadonlyMap<string, number>
  readonly byFunction: ReadonlyMap<string, number>
}

const bucketsOf = (profile: Profile, window?: { readonly start: number; readonly end: number }): Buckets => {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const byBucket = new Map<string, number>()
  const byEffectModule = new Map<string, number>()
  const byOwnModule = new Map<string, number>()
  const byFunction = new Map<string, number>()
  const add = (m: Map<string, number>, key: string, us: number) => m.set(key, (m.get(key) ?? 0) + us)
  let busy = 0
  let idle = 0
  let t = profile.startTime
  profile.samples.forEach((id, i) => {
    const us = profile.timeDeltas[i] ?? 0
    t += us
    if (window !== undefined && (t < window.start || t > window.end)) return
    const frame = byId.get(id)!.callFrame
    const bucket = where(frame)
    if (bucket === "idle") {
      idle += us
      return
    }
    busy += us
    add(byBucket, bucket, us)
    if (bucket === "Effect runtime") add(byEffectModule, frame.url.replace(/.*\/effect\/dist\/(esm|cjs)\//, ""), us)
    if (bucket === "ours (src/)") add(byOwnModule, frame.url.replace(/.*\/src\//, ""), us)
    add(
      byFunction,
      `${frame.functionName || "(anonymous)"} ${frame.url.split("/").slice(-2).join("/")}:${frame.lineNumber + 1}`,
      us
    )
  })
  return { busy, idle, byBucket, byEffectModule, byOwnModule, byFunction }
}

const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n)
/** A process's CPU time so far, all threads (user + system, /proc/<pid>/stat), in µs; 0 where there is no /proc. */
const processCpuUs = (pid: number | undefined): number => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return ((Number(fields[11]) + Number(fields[12])) * 1e6) / 100 // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return 0
  }
}
const SHORT = 2
const LONG = 22

interface ServerSide {
  readonly steps: number
  readonly window: Buckets
  readonly whole: Buckets
  readonly windowMs: number
  /** The server process's CPU time over the window, all threads (µs). */
  readonly cpuUs: number
  readonly p50Ms: number
}

/** A profiled server (durableStep.ts's SQLite configuration): warm-up, then `runs` runs of `steps`. */
const profiledServer = async (steps: number, runs: number): Promise<ServerSide> => {
  const dir = mkdtempSync(join(tmpdir(), "react-engine-prof-"))
  const previous = process.env.BENCH_CPU_PROF
  process.env.BENCH_CPU_PROF = dir
  try {
    const server = await startServerProcess({ BENCH_LATENCY_MS: "0", BENCH_CHUNKS: "1" })
    let start = 0
    let end = 0
    let cpuUs = 0
    const times: Array<number> = []
    try {
      for (let i = 0; i < 20; i++) await runDurable(server.port, SHORT, i)
      for (let i = 0; i < 4; i++) await runDurable(server.port, LONG, 20 + i)
      // a run's tail after its `done` (the workflow's completion) falls inside the window it belongs to
      await new Promise((r) => setTimeout(r, 500))
      start = monotonicUs()
      cpuUs = -processCpuUs(server.child.pid)
      for (let i = 0; i < runs; i++) times.push(await runDurable(server.port, steps, 100 + i))
      await new Promise((r) => setTimeout(r, 500))
      end = monotonicUs()
      cpuUs += processCpuUs(server.child.pid)
    } finally {
      await server.stop()
    }
    const profile = largestProfile(dir)
    return {
      steps,
      window: bucketsOf(profile, { start, end }),
      whole: bucketsOf(profile),
      windowMs: (end - start) / 1000,
      cpuUs,
      p50Ms: quantile(times, 0.5)
    }
  } finally {
    if (previous === undefined) delete process.env.BENCH_CPU_PROF
    else process.env.BENCH_CPU_PROF = previous
    rmSync(dir, { recursive: true, force: true })
  }
}

interface EngineSide {
  readonly figures: EngineFigures
  readonly window: Buckets
  readonly windowMs: number
}

/** bench/engineAlone.ts as durableStep.ts runs it (SQLite), under `--cpu-prof`, cut to its measured workflow. */
const profiledEngine = (activities: number): EngineSide => {
  const dir = mkdtempSync(join(tmpdir(), "react-engine-alone-prof-"))
  try {
    const script = fileURLToPath(new URL("./engineAlone.ts", import.meta.url))
    const preload = fileURLToPath(new URL("./engineAloneProfile.ts", import.meta.url))
    const windowFile = join(dir, "window.json")
    const out = execFileSync(process.execPath, [
      "--expose-gc",
      "--import",
      "tsx",
      "--import",
      preload,
      "--cpu-prof",
      `--cpu-prof-dir=${dir}`,
      "--cpu-prof-interval=500",
      script
    ], {
      encoding: "utf8",
      timeout: 300_000,
      env: {
        ...process.env,
        ENGINE_DATABASE_URL: "",
        ENGINE_ACTIVITIES: String(activities),
        ENGINE_PROFILE_WINDOW: windowFile
      }
    })
    const figures = JSON.parse(out.trim().split("\n").pop() ?? "") as EngineFigures
    const window = JSON.parse(readFileSync(windowFile, "utf8")) as { start: number; end: number }
    return {
      figures,
      window: bucketsOf(largestProfile(dir), window),
      windowMs: (window.end - window.start) / 1000
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const marginal = async (runs: number, activities: number) => {
  const load = () => loadavg().map((l) => l.toFixed(2)).join(" ")
  console.log(`load at start ${load()}`)
  const a = await profiledServer(LONG, runs)
  const b = await profiledServer(SHORT, runs)
  const engine = profiledEngine(activities)
  const iterations = runs * (LONG - SHORT)
  for (const s of [a, b]) {
    console.log(
      `server ${s === a ? "A" : "B"}: ${runs} runs of ${s.steps} steps, p50 ${s.p50Ms.toFixed(1)} ms; window ${
        (s.windowMs / 1000).toFixed(1)
      } s, busy ${(s.window.busy / 1e6).toFixed(2)} s (whole profile ${
        (s.whole.busy / 1e6).toFixed(2)
      } s), process CPU ${(s.cpuUs / 1e6).toFixed(2)} s`
    )
  }
  console.log(
    `engine alone: ${activities} activities, ${engine.figures.activityWallMs.toFixed(2)} ms wall, ${
      engine.figures.activityCpuMs.toFixed(2)
    } ms CPU (all threads) each; window ${(engine.windowMs / 1000).toFixed(2)} s, busy ${
      (engine.window.busy / 1e6).toFixed(2)
    } s`
  )
  console.log(
    `wall: a stored iteration (p50 A − p50 B) ÷ ${LONG - SHORT} = ${
      ((a.p50Ms - b.p50Ms) / (LONG - SHORT)).toFixed(2)
    } ms; the floor ${ACTIVITIES_PER_ITERATION} × ${engine.figures.activityWallMs.toFixed(2)} = ${
      (ACTIVITIES_PER_ITERATION * engine.figures.activityWallMs).toFixed(2)
    } ms`
  )
  const excessRows = (of: (b: Buckets) => ReadonlyMap<string, number>) => {
    const names = new Set([...of(a.window).keys(), ...of(b.window).keys(), ...of(engine.window).keys()])
    return [...names].map((name) => {
      const iteration = ((of(a.window).get(name) ?? 0) - (of(b.window).get(name) ?? 0)) / iterations
      const floor = (ACTIVITIES_PER_ITERATION * (of(engine.window).get(name) ?? 0)) / activities
      return { name, iteration, floor, excess: iteration - floor }
    }).sort((x, y) => y.excess - x.excess)
  }
  const rows = excessRows((b) => b.byBucket)
  const total = {
    name: "total busy",
    iteration: (a.window.busy - b.window.busy) / iterations,
    floor: (ACTIVITIES_PER_ITERATION * engine.window.busy) / activities
  }
  const cell = (us: number) => us.toFixed(0).padStart(12)
  const line = (name: string, iteration: number, floor: number, excess: number, share: string) =>
    `${name.padEnd(44)}${cell(iteration)}${cell(floor)}${cell(excess)}${share.padStart(9)}`
  const totalExcess = total.iteration - total.floor
  console.log(
    `CPU µs per stored iteration by bucket (busy samples, 500 µs):\n${`${"bucket".padEnd(44)}${
      "iteration".padStart(12)
    }${`${ACTIVITIES_PER_ITERATION}×activity`.padStart(12)}${"excess".padStart(12)}${"% excess".padStart(9)}`}`
  )
  for (const r of rows) {
    if (Math.abs(r.iteration) < 5 && Math.abs(r.floor) < 5) continue
    console.log(line(r.name, r.iteration, r.floor, r.excess, `${((100 * r.excess) / totalExcess).toFixed(1)} %`))
  }
  console.log(line(total.name, total.iteration, total.floor, totalExcess, "100 %"))
  const cpuIteration = (a.cpuUs - b.cpuUs) / iterations
  const cpuFloor = ACTIVITIES_PER_ITERATION * engine.figures.activityCpuMs * 1000
  console.log(line("process CPU, all threads (/proc; cpuUsage)", cpuIteration, cpuFloor, cpuIteration - cpuFloor, ""))
  const detail = (title: string, of: (b: Buckets) => ReadonlyMap<string, number>, n: number, width: number) => {
    console.log(title)
    for (const r of excessRows(of).slice(0, n)) {
      const name = r.name.length > width ? `…${r.name.slice(-(width - 1))}` : r.name
      console.log(`  ${line(name, r.iteration, r.floor, r.excess, `${((100 * r.excess) / totalExcess).toFixed(1)} %`)}`)
    }
  }
  detail("the Effect runtime by module, largest excess first:", (b) => b.byEffectModule, 12, 42)
  detail("ours (src/) by module, largest excess first:", (b) => b.byOwnModule, 8, 42)
  detail("functions (self time), largest excess first:", (b) => b.byFunction, 20, 42)
  console.log(`load at end ${load()}`)
}

const main = async () => {
  if (process.argv[2] === "--marginal") {
    return marginal(Number(process.argv[3] ?? 60), Number(process.argv[4] ?? 300))
  }
  const runs = Number(process.argv[2] ?? 300)
  const dir = mkdtempSync(join(tmpdir(), "react-engine-prof-"))
  process.env.BENCH_CPU_PROF = dir
  try {
    const server = await startServerProcess({ BENCH_LATENCY_MS: "0", BENCH_STEPS: "1", BENCH_CHUNKS: "1" })
    for (let i = 0; i < 30; i++) await runOnce(server.port, `warm-up ${i}`)
    const times: Array<number> = []
    const started = performance.now()
    for (let i = 0; i < runs; i++) {
      const r = await runOnce(server.port, `profiled ${i}`)
      if (r.error !== undefined) throw new Error(`run ${i}: ${r.error}`)
      times.push(r.doneMs)
    }
    const wall = performance.now() - started
    await server.stop()
    times.sort((a, b) => a - b)
    console.log(
      `${runs} sequential one-tool runs in ${(wall / 1000).toFixed(1)} s, p50 ${times[runs >> 1].toFixed(1)} ms`
    )
    // the server's own profile is the largest (tsx's loader thread writes a small one too)
    console.log(summarize(largestProfile(dir), Number(process.argv[3] ?? 25)))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

if (process.argv[1]?.endsWith("cpuProfile.ts")) {
  void main().catch((e) => {
    console.error(e)
    process.exit(1)
  })
}
