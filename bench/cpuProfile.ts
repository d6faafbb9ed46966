/**
 * Where a durable run's CPU goes: the bench's server (embedded SQLite,
 * zero-latency scripted model) under `node --cpu-prof` (500 µs), 30 warm-up
 * and N sequential one-tool runs, then the profile's busy time by where the
 * code lives (the Effect runtime, the SQLite driver, `@effect/cluster`, ours…)
 * and the top functions by self time.
 *
 *   npx tsx bench/cpuProfile.ts [runs=300] [top=25]
 *
 * @since 0.1.0
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { runOnce } from "./concurrency.js"
import { startServerProcess } from "./serverLoad.js"

interface ProfileNode {
  readonly id: number
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number }
}
interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
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

const main = async () => {
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
    const files = readdirSync(dir).filter((f) => f.endsWith(".cpuprofile")).map((f) => join(dir, f))
    const largest = files.map((f) => ({ f, text: readFileSync(f, "utf8") })).sort((a, b) =>
      b.text.length - a.text.length
    )[0]
    if (largest === undefined) throw new Error("no profile written")
    console.log(summarize(JSON.parse(largest.text) as Profile, Number(process.argv[3] ?? 25)))
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
