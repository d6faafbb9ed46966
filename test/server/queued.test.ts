/**
 * Acknowledged at once (issue 45 item 1): a run accepted while every slot is taken
 * (`REACT_MAX_ACTIVE_RUNS`) gets a stored first event `phase {phase:"queued",
 * position}` before its workflow starts; its own events follow, with the next ids,
 * once a slot is free — and a run that gets a slot at once has no `queued` event.
 * The real server over a fake OpenAI server; the first run is held in a tool.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import * as Tool from "../../src/Tool.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"
import { openSse, type SseEvent } from "../utils/sse.js"

const hasToolResult = (body: any) => (body?.messages ?? []).some((m: any) => m.role === "tool")

const responder: FakeOpenAi.FakeResponder = (body, index) => {
  if (body?.stream) {
    return FakeOpenAi.sse([
      FakeOpenAi.chunk.content("Done."),
      FakeOpenAi.chunk.finish("stop"),
      FakeOpenAi.chunk.usage(10, 3)
    ])
  }
  return hasToolResult(body)
    ? FakeOpenAi.completion({ content: "Done." })
    : FakeOpenAi.completion({ toolCalls: [{ id: FakeOpenAi.freshCallId(index), name: "hold", arguments: "{}" }] })
}

const queued = (e: SseEvent) => e.event === "phase" && e.data.phase === "queued"

describe("a run waiting for a free slot", () => {
  it.scopedLive(
    "is acknowledged at once with its place; its own events follow when it executes",
    () =>
      Effect.gen(function*() {
        const release = yield* Deferred.make<void>()
        const holding = yield* Deferred.make<void>()
        const hold = Tool.make({
          name: "hold",
          description: "Holds the run until released",
          parameters: Schema.Struct({}),
          handler: () =>
            Effect.zipRight(Deferred.succeed(holding, undefined), Effect.as(Deferred.await(release), "released"))
        })
        const fake = yield* FakeOpenAi.scoped(responder)
        const { url } = yield* startServer({
          llmUrl: fake.url,
          tools: [hold],
          settings: { maxActiveRuns: 1, runQueue: 5 }
        })

        const first = yield* Effect.fork(
          Effect.promise(() =>
            openSse(`${url}/api/react`, { body: { query: "first", conversation_id: "q1" }, timeoutMs: 30_000 })
          )
        )
        yield* Deferred.await(holding)
        // the slot is taken: the second and third runs wait, and say so at once
        const seen: Array<SseEvent> = []
        const acknowledged = yield* Deferred.make<void>()
        const second = yield* Effect.fork(Effect.promise(() =>
          openSse(`${url}/api/react`, {
            body: { query: "second", conversation_id: "q2" },
            timeoutMs: 30_000,
            onEvent: (e) => {
              seen.push(e)
              if (queued(e)) Effect.runFork(Deferred.succeed(acknowledged, undefined))
            }
          })
        ))
        yield* Deferred.await(acknowledged).pipe(
          Effect.timeoutFail({ duration: "10 seconds", onTimeout: () => new Error("no queued event") })
        )
        assert.deepStrictEqual(seen.map((e) => [e.id, e.event, e.data]), [["1", "phase", {
          phase: "queued",
          position: 0
        }]], "only the acknowledgement while the slot is taken")
        const thirdRun = yield* Effect.fork(Effect.promise(() =>
          openSse(`${url}/api/react`, {
            body: { query: "third", conversation_id: "q3" },
            timeoutMs: 30_000,
            until: queued
          })
        ))
        const thirdSeen = yield* Fiber.join(thirdRun)
        assert.deepStrictEqual(thirdSeen.events[0]?.data, { phase: "queued", position: 1 }, "one run ahead of it")

        yield* Deferred.succeed(release, undefined)
        const a = yield* Fiber.join(first)
        const b = yield* Fiber.join(second)
        assert.isFalse(a.events.some(queued), "a run with a slot at once is not queued")
        assert.strictEqual(a.events[0].id, "1")
        const ids = b.events.map((e) => Number(e.id))
        assert.deepStrictEqual(
          ids,
          ids.map((_, i) => i + 1),
          "its own events follow with the next ids"
        )
        assert.strictEqual(b.events[1].event, "step", "then the run's own first event")
        assert.strictEqual(b.events[b.events.length - 1].event, "done")
        assert.isFalse(
          b.events.some((e) => e.event === "phase" && e.data.phase === "resumed"),
          "a queued run is not a resumed one"
        )
      }),
    60_000
  )

  it.scopedLive(
    "runs that arrive together while the slot is taken get each their own place",
    () =>
      Effect.gen(function*() {
        const release = yield* Deferred.make<void>()
        const holding = yield* Deferred.make<void>()
        const hold = Tool.make({
          name: "hold",
          description: "Holds the run until released",
          parameters: Schema.Struct({}),
          handler: () =>
            Effect.zipRight(Deferred.succeed(holding, undefined), Effect.as(Deferred.await(release), "released"))
        })
        const fake = yield* FakeOpenAi.scoped(responder)
        const { url } = yield* startServer({
          llmUrl: fake.url,
          tools: [hold],
          settings: { maxActiveRuns: 1, runQueue: 10 }
        })
        const first = yield* Effect.fork(
          Effect.promise(() =>
            openSse(`${url}/api/react`, { body: { query: "first", conversation_id: "p0" }, timeoutMs: 60_000 })
          )
        )
        yield* Deferred.await(holding)
        // five starts at once: whatever order the server takes them in, their places are 0 … 4, each once
        const waiting = yield* Effect.forEach(
          [1, 2, 3, 4, 5],
          (i) =>
            Effect.promise(() =>
              openSse(`${url}/api/react`, {
                body: { query: `waiting ${i}`, conversation_id: `p${i}` },
                timeoutMs: 30_000,
                until: queued
              })
            ),
          { concurrency: "unbounded" }
        )
        const places = waiting.map((r) => (r.events[0]?.data as { position?: number } | undefined)?.position ?? -1)
        assert.deepStrictEqual([...places].sort((a, b) => a - b), [0, 1, 2, 3, 4], `places ${JSON.stringify(places)}`)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.join(first)
      }),
    90_000
  )
})
