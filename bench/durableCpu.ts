/**
 * Server CPU per stored loop iteration, two checkouts side by side: the bench's
 * server process (bench/serverProcess.ts of each checkout, embedded SQLite, or
 * PostgreSQL with `BENCH_DATABASE_URL`, zero-latency scripted model) for every
 * root given, one run at a time, the roots' runs interleaved so that both see
 * the same machine load. For each root: the server's CPU time (user + system,
 * from /proc) and the wall time of runs of 2 and 22 tool steps; per iteration =
 * (median over the 22-step runs − over the 2-step runs) ÷ 20; and the CPU and
 * wall time of a whole one-tool run (the sequential section's run; CPU averaged
 * over ten runs in a row, median over the samples).
 *
 * `npx tsx bench/durableCpu.ts <root> [<root> …] [--samples N] [--postgres]` (a
 * root is a checkout with node_modules; e.g. an older commit unpacked with
 * `git archive`). With `--postgres`, a throwaway PostgreSQL cluster
 * (test/utils/postgres.ts) gives each root's server a database and a cluster
 * port of its own.
 *
 * @since 0.1.0
 */
import { fork } from "node:child_process"
import type { ChildProcess } from "node:child_process"
import { readFileSync } from "node:fs"
import os from "node:os"
import { join, resolve } from "node:path"
import type { Postgres } from "../test/utils/postgres.js"
import { findPostgres, startPostgres } from "../test/utils/postgres.js"
import { freePort } from "../test/utils/serverProcess.js"
import { runOnce } from "./durableStep.js"
import { quantile } from "./harness.js"

const SHORT = 2
const LONG = 22

const args = process.argv.slice(2)
const samplesAt = args.indexOf("--samples")
const samples = samplesAt >= 0 ? Number(args[samplesAt + 1]) : 10
const postgres = args.includes("--postgres")
const roots = args.filter((a, i) => !a.startsWith("--") && (samplesAt < 0 || i !== samplesAt + 1)).map((r) =>
  resolve(r)
)

/** CPU time (user + system, ms) of a process, from /proc. */
const cpuMs = (pid: number | undefined): number => {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ")
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
}

interface Server {
  readonly root: string
  readonly port: number
  readonly child: ChildProcess
}

const children: Array<ChildProcess> = []

const start = (root: string, env: Record<string, string>): Promise<Server> =>
  new Promise((ok, fail) => {
    const child = fork(join(root, "bench/serverProcess.ts"), [], {
      cwd: root,
      execArgv: ["--expose-gc", "--import", "tsx"],
      env: { ...process.env, BENCH_LATENCY_MS: "0", BENCH_CHUNKS: "1", ...env },
      stdio: ["ignore", process.env.BENCH_VERBOSE ? "inherit" : "ignore", "inherit", "ipc"]
    })
    child.on("message", (m: any) => {
      if (m?.type === "ready") ok({ root, port: m.port, child })
    })
    child.once("exit", (code) => fail(new Error(`${root}: server exited (code ${code})`)))
    children.push(child)
  })

/** One run; its wall ms and the server's CPU ms. */
const measured = async (server: Server, steps: number, index: number) => {
  const cpu0 = cpuMs(server.child.pid)
  const wall = await runOnce(server.port, steps, index)
  return { wall, cpu: cpuMs(server.child.pid) - cpu0 }
}

const servers: Array<Server> = []
let cluster: Postgres | undefined
try {
  if (postgres) {
    const pg = findPostgres()
    if ("missing" in pg) throw new Error(pg.missing)
    cluster = await startPostgres(pg.bin)
  }
  for (const [i, root] of roots.entries()) {
    const env: Record<string, string> = cluster === undefined
      ? {}
      : { BENCH_DATABASE_URL: cluster.createDatabase(`cpu${i}`), BENCH_CLUSTER_PORT: String(await freePort()) }
    servers.push(await start(root, env))
  }
  for (const server of servers) {
    for (let i = 0; i < 3; i++) {
      await runOnce(server.port, SHORT, i)
      await runOnce(server.port, LONG, i)
    }
  }
  type Sample = { wall: number; cpu: number }
  const figures = servers.map(() => ({
    one: [] as Array<Sample>,
    short: [] as Array<Sample>,
    long: [] as Array<Sample>
  }))
  const load0 = os.loadavg()[0]
  for (let i = 0; i < samples; i++) {
    for (let s = 0; s < servers.length; s++) {
      // ten one-tool runs in a row, measured together (the /proc clock ticks every 10 ms)
      const cpu0 = cpuMs(servers[s].child.pid)
      const walls: Array<number> = []
      for (let k = 0; k < 10; k++) walls.push(await runOnce(servers[s].port, 1, 1000 + 10 * i + k))
      figures[s].one.push({ wall: quantile(walls, 0.5), cpu: (cpuMs(servers[s].child.pid) - cpu0) / 10 })
      figures[s].short.push(await measured(servers[s], SHORT, 100 + i))
      figures[s].long.push(await measured(servers[s], LONG, 100 + i))
    }
  }
  const load1 = os.loadavg()[0]
  const per = (long: ReadonlyArray<number>, short: ReadonlyArray<number>) =>
    (quantile(long, 0.5) - quantile(short, 0.5)) / (LONG - SHORT)
  for (let s = 0; s < servers.length; s++) {
    const f = figures[s]
    const cpu = per(f.long.map((x) => x.cpu), f.short.map((x) => x.cpu))
    const wall = per(f.long.map((x) => x.wall), f.short.map((x) => x.wall))
    console.log(
      `${servers[s].root}${postgres ? " (PostgreSQL)" : ""}: per iteration CPU ${cpu.toFixed(2)} ms, wall ${
        wall.toFixed(2)
      } ms; ` +
        `one-tool run CPU ${quantile(f.one.map((x) => x.cpu), 0.5).toFixed(1)} ms, wall ${
          quantile(f.one.map((x) => x.wall), 0.5).toFixed(1)
        } ms; ` +
        `${SHORT}-step run CPU ${quantile(f.short.map((x) => x.cpu), 0.5).toFixed(1)} ms, wall ${
          quantile(f.short.map((x) => x.wall), 0.5).toFixed(1)
        } ms ` +
        `(${samples} samples, load ${load0.toFixed(1)}–${load1.toFixed(1)})`
    )
  }
} finally {
  // a started server stops on `stop`; one that failed to start is killed
  await Promise.all(children.map((child) =>
    new Promise<void>((done) => {
      if (child.exitCode !== null) return done()
      child.once("exit", () => done())
      if (child.connected) child.send({ type: "stop" })
      setTimeout(() => child.kill("SIGKILL"), 5000).unref()
    })
  ))
  cluster?.stop()
}
