/**
 * No request left unanswered at start-up (issue 32, "Start-up race").
 *
 * In process, on `Server.listenOn` alone (the routes installed by hand): a request that arrives
 * before the routes waits for them and is served; one that waits more than 1 s is answered 503
 * with `Retry-After: 1`; after the routes are removed (shutdown) a request gets the 503 at once.
 *
 * As a process: the real server
 * (src/app/main.ts on the offline demo model, a fresh SQLite file) is spawned, and a client
 * hammers `/health` and `/api/react/events?conversation_id=x` on its port — a new connection
 * each, two every ~5 ms — from before the port opens until a second after `/health` first
 * answers 200. Every request whose connection was accepted must get a status within 2 s: 503
 * with `Retry-After` while the routes are not installed yet, the route's answer afterwards.
 *
 * Before the fix the port opened (`NodeHttpServer` listens while its layer is built) ~30 ms
 * before the routes were installed (`HttpServer.serve`, after the run registry and the durable
 * run workflow), and a request that arrived in between had no `request` listener: Node parsed it
 * and nobody ever answered.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import { assert, describe, it } from "@effect/vitest"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Scope from "effect/Scope"
import { spawn } from "node:child_process"
import { mkdtempSync, rmSync } from "node:fs"
import { request } from "node:http"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as Server from "../../src/server/Server.js"
import { freePort } from "../utils/serverProcess.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
/** The longest a connected request may wait for its status. */
const ANSWER_WITHIN_MS = 2_000
/** How long the client goes on once the server serves. */
const AFTER_READY_MS = 1_000

interface Outcome {
  readonly path: string
  readonly sentAt: number
  connectedAt?: number
  status?: number
  retryAfter?: string
  answeredAt?: number
  error?: string
}

/** One request on a connection of its own; resolves once it has a status, failed, or waited too long. */
const probe = (port: number, path: string, onStatus: (o: Outcome) => void): Promise<Outcome> =>
  new Promise((resolve) => {
    const outcome: Outcome = { path, sentAt: Date.now() }
    let timer: ReturnType<typeof setTimeout> | undefined
    const req = request({ host: "127.0.0.1", port, path, agent: false, headers: { accept: "*/*" } })
    req.on("socket", (socket) =>
      socket.once("connect", () => {
        outcome.connectedAt = Date.now()
        timer = setTimeout(() => {
          outcome.error = `no status within ${ANSWER_WITHIN_MS} ms`
          req.destroy()
        }, ANSWER_WITHIN_MS)
      }))
    req.on("response", (res) => {
      clearTimeout(timer)
      outcome.status = res.statusCode
      const retryAfter = res.headers["retry-after"]
      if (retryAfter !== undefined) outcome.retryAfter = retryAfter
      outcome.answeredAt = Date.now()
      onStatus(outcome)
      res.destroy()
      resolve(outcome)
    })
    req.on("error", (error: NodeJS.ErrnoException) => {
      clearTimeout(timer)
      outcome.error ??= error.code ?? error.message
      resolve(outcome)
    })
    req.end()
  })

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The server of `Server.listenOn` on a random port, without routes. */
const listening = Effect.gen(function*() {
  const server = Context.get(yield* Layer.build(Server.listenOn({ port: 0, host: "127.0.0.1" })), HttpServer.HttpServer)
  const port = server.address._tag === "TcpAddress" ? server.address.port : 0
  const get = (path: string) =>
    Effect.promise(async () => {
      const sent = Date.now()
      const response = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(5000) })
      return {
        status: response.status,
        retryAfter: response.headers.get("retry-after"),
        body: await response.text(),
        ms: Date.now() - sent
      }
    })
  return { server, get }
})

const routes = Effect.succeed(HttpServerResponse.text("served"))

describe("before the routes are installed (Server.listenOn)", () => {
  it.live("a request waits for the routes and is served by them", () =>
    Effect.gen(function*() {
      const { get, server } = yield* listening
      const early = yield* Effect.fork(get("/early"))
      yield* Effect.sleep("300 millis")
      yield* server.serve(routes)
      const answer = yield* Fiber.join(early)
      assert.deepStrictEqual([answer.status, answer.body], [200, "served"])
      assert.isAtLeast(answer.ms, 250)
      assert.deepStrictEqual((yield* get("/later")).status, 200)
    }).pipe(Effect.scoped))

  it.live("a request that waited 1 s for them gets 503 with Retry-After: 1", () =>
    Effect.gen(function*() {
      const { get } = yield* listening
      const answer = yield* get("/health")
      assert.strictEqual(answer.status, 503)
      assert.strictEqual(answer.retryAfter, "1")
      assert.deepStrictEqual(JSON.parse(answer.body), {
        error: "unavailable",
        message: "The server is starting; retry shortly"
      })
      assert.isAtLeast(answer.ms, 900)
      assert.isBelow(answer.ms, 3000)
    }).pipe(Effect.scoped))

  it.live("after the routes are removed (shutdown), a request gets 503 at once", () =>
    Effect.gen(function*() {
      const { get, server } = yield* listening
      const routesScope = yield* Scope.make()
      yield* server.serve(routes).pipe(Scope.extend(routesScope))
      assert.strictEqual((yield* get("/")).status, 200)
      yield* Scope.close(routesScope, Exit.void)
      const answer = yield* get("/")
      assert.strictEqual(answer.status, 503)
      assert.strictEqual(answer.retryAfter, "1")
      assert.deepStrictEqual(JSON.parse(answer.body), { error: "unavailable", message: "The server is stopping" })
      assert.isBelow(answer.ms, 900)
    }).pipe(Effect.scoped))
})

describe("start-up", () => {
  it(
    "every request that reaches the port while the server starts gets a status within 2 s (503 + Retry-After until ready)",
    async () => {
      const port = await freePort()
      const dir = mkdtempSync(join(tmpdir(), "react-engine-startup-race-"))
      const env: Record<string, string> = {}
      for (const [k, v] of Object.entries(process.env)) {
        if (v !== undefined && !/^(?:FAST_)?LLM_|^MCP_CONFIG$|^DATABASE_URL$|^NODE_CHANNEL/.test(k)) env[k] = v
      }
      const child = spawn(process.execPath, ["--import", "tsx", "src/app/main.ts"], {
        cwd: ROOT,
        env: { ...env, HOST: "127.0.0.1", PORT: String(port), DATABASE_PATH: join(dir, "db.sqlite") },
        stdio: ["ignore", "pipe", "pipe"],
        detached: true
      })
      let output = ""
      child.stdout!.on("data", (d) => (output += d.toString()))
      child.stderr!.on("data", (d) => (output += d.toString()))
      try {
        const outcomes: Array<Promise<Outcome>> = []
        let readyAt: number | undefined
        const onStatus = (o: Outcome) => {
          if (readyAt === undefined && o.path === "/health" && o.status === 200) readyAt = Date.now()
        }
        const deadline = Date.now() + 120_000
        while (readyAt === undefined || Date.now() - readyAt < AFTER_READY_MS) {
          assert.isTrue(Date.now() < deadline, `the server did not serve /health within 120 s:\n${output}`)
          assert.isNull(child.exitCode, `the server exited while starting:\n${output}`)
          outcomes.push(probe(port, "/health", onStatus), probe(port, "/api/react/events?conversation_id=x", onStatus))
          await sleep(5)
        }
        const all = await Promise.all(outcomes)
        const connected = all.filter((o) => o.connectedAt !== undefined)
        const unanswered = connected.filter((o) => o.status === undefined)
        const unavailable = connected.filter((o) => o.status === 503)
        const slowest = Math.max(...connected.map((o) => (o.answeredAt ?? Infinity) - o.connectedAt!))
        console.log(
          `start-up race: ${all.length} requests, ${all.length - connected.length} refused before the port opened, ` +
            `${connected.length} connected: ${unavailable.length} answered 503, ${unanswered.length} unanswered; slowest status ${slowest} ms`
        )
        assert.deepStrictEqual(
          unanswered.map((o) => `${o.path}: connected at +${o.connectedAt! - o.sentAt} ms, ${o.error}`),
          [],
          "requests that connected but got no status"
        )
        // refused connections are fine (the port was not open yet); nothing else may go wrong
        const otherErrors = all.filter((o) => o.connectedAt === undefined && o.error !== "ECONNREFUSED")
        assert.deepStrictEqual(otherErrors.map((o) => `${o.path}: ${o.error}`), [])
        for (const o of unavailable) assert.strictEqual(o.retryAfter, "1", `${o.path}: 503 without Retry-After`)
        for (const o of connected) {
          const expected = o.path === "/health" ? [200, 503] : [204, 404, 503]
          assert.include(expected, o.status, `${o.path} answered ${o.status}`)
        }
      } finally {
        try {
          process.kill(-child.pid!, "SIGKILL")
        } catch {
          // already gone
        }
        await new Promise((
          r
        ) => (child.exitCode !== null || child.signalCode !== null ? r(undefined) : child.once("exit", r)))
        rmSync(dir, { recursive: true, force: true })
      }
    },
    180_000
  )
})
