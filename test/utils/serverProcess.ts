/**
 * The real server (`src/app/main.ts`, what `npm start` runs) as a child process
 * for tests that kill it: started with `node --import tsx` (so `kill -9` hits the
 * process that runs the workflows, not a wrapper), ready once `/health`
 * answers.
 *
 * Killed as a deployment kills it: the server is the leader of its own process
 * group (`detached`), which holds its MCP servers (stdio children) too, and
 * `kill("SIGKILL")` kills the whole group at once (`kill -9 -<pgid>`, what an
 * out-of-memory kill of a container or `systemctl kill -s KILL` does): no child
 * outlives it and finishes a tool call after the "crash". Another signal
 * (`SIGTERM`, a graceful stop) goes to the server alone — it stops its children
 * itself — and whatever is left of the group afterwards is killed.
 *
 * `restart()` starts it again the way `npm start` would after the crash: same
 * environment, same `PORT`, so the same database file and the same URL.
 *
 * Children never outlive the test process: they are killed when it exits, on
 * SIGINT / SIGTERM / SIGHUP, and — should it die without running any code
 * (SIGKILL, a crashed worker) — by a watchdog (`sh`, in its own group) that
 * kills the server's group once the test process is gone.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { readdirSync, readFileSync } from "node:fs"
import { createServer } from "node:net"
import { fileURLToPath } from "node:url"

const MAIN = fileURLToPath(new URL("../../src/app/main.ts", import.meta.url))

/** A free TCP port on 127.0.0.1. */
export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      const port = typeof address === "object" && address !== null ? address.port : 0
      server.close(() => resolve(port))
    })
  })

/** Sends `signal` to every process of the group `pgid` (false when the group is gone). */
const signalGroup = (pgid: number, signal: NodeJS.Signals | 0): boolean => {
  try {
    process.kill(-pgid, signal)
    return true
  } catch {
    return false
  }
}

/**
 * Whether a process of the group `pgid` still runs. Zombies do not count (killed children
 * are reaped by whoever inherits them, which may take a while): on Linux read from `/proc`,
 * elsewhere whether the group can still be signalled.
 */
const groupAlive = (pgid: number): boolean => {
  let pids: Array<string>
  try {
    pids = readdirSync("/proc").filter((name) => /^\d+$/.test(name))
  } catch {
    return signalGroup(pgid, 0)
  }
  return pids.some((pid) => {
    try {
      // pid (comm) state ppid pgrp …: comm may contain spaces and parentheses
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      return Number(pgrp) === pgid && state !== "Z" && state !== "X"
    } catch {
      return false
    }
  })
}

// process groups still running when the test process ends (a test that timed out) are killed with it
const live = new Set<number>()
const killAll = () => {
  for (const pgid of live) signalGroup(pgid, "SIGKILL")
  live.clear()
}
process.once("exit", killAll)
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.once(signal, () => {
    killAll()
    // nobody else handles it: die of it, as without this handler
    if (process.listenerCount(signal) === 0) process.kill(process.pid, signal)
  })
}

/** Kills the group `pgid` once this process is gone, whatever killed it. */
const watchdog = (pgid: number): ChildProcess => {
  const dog = spawn("sh", [
    "-c",
    `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; kill -KILL -${pgid} 2>/dev/null`
  ], {
    detached: true,
    stdio: "ignore"
  })
  dog.unref()
  return dog
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export interface ServerProcess {
  readonly url: string
  readonly port: number
  readonly child: ChildProcess
  /** The environment it was started with (on top of this process's), `PORT` included. */
  readonly env: Readonly<Record<string, string>>
  /** Everything the process wrote (stdout and stderr). */
  readonly output: () => string
  /**
   * SIGKILL (the default): the whole process group, the server and its MCP children; another
   * signal: the server, then what is left of its group. Resolves when the server has exited and
   * no process of its group is left.
   */
  readonly kill: (signal?: NodeJS.Signals) => Promise<void>
  /** `npm start` again after `kill`: the same environment and port (so the same database and URL). */
  readonly restart: (timeoutMs?: number) => Promise<ServerProcess>
}

/** Starts the server with `env` on top of this process's environment (minus any LLM_* and the vitest IPC channel). */
export const startServerProcess = async (env: Record<string, string>, timeoutMs = 60_000): Promise<ServerProcess> => {
  const port = Number(env.PORT ?? (await freePort()))
  const own = { ...env, PORT: String(port) }
  const base: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (
      value === undefined || key.startsWith("LLM_") || key.startsWith("FAST_LLM_") || key.startsWith("NODE_CHANNEL")
    ) continue
    if (key === "DATABASE_URL" || key === "MCP_CONFIG") continue
    base[key] = value
  }
  const child = spawn(process.execPath, ["--import", "tsx", MAIN], {
    env: { ...base, HOST: "127.0.0.1", ...own },
    stdio: ["ignore", "pipe", "pipe"],
    // its own process group (pgid = its pid), which its MCP children join
    detached: true
  })
  const pgid = child.pid!
  live.add(pgid)
  const dog = watchdog(pgid)
  let output = ""
  child.stdout!.on("data", (d) => (output += d.toString()))
  child.stderr!.on("data", (d) => (output += d.toString()))
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  const running = () => child.exitCode === null && child.signalCode === null

  const kill = async (signal: NodeJS.Signals = "SIGKILL") => {
    if (signal === "SIGKILL") signalGroup(pgid, "SIGKILL")
    else if (running()) child.kill(signal)
    await exited
    // the rest of the group (children a graceful stop left behind, or not reaped yet)
    signalGroup(pgid, "SIGKILL")
    const started = Date.now()
    while (groupAlive(pgid) && Date.now() - started < 10_000) await sleep(20)
    live.delete(pgid)
    dog.kill("SIGKILL")
  }

  const url = `http://127.0.0.1:${port}`
  const started = Date.now()
  for (;;) {
    if (!running()) {
      await kill()
      throw new Error(`the server exited while starting:\n${output}`)
    }
    if (Date.now() - started > timeoutMs) {
      await kill()
      throw new Error(`the server did not start within ${timeoutMs} ms:\n${output}`)
    }
    // bounded: a connection accepted while the server is still starting may get no answer
    const ok = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false)
    if (ok) break
    await sleep(100)
  }
  return {
    url,
    port,
    child,
    env: own,
    output: () => output,
    kill,
    restart: async (restartTimeoutMs = timeoutMs) => {
      if (running()) throw new Error("restart: the server is still running (kill it first)")
      return startServerProcess(own, restartTimeoutMs)
    }
  }
}
