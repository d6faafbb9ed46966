/**
 * The resume boundary (SPEC §11): a client resuming with `Last-Event-ID` gets the
 * stored frames after its cursor, then the live ones — each id exactly once, in
 * order. The registry listens for live frames before it reads the stored ones, so
 * a frame published while the read is under way arrives twice (stored and live)
 * and must be delivered once (`follow` in src/server/RunRegistry.ts skips ids at
 * or below the last one delivered).
 *
 * The race is made deterministic with a run log whose read of stored events, for
 * the resuming client's cursor, waits until the run has published more frames
 * (it is held at a tool of its own): the read then returns frames that are also
 * waiting as live ones, the last of them (frame N) included.
 */
import * as HttpServer from "@effect/platform/HttpServer"
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as App from "../../src/app/App.js"
import type { ChatRequest } from "../../src/Llm.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import * as DurableRuns from "../../src/server/DurableRuns.js"
import * as EventWire from "../../src/server/EventWire.js"
import * as RunLog from "../../src/server/RunLog.js"
import * as RunRegistry from "../../src/server/RunRegistry.js"
import * as Server from "../../src/server/Server.js"
import * as ServerConfig from "../../src/server/ServerConfig.js"
import * as SqlApprovals from "../../src/server/SqlApprovals.js"
import * as SqlInterrupts from "../../src/server/SqlInterrupts.js"
import * as Tool from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"
import { tempDatabase } from "../utils/serverHarness.js"
import { openSse } from "../utils/sse.js"

/** The cursor the resuming client sends (frame 1, the first `thinking start`, is always stored by then). */
const CURSOR = 1

/**
 * A tool `gate({ n })` whose n-th call tells `started[n]` and waits for `release[n]`,
 * and a scripted model that calls it twice (fresh ids per request: `call_<request#>_0`, request# from 1),
 * then answers.
 */
const gatedRun = Effect.gen(function*() {
  const started = [yield* Deferred.make<void>(), yield* Deferred.make<void>()]
  const release = [yield* Deferred.make<void>(), yield* Deferred.make<void>()]
  const gate = Tool.make({
    name: "gate",
    description: "Waits to be opened",
    parameters: Schema.Struct({ n: Schema.Number }),
    handler: ({ n }) =>
      Deferred.succeed(started[n - 1], undefined).pipe(
        Effect.zipRight(Deferred.await(release[n - 1])),
        Effect.as(`gate ${n} opened`)
      )
  })
  const toolMessages = (request: ChatRequest) => request.messages.filter((m) => m.role === "tool").length
  const llm = ScriptedLlm.layer((request, index) => {
    // the synthesis request offers no tools
    if ((request.tools ?? []).length === 0 || toolMessages(request) >= 2) return ScriptedLlm.text("Both gates opened.")
    return ScriptedLlm.toolCall("gate", { n: toolMessages(request) + 1 }, { id: `call_${index + 1}_0` })
  })
  const app = App.layerMemory(App.modelsOf(llm), {
    demo: false,
    tools: Toolkit.layer([gate]),
    interrupts: SqlInterrupts.layer,
    approvals: SqlApprovals.layer,
    agent: { synthesis: "always" }
  })
  return { app, started, release }
})

/**
 * The server's storage with a run log whose `eventsAfter(runId, CURSOR)`, once
 * armed, tells `reading` and waits for `proceed` before it reads (once).
 */
const heldReads = Effect.gen(function*() {
  const reading = yield* Deferred.make<void>()
  const proceed = yield* Deferred.make<void>()
  let armed = false
  const wrap = (log: RunLog.RunLogService): RunLog.RunLogService => ({
    ...log,
    eventsAfter: (runId, after) =>
      Effect.suspend(() => {
        if (!armed || after !== CURSOR) return log.eventsAfter(runId, after)
        armed = false
        return Deferred.succeed(reading, undefined).pipe(
          Effect.zipRight(Deferred.await(proceed)),
          Effect.zipRight(log.eventsAfter(runId, after))
        )
      })
  })
  const storage = (databasePath: string) => {
    const real = Server.storage({ _tag: "Sqlite", filename: databasePath })
    // the same storage, its run log replaced by the wrapper
    return Layer.effectContext(
      Effect.map(
        Effect.context<Layer.Layer.Success<typeof real>>(),
        (context) => Context.add(context, RunLog.RunLog, wrap(Context.get(context, RunLog.RunLog)))
      )
    ).pipe(Layer.provide(real))
  }
  return { storage, reading, proceed, arm: Effect.sync(() => void (armed = true)) }
})

/**
 * The race, driven from outside: with the run held at gate 1, a client resumes
 * (`resume` forks it); its read of stored frames is held while the run goes on to
 * gate 2 (publishing frames up to N live), then reads them (N included); then the
 * run finishes. Returns what the client received.
 */
const race = <A>(
  run: Effect.Effect.Success<typeof gatedRun>,
  reads: Effect.Effect.Success<typeof heldReads>,
  resume: Effect.Effect<A>
) =>
  Effect.gen(function*() {
    yield* Deferred.await(run.started[0])
    yield* reads.arm
    const client = yield* Effect.fork(resume)
    // the client listens for live frames and its read of the stored ones has begun
    yield* Deferred.await(reads.reading)
    yield* Deferred.succeed(run.release[0], undefined)
    // every frame up to gate 2's tool start is stored and published: live frames the client holds back
    yield* Deferred.await(run.started[1])
    yield* Deferred.succeed(reads.proceed, undefined)
    yield* Deferred.succeed(run.release[1], undefined)
    return yield* Fiber.join(client)
  }).pipe(
    Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => new Error("the race did not finish") }),
    Effect.orDie
  )

/** Ids after the cursor, each once, in order, ending with `done`. */
const assertEachOnceInOrder = (
  delivered: ReadonlyArray<{ readonly id: number; readonly channel: string }>,
  all: ReadonlyArray<number>
) => {
  const ids = delivered.map((f) => f.id)
  assert.deepStrictEqual(ids, all.filter((id) => id > CURSOR), `each id once, in order: ${ids.join(",")}`)
  assert.strictEqual(delivered[delivered.length - 1].channel, "done")
  assert.strictEqual(delivered.filter((f) => f.channel === "done").length, 1)
}

describe("resume: a live frame published while catch-up reads it from the log", () => {
  it.scopedLive(
    "GET /api/react/events with Last-Event-ID: each id exactly once, in order",
    () =>
      Effect.gen(function*() {
        const run = yield* gatedRun
        const reads = yield* heldReads
        const databasePath = tempDatabase()
        const layer = Server.serve().pipe(
          Layer.provideMerge(Server.listenOn({ port: 0, host: "127.0.0.1" })),
          Layer.provideMerge(run.app),
          Layer.provide(reads.storage(databasePath)),
          Layer.provide(ServerConfig.layer({ port: 0, databasePath })),
          Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
        )
        const context = yield* Layer.build(Layer.orDie(layer))
        const address = Context.get(context, HttpServer.HttpServer).address
        if (address._tag !== "TcpAddress") return yield* Effect.die("expected a TCP address")
        const url = `http://127.0.0.1:${address.port}`

        // the run's own client reads everything from the start (its read is not held: cursor 0)
        const first = yield* Effect.fork(
          Effect.promise(() => openSse(`${url}/api/react`, { body: { query: "open both", conversation_id: "race" } }))
        )
        const resumed = yield* race(
          run,
          reads,
          Effect.promise(() =>
            openSse(`${url}/api/react/events?conversation_id=race`, { headers: { "last-event-id": String(CURSOR) } })
          )
        )
        const full = yield* Fiber.join(first)

        const allIds = full.events.map((e) => Number(e.id))
        assert.deepStrictEqual(allIds, allIds.map((_, i) => i + 1), "the full stream: ids 1, 2, 3… once each")
        assert.strictEqual(resumed.status, 200)
        assertEachOnceInOrder(resumed.events.map((e) => ({ id: Number(e.id), channel: e.event })), allIds)
        // the resumed client got the same frames as the first one, from the cursor on
        assert.deepStrictEqual(resumed.events, full.events.slice(CURSOR))
      }),
    30_000
  )

  it.scopedLive(
    "RunRegistry.events after a cursor (what /api/chat reads): each id exactly once, in order",
    () =>
      Effect.gen(function*() {
        const run = yield* gatedRun
        const reads = yield* heldReads
        const databasePath = tempDatabase()
        const layer = RunRegistry.layer.pipe(
          Layer.provide(DurableRuns.layerWorkflow),
          Layer.provideMerge(run.app),
          Layer.provide(reads.storage(databasePath)),
          Layer.provide(ServerConfig.layer({ databasePath })),
          Layer.provide(Logger.minimumLogLevel(LogLevel.Warning))
        )
        const registry = Context.get(yield* Layer.build(Layer.orDie(layer)), RunRegistry.RunRegistry)
        yield* registry.start({ query: "open both", conversationId: "race" })
        // the events (heartbeats left out) as id and channel
        const frames = (cursor: number) =>
          Effect.scoped(Effect.flatMap(registry.events("race", cursor), Stream.runCollect)).pipe(
            Effect.orDie,
            Effect.map((items) =>
              Chunk.toArray(items).filter(RunRegistry.isItem).map((item) => ({
                id: item.seq!,
                channel: EventWire.toWire(item.event).channel
              }))
            )
          )
        const resumed = yield* race(run, reads, frames(CURSOR))
        const full = yield* frames(0)
        const allIds = full.map((e) => e.id)
        assert.deepStrictEqual(allIds, allIds.map((_, i) => i + 1))
        assertEachOnceInOrder(resumed, allIds)
      }),
    30_000
  )
})
