/**
 * `npm start` as a real process (src/app/main.ts on the offline demo model):
 * what it logs per run, the README's inject example, and what it says when its
 * port is taken.
 */
import { assert, describe, it } from "@effect/vitest"
import { type ChildProcess, execFile, spawn } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { createServer, type Server } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { openSse } from "../utils/sse.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))

const start = (env: Record<string, string>) => {
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(?:FAST_)?LLM_|^MCP_CONFIG$|^REACT_|^CONTEXT_GUARD_|^PORT$|^HOST$/.test(k)) base[k] = v
  }
  const database = join(mkdtempSync(join(tmpdir(), "react-engine-startup-")), "db.sqlite")
  const child = spawn(process.execPath, ["--import", "tsx", "src/app/main.ts"], {
    cwd: ROOT,
    env: { ...base, DATABASE_PATH: database, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const output = { stdout: "", stderr: "" }
  child.stdout!.on("data", (c: Buffer) => (output.stdout += c.toString("utf8")))
  child.stderr!.on("data", (c: Buffer) => (output.stderr += c.toString("utf8")))
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)))
  return { child, output, exited }
}

const waitFor = async (what: () => boolean, timeoutMs: number, label: string) => {
  const until = Date.now() + timeoutMs
  while (!what()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${label}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

const stop = async (child: ChildProcess, exited: Promise<number | null>) => {
  if (child.exitCode === null) child.kill("SIGTERM")
  await exited
}

describe("npm start", () => {
  it("logs one line when a run starts and one when it ends, none per HTTP request", async () => {
    const server = start({ PORT: "0" })
    try {
      await waitFor(() => /ready: (http:\/\/\S+)/.test(server.output.stdout), 60_000, "the banner")
      const url = /ready: (http:\/\/\S+)/.exec(server.output.stdout)![1]
      const before = server.output.stdout.length
      for (const path of ["/", "/assets/app.js", "/health", "/api/tools"]) {
        assert.strictEqual((await fetch(url + path)).status, 200)
      }
      const run = await openSse(`${url}/api/react`, { body: { query: "What is 12*7+1?", conversation_id: "log-test" } })
      assert.strictEqual(run.events.at(-1)?.event, "done")
      await waitFor(() => server.output.stdout.includes(" done (conversation log-test)"), 10_000, "the end line")
      const lines = server.output.stdout.slice(before).split("\n").filter((l) => l.trim() !== "")
      assert.strictEqual(lines.length, 2, lines.join("\n"))
      assert.match(lines[0], /INFO .*: run run_\S+ started \(conversation log-test\)$/)
      assert.match(
        lines[1],
        /INFO .*: run run_\S+ done \(conversation log-test\): 2 iterations, \d+ tokens, 2 LLM calls, \d+\.\d\d s$/
      )
    } finally {
      await stop(server.child, server.exited)
    }
  }, 90_000)

  it("a failed run's end line is a warning that says why", async () => {
    // a model endpoint that refuses connections: the run fails after the LLM layer's attempt
    const closed = await new Promise<number>((resolve) => {
      const s: Server = createServer().listen(0, "127.0.0.1", () => {
        const port = (s.address() as { port: number }).port
        s.close(() => resolve(port))
      })
    })
    const server = start({
      PORT: "0",
      LLM_BASE_URL: `http://127.0.0.1:${closed}/v1`,
      LLM_MODEL: "m",
      LLM_API_KEY: "k",
      LLM_MAX_RETRIES: "0"
    })
    try {
      await waitFor(() => /ready: (http:\/\/\S+)/.test(server.output.stdout), 60_000, "the banner")
      const url = /ready: (http:\/\/\S+)/.exec(server.output.stdout)![1]
      const run = await openSse(`${url}/api/react`, { body: { query: "hello", conversation_id: "log-fail" } })
      assert.deepStrictEqual(run.events.slice(-2).map((e) => e.event), ["error", "done"])
      await waitFor(() => server.output.stdout.includes(" failed (conversation log-fail)"), 10_000, "the end line")
      const end = server.output.stdout.split("\n").find((l) => l.includes(" failed (conversation log-fail)"))!
      assert.match(
        end,
        /WARN .*: run run_\S+ failed \(conversation log-fail\): 1 iteration, 0 tokens, 0 LLM calls, \d+\.\d\d s: LLM error \(Connection\): Could not reach the LLM endpoint/
      )
    } finally {
      await stop(server.child, server.exited)
    }
  }, 90_000)

  it("the README's inject script gets its follow-up taken in by a demo-model run", async () => {
    const readme = readFileSync(join(ROOT, "README.md"), "utf8")
    const block = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]).find((b) =>
      b.includes("while IFS= read")
    )
    assert.isString(block, "the inject script is in README.md")
    const server = start({ PORT: "0" })
    try {
      await waitFor(() => /ready: http:\/\/(\S+)/.test(server.output.stdout), 60_000, "the banner")
      const host = /ready: http:\/\/(\S+)/.exec(server.output.stdout)![1]
      const runScript = (conversation: string) =>
        new Promise<string>((resolve, reject) =>
          execFile(
            "bash",
            ["-c", block!.replaceAll("localhost:3000", host).replaceAll("inject-demo", conversation)],
            { timeout: 30_000 },
            (error, stdout) => (error ? reject(error) : resolve(stdout))
          )
        )
      // The script sends its follow-up when the first step event arrives; the demo model's run
      // takes a fraction of a second, and on a loaded machine starting that second curl can take
      // longer: the run has then ended and the inject is refused (404 no_active_execution). Only
      // that lost race is tried again (a fresh conversation each time); any other outcome counts.
      let output = ""
      for (let attempt = 1; attempt <= 3; attempt++) {
        output = await runScript(`inject-demo-${attempt}`)
        if (!output.includes("\"no_active_execution\"")) break
      }
      assert.include(output, "event: inject")
      assert.include(output, "\"tool_name\":\"current_time\"")
      const done = JSON.parse(output.trim().split("\n").at(-1)!.replace(/^data: /, ""))
      assert.include(done.answer, "also: what time is it in Tokyo?")
      assert.include(done.answer, "**85**")
    } finally {
      await stop(server.child, server.exited)
    }
  }, 90_000)

  it("a port already in use is one line naming the port and PORT, and exit code 1", async () => {
    const taken: Server = createServer()
    await new Promise<void>((r) => taken.listen(0, "127.0.0.1", r))
    const port = (taken.address() as { port: number }).port
    try {
      const server = start({ PORT: String(port) })
      const code = await server.exited
      const text = server.output.stdout + server.output.stderr
      assert.strictEqual(code, 1, text)
      const errors = text.split("\n").filter((l) => l.includes("ERROR"))
      assert.strictEqual(errors.length, 1, text)
      assert.include(errors[0], `Port ${port} is already in use`)
      assert.include(errors[0], `PORT=${port + 1}`)
      assert.notInclude(text, "ServeError")
      assert.notMatch(text, /^\s+at /m, "no stack trace")
    } finally {
      await new Promise((r) => taken.close(r))
    }
  }, 90_000)
})
