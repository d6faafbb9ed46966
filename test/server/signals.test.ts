/**
 * `npm start` as a process manager runs it (issue 32, "Signals"): `npm start` in a process group
 * of its own (scripts/start.js: builds build/ when stale, then the compiled server in the same
 * process), on the offline demo model with a fresh SQLite file. A run waits for an approval
 * (`REACT_APPROVAL_TOOLS=calculator`) with its SSE client attached when SIGTERM goes to the npm
 * process — only to it, as `docker stop` or systemd (`KillMode=mixed`) sends it. Within 20 s the
 * port is free and no process of the group is left (before: `sh -c "tsx …"` left the server
 * running, port held); the client's stream ends with a retryable error frame. `npm start` again
 * on the same database: the approval is answered and the run completes (nothing was lost); then
 * Ctrl-C (SIGINT to the whole group: the server gets its own and npm's copy) stops it gracefully too.
 *
 * The first start builds (some seconds) when build/ is stale, e.g. after a checkout; the
 * second one finds it fresh.
 */
import { assert, describe, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { freePort } from "../utils/serverProcess.js"
import { openSse, postJson, type SseEvent } from "../utils/sse.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
/** How long the whole group may take to stop after SIGTERM. */
const STOP_WITHIN_MS = 20_000

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The processes of the group `pgid` that still run (zombies do not count): `pid command`. */
const groupProcesses = (pgid: number): Array<string> =>
  readdirSync("/proc").filter((name) => /^\d+$/.test(name)).flatMap((pid) => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
      const [state, , pgrp] = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      if (Number(pgrp) !== pgid || state === "Z" || state === "X") return []
      return [`${pid} ${readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").trim()}`]
    } catch {
      return []
    }
  })

/** Whether nothing listens on 127.0.0.1:`port` (it can be bound again). */
const portFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = createServer()
    server.once("error", () => resolve(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
  })

interface NpmStart {
  readonly child: ChildProcess
  readonly pgid: number
  readonly output: () => string
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
}

const npmStart = (env: Record<string, string>): NpmStart => {
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (
      v !== undefined &&
      !/^(?:FAST_)?LLM_|^MCP_CONFIG$|^DATABASE_URL$|^REACT_|^CONTEXT_GUARD_|^NODE_CHANNEL|^PORT$|^HOST$/.test(k)
    ) {
      base[k] = v
    }
  }
  const child = spawn("npm", ["start"], {
    cwd: ROOT,
    env: { ...base, HOST: "127.0.0.1", npm_config_update_notifier: "false", ...env },
    stdio: ["ignore", "pipe", "pipe"],
    // its own process group, as a service manager or a container runs it
    detached: true
  })
  let output = ""
  child.stdout!.on("data", (d) => (output += d.toString()))
  child.stderr!.on("data", (d) => (output += d.toString()))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal }))
  )
  return { child, pgid: child.pid!, output: () => output, exited }
}

const waitHealthy = async (started: NpmStart, url: string, timeoutMs: number) => {
  const until = Date.now() + timeoutMs
  for (;;) {
    assert.isNull(started.child.exitCode, `npm start exited:\n${started.output()}`)
    assert.isTrue(Date.now() < until, `npm start did not serve /health within ${timeoutMs} ms:\n${started.output()}`)
    const ok = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false)
    if (ok) return
    await sleep(200)
  }
}

/**
 * SIGTERM to the npm process alone (a service manager), or `SIGINT` to the whole group (Ctrl-C in
 * a terminal: npm and the server get it, and npm forwards its copy); resolves with how long the
 * group took to be gone and the port free.
 */
const terminate = async (started: NpmStart, port: number, how: "SIGTERM to npm" | "SIGINT to the group") => {
  const before = groupProcesses(started.pgid)
  const sent = Date.now()
  if (how === "SIGTERM to npm") process.kill(started.child.pid!, "SIGTERM")
  else process.kill(-started.pgid, "SIGINT")
  for (;;) {
    const left = groupProcesses(started.pgid)
    if (left.length === 0 && (await portFree(port))) break
    assert.isTrue(
      Date.now() - sent < STOP_WITHIN_MS,
      `${STOP_WITHIN_MS} ms after ${how}: still running ${JSON.stringify(left)}, port free: ${await portFree(
        port
      )}\n${started.output()}`
    )
    await sleep(50)
  }
  return { elapsedMs: Date.now() - sent, before, exit: await started.exited }
}

const killGroup = (started: NpmStart | undefined) => {
  if (started === undefined) return
  try {
    process.kill(-started.pgid, "SIGKILL")
  } catch {
    // gone
  }
}

describe("npm start", () => {
  it(
    "SIGTERM to the npm process stops the server within 20 s, port freed, no process left; the waiting run completes after a restart; Ctrl-C too",
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "react-engine-signals-"))
      const port = await freePort()
      const url = `http://127.0.0.1:${port}`
      const env = { PORT: String(port), DATABASE_PATH: join(dir, "db.sqlite"), REACT_APPROVAL_TOOLS: "calculator" }
      let first: NpmStart | undefined
      let second: NpmStart | undefined
      try {
        first = npmStart(env)
        // the first start may build build/ (tens of seconds on a loaded machine)
        await waitHealthy(first, url, 240_000)

        // a run parked on an approval, its client attached
        let requested = undefined as SseEvent | undefined
        const stream = openSse(`${url}/api/react`, {
          body: { query: "What is 12*7+1?", conversation_id: "signals" },
          onEvent: (event) => {
            if (event.event === "approval" && event.data.status === "requested") requested = event
          },
          timeoutMs: 120_000
        })
        // awaited below; a failure before that must not be an unhandled rejection
        stream.catch(() => undefined)
        const asked = Date.now() + 30_000
        while (requested === undefined) {
          assert.isTrue(Date.now() < asked, `no approval requested:\n${first.output()}`)
          await sleep(20)
        }

        const stopped = await terminate(first, port, "SIGTERM to npm")
        console.log(
          `npm start stopped ${stopped.elapsedMs} ms after SIGTERM (exit ${JSON.stringify(stopped.exit)}); ` +
            `its group was: ${JSON.stringify(stopped.before)}`
        )
        // npm's child is the server itself: npm, and node running scripts/start.js (sh exec'd it)
        assert.isTrue(stopped.before.some((p) => p.includes("scripts/start.js")), JSON.stringify(stopped.before))
        assert.deepStrictEqual(stopped.exit, { code: 0, signal: null }, first.output())
        const ended = await stream
        assert.deepStrictEqual(
          ended.events.at(-1),
          { id: undefined, event: "error", data: { message: "Server is shutting down", retryable: true } }
        )

        // the same database again: the approval is still pending; answered, the run completes
        second = npmStart(env)
        await waitHealthy(second, url, 240_000)
        const decided = await postJson(`${url}/api/react/approve`, {
          conversation_id: "signals",
          approval_id: requested.data.approval_id,
          decision: "approve"
        })
        assert.strictEqual(decided.status, 200, JSON.stringify(decided.body))
        const replay = await openSse(`${url}/api/react/events?conversation_id=signals&after=0`, { timeoutMs: 60_000 })
        const done = replay.events.at(-1)
        assert.strictEqual(done?.event, "done", JSON.stringify(replay.events.map((e) => e.event)))
        assert.include(done!.data.answer, "85")
        assert.isTrue(replay.events.some((e) => e.event === "approval" && e.data.status === "approved"))

        // Ctrl-C: the server gets SIGINT twice (its own and npm's) and still stops gracefully (code 0)
        const again = await terminate(second, port, "SIGINT to the group")
        console.log(
          `npm start stopped ${again.elapsedMs} ms after SIGINT to its group (exit ${JSON.stringify(again.exit)})`
        )
        assert.deepStrictEqual(again.exit, { code: 0, signal: null }, second.output())
      } finally {
        killGroup(first)
        killGroup(second)
        rmSync(dir, { recursive: true, force: true })
      }
    },
    420_000
  )
})
