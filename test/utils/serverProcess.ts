/**
 * The real server (`src/app/main.ts`, what `npm start` runs) as a child process
 * for tests that kill it: started with `node --import tsx` (so `kill -9` hits the
 * process that runs the workflows, not a wrapper), ready once `/health`
 * answers, killed with SIGKILL or stopped with SIGTERM.
 */
import { type ChildProcess, spawn } from "node:child_process"
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

// children still running when the test process ends (a test that timed out) are killed with it
const live = new Set<ChildProcess>()
process.once("exit", () => {
  for (const child of live) child.kill("SIGKILL")
})

export interface ServerProcess {
  readonly url: string
  readonly port: number
  readonly child: ChildProcess
  /** Everything the process wrote (stdout and stderr). */
  readonly output: () => string
  readonly kill: (signal?: NodeJS.Signals) => Promise<void>
}

/** Starts the server with `env` on top of this process's environment (minus any LLM_* and the vitest IPC channel). */
export const startServerProcess = async (env: Record<string, string>, timeoutMs = 60_000): Promise<ServerProcess> => {
  const port = Number(env.PORT ?? (await freePort()))
  const base: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined || key.startsWith("LLM_") || key.startsWith("FAST_LLM_") || key.startsWith("NODE_CHANNEL")) continue
    if (key === "DATABASE_URL" || key === "MCP_CONFIG") continue
    base[key] = value
  }
  const child = spawn(process.execPath, ["--import", "tsx", MAIN], {
    env: { ...base, HOST: "127.0.0.1", ...env, PORT: String(port) },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (d) => (output += d.toString()))
  child.stderr!.on("data", (d) => (output += d.toString()))
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()))
  live.add(child)
  void exited.then(() => live.delete(child))
  const url = `http://127.0.0.1:${port}`
  const started = Date.now()
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the server exited while starting:\n${output}`)
    if (Date.now() - started > timeoutMs) {
      child.kill("SIGKILL")
      throw new Error(`the server did not start within ${timeoutMs} ms:\n${output}`)
    }
    // bounded: a connection accepted while the server is still starting may get no answer
    const ok = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false)
    if (ok) break
    await new Promise((r) => setTimeout(r, 100))
  }
  return {
    url,
    port,
    child,
    output: () => output,
    kill: async (signal = "SIGKILL") => {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal)
      await exited
    }
  }
}
