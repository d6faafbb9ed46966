/**
 * Fault test: SIGTERM with runs in flight. The real server (bench/serverProcess.ts:
 * routes, run registry, SQLite, ReactAgent over a scripted model that takes 60 s
 * per call) runs in a child process; five SSE runs are parked in their LLM call
 * when it gets SIGTERM. The child closes its server scope and must then exit on
 * its own — no `process.exit`: it only ends once no socket, timer or fiber is
 * left — promptly, with code 0, and every client's stream must end. (A natural exit
 * is the strongest "nothing left running" check there is: any leaked socket,
 * timer or sleeping fiber would keep the process alive.)
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"

const script = fileURLToPath(new URL("../../bench/serverProcess.ts", import.meta.url))

describe("SIGTERM", () => {
  it.live(
    "with 5 runs in flight: SSE streams end, the process exits by itself, code 0, nothing left running",
    () =>
      Effect.promise(async () => {
        // a vitest fork worker has an IPC channel: the child must not inherit it
        const { NODE_CHANNEL_FD: _fd, NODE_CHANNEL_SERIALIZATION_MODE: _mode, ...env } = process.env
        const child = spawn(process.execPath, ["--import", "tsx", script], {
          env: { ...env, BENCH_LATENCY_MS: "60000", BENCH_STEPS: "1", BENCH_CHUNKS: "1" },
          stdio: ["ignore", "pipe", "pipe"]
        })
        let stderr = ""
        child.stderr.on("data", (d) => (stderr += d.toString()))
        const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
          child.once("exit", (code, signal) => resolve({ code, signal, at: Date.now() }))
        )
        try {
          const port = await new Promise<number>((resolve, reject) => {
            let out = ""
            const timer = setTimeout(() => reject(new Error(`server did not start: ${stderr}`)), 60_000)
            child.stdout.on("data", (d) => {
              out += d.toString()
              const m = /READY (\d+)/.exec(out)
              if (m) {
                clearTimeout(timer)
                resolve(Number(m[1]))
              }
            })
          })
          // five runs, each parked in its first (60 s) LLM call once its first frame arrived
          const streams = await Promise.all(Array.from({ length: 5 }, async (_, i) => {
            const res = await fetch(`http://127.0.0.1:${port}/api/react`, {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ query: `run ${i}` })
            })
            assert.strictEqual(res.status, 200)
            const reader = res.body!.getReader()
            const first = await reader.read()
            assert.isFalse(first.done)
            // drain the rest in the background; resolves when the server ends the stream
            // (boxed: returning the promise itself would make Promise.all wait for it)
            const ended = (async () => {
              try {
                while (!(await reader.read()).done) {
                  // keep reading
                }
                return "ended"
              } catch {
                return "reset"
              }
            })()
            return { ended }
          }))
          const sentAt = Date.now()
          child.kill("SIGTERM")
          const exit = await Promise.race([
            exited,
            new Promise<"hung">((r) => setTimeout(() => r("hung"), 15_000))
          ])
          if (exit === "hung") {
            assert.fail(`the process did not exit within 15 s of SIGTERM; still alive:\n${stderr}`)
          } else {
            assert.strictEqual(exit.signal, null, stderr)
            assert.strictEqual(exit.code, 0, stderr)
            assert.isBelow(exit.at - sentAt, 10_000, `exit took ${exit.at - sentAt} ms`)
          }
          const endings = await Promise.all(streams.map((s) => s.ended))
          assert.strictEqual(endings.length, 5)
          // the server scope was closed by the SIGTERM handler (not by the process dying)
          assert.match(stderr, /CLOSED /)
        } finally {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
        }
      }),
    150_000
  )
})
