/**
 * The contract of `RunRegistry.events` (what `/api/chat` reads): the latest
 * run's events after the cursor, then live until `done`; a lease on the run
 * while subscribed; `NotFound` for a conversation without a run.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as App from "../../src/app/App.js"
import type { ChatRequest } from "../../src/Llm.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import * as DurableRuns from "../../src/server/DurableRuns.js"
import * as EventWire from "../../src/server/EventWire.js"
import * as RunRegistry from "../../src/server/RunRegistry.js"
import * as Server from "../../src/server/Server.js"
import type { ServerSettings } from "../../src/server/ServerConfig.js"
import * as ServerConfig from "../../src/server/ServerConfig.js"
import * as SqlInterrupts from "../../src/server/SqlInterrupts.js"
import * as Tool from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"
import { tempDatabase } from "../utils/serverHarness.js"

const hasToolResult = (request: ChatRequest) => request.messages.some((m) => m.role === "tool")

/** A registry over the app services; the `gate` tool waits for `release` (and reports an interruption). */
const registryWith = (settings: Partial<ServerSettings> = {}) =>
  Effect.gen(function*() {
    const started = yield* Deferred.make<void>()
    const release = yield* Deferred.make<void>()
    const interrupted = yield* Deferred.make<void>()
    const gate = Tool.make({
      name: "gate",
      description: "Waits",
      parameters: Schema.Struct({}),
      handler: () =>
        Deferred.succeed(started, undefined).pipe(
          Effect.zipRight(Deferred.await(release)),
          Effect.as("opened"),
          Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
        )
    })
    // the answer once the gate has answered (a loop reply, or a synthesis request, which offers no tools)
    const llm = ScriptedLlm.layer((request) =>
      hasToolResult(request) || (request.tools ?? []).length === 0
        ? ScriptedLlm.text("Opened.")
        : ScriptedLlm.toolCall("gate", {}, { id: "call_gate" })
    )
    const databasePath = tempDatabase()
    const layer = RunRegistry.layer.pipe(
      Layer.provide(DurableRuns.layerWorkflow),
      Layer.provideMerge(
        App.layerMemory(App.modelsOf(llm), {
          demo: false,
          tools: Toolkit.layer([gate]),
          interrupts: SqlInterrupts.layer
        })
      ),
      Layer.provide(Server.storage({ _tag: "Sqlite", filename: databasePath })),
      Layer.provide(ServerConfig.layer({ databasePath, ...settings }))
    )
    const registry = yield* Effect.map(
      Layer.build(Layer.orDie(layer)),
      (ctx) => Context.get(ctx, RunRegistry.RunRegistry)
    )
    return { registry, started, release, interrupted }
  })

/** The events of the stream (heartbeats left out) as the wire shows them: id, channel, payload. */
const collect = (stream: Stream.Stream<RunRegistry.Followed>) =>
  Effect.map(
    Stream.runCollect(stream),
    (items) =>
      Chunk.toArray(items).filter(RunRegistry.isItem).map((item) => ({ id: item.seq, ...EventWire.toWire(item.event) }))
  )

describe("RunRegistry.events", () => {
  it.scopedLive(
    "replays after the cursor, follows live, ends after done; the same events as from 0",
    () =>
      Effect.gen(function*() {
        const { registry, release, started } = yield* registryWith()
        yield* registry.start({ query: "open", conversationId: "c1" })
        yield* Deferred.await(started)
        // subscribed mid-run, from the start and from cursor 3
        const all = yield* Effect.scoped(Effect.flatMap(registry.events("c1", 0), collect)).pipe(Effect.fork)
        const tail = yield* Effect.scoped(Effect.flatMap(registry.events("c1", 3), collect)).pipe(Effect.fork)
        yield* Deferred.succeed(release, undefined)
        const everything = yield* Fiber.join(all)
        const after3 = yield* Fiber.join(tail)
        assert.deepStrictEqual(
          everything.map((e) => e.id),
          everything.map((_, i) => i + 1),
          "ids 1, 2, 3… without gaps"
        )
        assert.strictEqual(everything[everything.length - 1].channel, "done")
        assert.strictEqual(everything[everything.length - 1].data.answer, "Opened.")
        assert.deepStrictEqual(after3, everything.slice(3))
        const tool = everything.find((e) =>
          e.channel === "step" && e.data.type === "iteration" && e.data.status === "done"
        )
        assert.deepStrictEqual(tool?.data.observation, "opened")
        // the run is over: a replay ends by itself; nothing after the last id
        assert.deepStrictEqual(yield* Effect.scoped(Effect.flatMap(registry.events("c1", 0), collect)), everything)
        assert.deepStrictEqual(
          yield* Effect.scoped(Effect.flatMap(registry.events("c1", everything.length), collect)),
          []
        )
        const missing = yield* Effect.scoped(registry.events("nope", 0)).pipe(Effect.flip)
        assert.strictEqual(missing.code, "no_run")
      }),
    30_000
  )

  it.scopedLive(
    "it holds a lease: with RUN_DETACH_GRACE_MS=0 the run is cancelled when the last subscriber leaves",
    () =>
      Effect.gen(function*() {
        const { interrupted, registry, started } = yield* registryWith({ detachGraceMs: 0 })
        yield* registry.start({ query: "open", conversationId: "c2" })
        // subscribed until the tool runs, then gone
        yield* Effect.scoped(Effect.zipRight(registry.events("c2", 0), Deferred.await(started)))
        yield* Deferred.await(interrupted).pipe(
          Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => "not cancelled" })
        )
        const replay = yield* Effect.scoped(Effect.flatMap(registry.events("c2", 0), collect))
        assert.strictEqual(replay[replay.length - 1].data.cancelled, true)
      }),
    30_000
  )
})
