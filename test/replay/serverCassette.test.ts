/**
 * A run of the real server (a child process, `src/app/main.ts`, on an
 * OpenAI-compatible fake model) exported as a cassette over HTTP and replayed
 * in process: the same events, no model and no tool; a changed prompt shows
 * where the replay diverges.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as Cassette from "../../src/Cassette.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import * as Replay from "../../src/Replay.js"
import * as EventWire from "../../src/server/EventWire.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServerProcess } from "../utils/serverProcess.js"
import { openSse } from "../utils/sse.js"

const hasToolResult = (body: any) => (body?.messages ?? []).some((m: any) => m.role === "tool")

/** Calls the calculator twice in one round, then answers; the synthesis streams. Fresh call ids per request. */
const model: FakeOpenAi.FakeResponder = (body, index) => {
  if (body?.stream) {
    return FakeOpenAi.sse([
      FakeOpenAi.chunk.role(),
      FakeOpenAi.chunk.content("2 + 3 is **5** "),
      FakeOpenAi.chunk.content("and 6 * 7 is **42**."),
      FakeOpenAi.chunk.finish("stop"),
      FakeOpenAi.chunk.usage(30, 9)
    ])
  }
  return hasToolResult(body)
    ? FakeOpenAi.completion({ content: "5 and 42.", usage: { prompt: 40, completion: 5 } })
    : FakeOpenAi.completion({
      content: "",
      toolCalls: [
        { id: FakeOpenAi.freshCallId(index, 0), name: "calculator", arguments: JSON.stringify({ expression: "2+3" }) },
        { id: FakeOpenAi.freshCallId(index, 1), name: "calculator", arguments: JSON.stringify({ expression: "6*7" }) }
      ],
      usage: { prompt: 20, completion: 8 }
    })
}

describe("server cassettes", () => {
  it.live(
    "a server run downloaded as a cassette replays in process with identical events, and diverges after a prompt change",
    () =>
      Effect.gen(function*() {
        const fake = yield* Effect.acquireRelease(Effect.promise(() => FakeOpenAi.start(model)), (f) =>
          Effect.promise(() => f.close()))
        const dir = mkdtempSync(join(tmpdir(), "cassette-"))
        const server = yield* Effect.acquireRelease(
          Effect.promise(() =>
            startServerProcess({
              DATABASE_PATH: join(dir, "react.db"),
              LLM_BASE_URL: fake.url,
              LLM_MODEL: "fake-model",
              LLM_API_KEY: "test",
              LLM_MAX_RETRIES: "0",
              REACT_SYNTHESIS: "always"
            })
          ),
          (s) =>
            Effect.promise(() => s.kill("SIGTERM"))
        )
        const run = yield* Effect.promise(() =>
          openSse(`${server.url}/api/react`, { body: { query: "What are 2+3 and 6*7?" } })
        )
        assert.strictEqual(run.status, 200)
        const conversationId = run.headers.get("x-conversation-id")!
        assert.strictEqual(run.events[run.events.length - 1].event, "done")
        const requestsDuringRun = fake.requests.length

        const response = yield* Effect.promise(() =>
          fetch(`${server.url}/api/conversations/${conversationId}/runs/latest/cassette`)
        )
        assert.strictEqual(response.status, 200)
        assert.match(
          response.headers.get("content-disposition") ?? "",
          /^attachment; filename="cassette-run_.+\.json"$/
        )
        const cassette = yield* Cassette.decodeEffect(yield* Effect.promise(() => response.json()))
        assert.strictEqual(cassette.source, "server")
        assert.strictEqual(cassette.model.name, "fake-model")
        assert.strictEqual(cassette.model_calls.length, 3)
        assert.deepStrictEqual(cassette.tool_calls.map((t) => t.outcome), [
          { _tag: "Success", output: "2+3 = 5" },
          { _tag: "Success", output: "6*7 = 42" }
        ])
        // the cassette's events are what the client received
        const received = Cassette.normalizeEvents(run.events.map((e) => {
          const event = EventWire.fromWire(e.event, e.data as Record<string, unknown>)
          if (event === undefined) throw new Error(`not an event: ${e.event} ${JSON.stringify(e.data)}`)
          return event
        }))
        assert.deepStrictEqual(Cassette.normalizeEvents(cassette.events), received)

        // replayed in process: identical events, and the model is not asked again
        const replay = (agent: ReactAgent.Options = {}) =>
          Effect.provide(
            Effect.flatMap(ReactAgent.ReactAgent, (a) => Replay.run(a)),
            Replay.layerAgent(cassette, { agent: { synthesis: "always", ...agent } }).pipe(Layer.orDie)
          )
        const replayed = yield* replay()
        assert.deepStrictEqual(Cassette.normalizeEvents(replayed.events), received)
        assert.strictEqual(fake.requests.length, requestsDuringRun)

        // a prompt change: the replay stops at the first model call with the diff
        const diverged = yield* Effect.flip(replay({ systemPrompt: "Answer like a pirate." }))
        assert.strictEqual(diverged._tag, "ReplayDivergence")
        assert.strictEqual(diverged.step, "model call 1 of 3 (chat)")
        assert.strictEqual(diverged.path, "messages[0].content")
        assert.include(diverged.diff, "+ Answer like a pirate.")
        console.log(`divergence shown after a prompt change:\n${diverged.message}`)
      }).pipe(Effect.scoped),
    120_000
  )
})
