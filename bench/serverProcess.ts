/**
 * The real server (routes, run registry, SQLite store, ReactAgent), wired by
 * `App.layerMemory` over a scripted LLM with a fixed latency per call, run as a child
 * process of the load benchmark (`child_process.fork`, IPC channel).
 *
 * The scripted model: each run makes `BENCH_STEPS` tool calls (a trivial tool),
 * then answers in `BENCH_CHUNKS` streamed chunks (the loop's last call under the
 * default synthesis policy `auto`; the synthesis call under `always`). Every loop reply
 * carries its own timestamp in `reasoning` (→ the `thinking done` SSE frame) and
 * every answer chunk carries the time it left the model (→ the `answer delta`
 * frame), so the client measures "LLM reply → SSE frame received" directly.
 * Timestamps are `performance.timeOrigin + performance.now()` (ms, sub-ms resolution,
 * comparable across processes on one machine).
 *
 * IPC: sends `{ type: "ready", port }`; answers `{ type: "measure" }` with
 * `{ type: "memory", heapUsed, rss, active }` after a full GC (needs `--expose-gc`).
 *
 * Env: BENCH_LATENCY_MS (20), BENCH_STEPS (4; a query containing `steps=<n>` asks for
 * n instead), BENCH_CHUNKS (5), BENCH_DATABASE_URL (PostgreSQL, a socket runner on
 * BENCH_CLUSTER_PORT; default: a fresh SQLite file), REACT_MAX_ACTIVE_RUNS and REACT_RUN_QUEUE (admission).
 *
 * Without an IPC channel (spawned, as the shutdown fault test does) it prints
 * `READY <port>` on stdout, and on SIGTERM closes the server's scope (server
 * closed, runs cancelled, SQLite closed) and then exits ON ITS OWN, without
 * `process.exit`: the process only ends when nothing (socket, timer, fiber
 * sleeping on a timer…) is left. Every 2 s after SIGTERM it prints
 * `RESOURCES <json>` (`process.getActiveResourcesInfo()`) on stderr, so a hang says
 * what is still alive.
 *
 * @since 0.1.0
 */
import * as HttpLayerRouter from "@effect/platform/HttpLayerRouter"
import * as HttpServer from "@effect/platform/HttpServer"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Scheduler from "effect/Scheduler"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as App from "../src/app/App.js"
import type { ChatDelta, LlmService } from "../src/Llm.js"
import { Llm } from "../src/Llm.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as DurableRuns from "../src/server/DurableRuns.js"
import * as RunRegistry from "../src/server/RunRegistry.js"
import * as Server from "../src/server/Server.js"
import * as ServerConfig from "../src/server/ServerConfig.js"
import * as ServerScheduler from "../src/server/ServerScheduler.js"
import * as SqlInterrupts from "../src/server/SqlInterrupts.js"
import * as Tool from "../src/Tool.js"
import * as Toolkit from "../src/Toolkit.js"

const latencyMs = Number(process.env.BENCH_LATENCY_MS ?? 20)
const steps = Number(process.env.BENCH_STEPS ?? 4)
const chunks = Number(process.env.BENCH_CHUNKS ?? 5)

/** Absolute time in ms with sub-ms resolution. @since 0.1.0 */
export const now = (): number => performance.timeOrigin + performance.now()

const lookup = Tool.make({
  name: "lookup",
  description: "Looks up one record by its index.",
  parameters: Schema.Struct({ index: Schema.Number }),
  handler: ({ index }) => Effect.succeed(`record ${index}: ok`)
})

/** The answer: `chunks` chunks, each after the model's latency. */
const answer = () => {
  const parts = Array.from({ length: chunks }, (_, i) => `chunk ${i} `)
  return ScriptedLlm.text(parts.join(""), { delay: latencyMs, chunks: parts, usage: { prompt: 10, completion: 5 } })
}

// Keyed on the request, not on the method: under synthesis auto (the default) the loop's calls
// stream and the last one is the answer; under always the synthesis request offers no tools.
const scripted = ScriptedLlm.makeUnsafe((request) => {
  if ((request.tools ?? []).length === 0) return answer()
  let done = 0
  let wanted = steps
  for (const m of request.messages) {
    if (m.role === "tool") done++
    const asked = m.role === "user" && typeof m.content === "string" ? /steps=(\d+)/.exec(m.content) : null
    if (asked) wanted = Number(asked[1])
  }
  return done < wanted
    ? ScriptedLlm.toolCall("lookup", { index: done }, { delay: latencyMs, usage: { prompt: 10, completion: 5 } })
    : answer()
}, { record: false, model: "bench-scripted", contextSize: 1_000_000, maxOutputTokens: 10_000 })

/** Stamps each reply / chunk with the time it leaves the model. */
const stamped: LlmService = {
  ...scripted.service,
  chat: (request) => Effect.map(scripted.service.chat(request), (r) => ({ ...r, reasoning: `t=${now()}` })),
  // each content chunk, and the reply as a whole (its reasoning, shown by `thinking done`)
  streamChat: (request) =>
    Stream.mapConcat(scripted.service.streamChat(request), (d): ReadonlyArray<ChatDelta> =>
      d._tag === "Content"
        ? [{ _tag: "Content", text: `[t=${now()}]` }]
        : d._tag === "Finish"
        ? [{ _tag: "Reasoning", text: `t=${now()}` }, d]
        : [d])
}

const dir = mkdtempSync(join(tmpdir(), "react-engine-bench-"))
const databasePath = join(dir, "bench.sqlite")

const app = App.layerMemory(App.modelsOf(Layer.succeed(Llm, stamped)), {
  demo: false,
  tools: Toolkit.layer([lookup]),
  interrupts: SqlInterrupts.layer
})
// the routes of `Server.serve`, with the run registry kept in the output (to report active runs)
const layer = HttpLayerRouter.serve(Server.Routes, { disableLogger: true, disableListenLog: true }).pipe(
  Layer.provideMerge(RunRegistry.layer),
  Layer.provideMerge(Server.listenOn({ port: 0, host: "127.0.0.1" })),
  Layer.provide(DurableRuns.layerWorkflow),
  Layer.provideMerge(app),
  Layer.provide(
    process.env.BENCH_DATABASE_URL
      ? Server.storage({ _tag: "Postgres", url: Redacted.make(process.env.BENCH_DATABASE_URL) }, {
        host: "127.0.0.1",
        port: Number(process.env.BENCH_CLUSTER_PORT ?? 34431),
        shardLockExpiration: Duration.seconds(10),
        shardLockRefresh: Duration.seconds(3)
      })
      : Server.storage({ _tag: "Sqlite", filename: databasePath })
  ),
  Layer.provide(ServerConfig.layer({
    port: 0,
    databasePath,
    heartbeatMs: 15_000,
    detachGraceMs: 0,
    // admission control, as the server reads it (docs/configuration.md)
    ...(process.env.REACT_MAX_ACTIVE_RUNS ? { maxActiveRuns: Number(process.env.REACT_MAX_ACTIVE_RUNS) } : {}),
    ...(process.env.REACT_RUN_QUEUE ? { runQueue: Number(process.env.REACT_RUN_QUEUE) } : {})
  })),
  // the server's scheduler, as `npm start` runs it (`REACT_SCHEDULER_SLICE_MS`, 0: Effect's default)
  Layer.provide(Layer.orDie(ServerScheduler.layerConfig))
)

const send = (message: unknown) => process.send?.(message)

// BENCH_SCHEDULER_TICKS=<n>: Effect's own `MixedScheduler` yielding to the event loop (a timer) after
// n microtask rounds instead of 2,048 — an experiment on how soon Node reads new requests (bench/analysis.md)
const schedulerTicks = Number(process.env.BENCH_SCHEDULER_TICKS ?? 0)
// BENCH_SCHEDULER_IMMEDIATE=<n>: the same, but yielding with `setImmediate` (the check phase, right
// after the poll phase that accepts and reads connections; no 1 ms timer floor)
const immediateTicks = Number(process.env.BENCH_SCHEDULER_IMMEDIATE ?? 0)
class ImmediateScheduler implements Scheduler.Scheduler {
  private readonly getRunner = Scheduler.SchedulerRunner.cached((depth, drain) => {
    if (depth >= immediateTicks) setImmediate(() => drain(0))
    else queueMicrotask(() => drain(depth + 1))
  })
  shouldYield(fiber: Parameters<Scheduler.Scheduler["shouldYield"]>[0]): number | false {
    return Scheduler.defaultScheduler.shouldYield(fiber)
  }
  scheduleTask(task: Scheduler.Task, priority: number, fiber?: Parameters<Scheduler.Scheduler["scheduleTask"]>[2]) {
    this.getRunner(fiber).scheduleTask(task, priority)
  }
}

const program = Effect.gen(function*() {
  const context = yield* Layer.build(layer)
  const address = Context.get(context, HttpServer.HttpServer).address
  const registry = Context.get(context, RunRegistry.RunRegistry)
  if (address._tag !== "TcpAddress") return yield* Effect.die("expected a TCP address")
  process.on("message", (message: { type?: string }) => {
    if (message?.type === "measure") {
      ;(globalThis as { gc?: () => void }).gc?.()
      const active = Effect.runSync(registry.activeCount)
      const m = process.memoryUsage()
      send({
        type: "memory",
        heapUsed: m.heapUsed,
        heapTotal: m.heapTotal,
        rss: m.rss,
        external: m.external,
        arrayBuffers: m.arrayBuffers,
        active
      })
    } else if (message?.type === "stop") {
      rmSync(dir, { recursive: true, force: true })
      process.exit(0)
    }
  })
  send({ type: "ready", port: address.port })
  if (!process.send) process.stdout.write(`READY ${address.port}\n`)
  return yield* Effect.never
}).pipe(
  Effect.scoped,
  Effect.ensuring(Effect.sync(() => rmSync(dir, { recursive: true, force: true }))),
  schedulerTicks > 0 ? Effect.withScheduler(new Scheduler.MixedScheduler(schedulerTicks)) : (self) => self,
  immediateTicks > 0 ? Effect.withScheduler(new ImmediateScheduler()) : (self) => self
)

const main = Effect.runFork(program)
process.on("disconnect", () => process.exit(0))
process.once("SIGTERM", () => {
  const report = setInterval(() => {
    process.stderr.write(`RESOURCES ${JSON.stringify(process.getActiveResourcesInfo())}\n`)
  }, 2000)
  report.unref()
  Effect.runFork(Fiber.interrupt(main)).addObserver(() => {
    process.exitCode = 0
    process.stderr.write(`CLOSED ${JSON.stringify(process.getActiveResourcesInfo())}\n`)
  })
})
