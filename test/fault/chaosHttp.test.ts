/**
 * Fault test one level down: the agent over the REAL `OpenAiLlm` (official openai
 * SDK, retries, timeouts) against a fake OpenAI-compatible HTTP server answering,
 * per request, from a seeded PRNG: 429 with Retry-After, 500, 503, a dropped
 * connection, a 200 with a non-JSON body, a hang (cut by the client timeout),
 * tool calls with invalid arguments or unknown tools, valid tool calls, final
 * answers; streams that carry an error event or garbage midway. Every run must end
 * with `Done` last, never die, and no request the provider received may hold an
 * unpaired tool call.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as Hooks from "../../src/Hooks.js"
import * as Interrupts from "../../src/Interrupts.js"
import type { ChatMessage } from "../../src/Message.js"
import * as OpenAiLlm from "../../src/OpenAiLlm.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import * as Tool from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"
import { prng, protocolViolations } from "../utils/chaosLlm.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"

const lookup = Tool.make({
  name: "lookup",
  description: "Looks up a record.",
  parameters: Schema.Struct({ index: Schema.Number }),
  handler: ({ index }) => Effect.succeed(`record ${index}`)
})

/** A seeded responder: what the fake provider does for each request. */
const chaosResponder = (seed: number): FakeOpenAi.FakeResponder => {
  const random = prng(seed)
  let id = 0
  return (body) => {
    const r = random()
    if (r < 0.08) return FakeOpenAi.error(429, "rate limited", { headers: { "retry-after-ms": "1" } })
    if (r < 0.14) return FakeOpenAi.error(500, "internal error")
    if (r < 0.18) return FakeOpenAi.error(503, "overloaded")
    if (r < 0.22) return FakeOpenAi.drop
    if (r < 0.26) return FakeOpenAi.raw(200, "<html>502 Bad Gateway</html>", "text/html")
    if (r < 0.28) return FakeOpenAi.hang
    if (body?.stream) {
      const s = random()
      if (s < 0.3) {
        return FakeOpenAi.sse([
          FakeOpenAi.chunk.role(),
          FakeOpenAi.chunk.content("The answer "),
          FakeOpenAi.chunk.error("stream broke")
        ])
      }
      if (s < 0.5) return FakeOpenAi.sse([FakeOpenAi.chunk.role(), FakeOpenAi.chunk.content("The "), "{not json"])
      return FakeOpenAi.sse([
        FakeOpenAi.chunk.role(),
        FakeOpenAi.chunk.content("The answer "),
        FakeOpenAi.chunk.content("is 42."),
        FakeOpenAi.chunk.finish("stop"),
        FakeOpenAi.chunk.usage(10, 3)
      ])
    }
    const k = random()
    if (k < 0.15) return FakeOpenAi.completion({ content: "Done: 42.", usage: { prompt: 10, completion: 3 } })
    if (k < 0.25) {
      return FakeOpenAi.completion({
        content: "",
        toolCalls: [{ id: `c${++id}`, name: "lookup", arguments: "{\"index\": " }]
      })
    }
    if (k < 0.32) {
      return FakeOpenAi.completion({
        content: "",
        toolCalls: [{ id: `c${++id}`, name: "no_such_tool", arguments: "{}" }]
      })
    }
    const n = 1 + Math.floor(random() * 3)
    return FakeOpenAi.completion({
      content: "",
      toolCalls: Array.from(
        { length: n },
        () => ({ id: `c${++id}`, name: "lookup", arguments: JSON.stringify({ index: id }) })
      )
    })
  }
}

describe("chaos over HTTP (real OpenAiLlm)", () => {
  it.scopedLive(
    "30 seeded runs all end with Done, no defect, no unpaired tool call reaches the provider",
    () =>
      Effect.gen(function*() {
        let requests = 0
        for (let seed = 1; seed <= 30; seed++) {
          const fake = yield* FakeOpenAi.scoped(chaosResponder(seed))
          const llm = OpenAiLlm.layer({
            baseURL: fake.url,
            apiKey: "test-key",
            model: "fake-model",
            maxRetries: 2,
            retryBaseDelay: "2 millis",
            // cuts the fake's hangs; 400 ms also cut ordinary replies on a loaded machine, whose
            // runs then ended early on exhausted retries (100 provider requests instead of 106)
            timeout: "1500 millis"
          })
          const layer = ReactAgent.layer({ maxIterations: 6 }).pipe(
            Layer.provide(
              Layer.mergeAll(
                llm,
                Toolkit.layer([lookup]),
                Hooks.layerNoop,
                ContextGuard.layer(),
                Interrupts.layerMemory
              )
            )
          )
          const exit = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) =>
            Stream.runCollect(agent.run({ query: `chaos ${seed}` }))).pipe(
              Effect.provide(layer),
              Effect.exit
            )
          if (Exit.isFailure(exit)) {
            assert.fail(`seed ${seed}: the run died: ${Cause.pretty(exit.cause)}`)
          }
          const events = Chunk.toReadonlyArray(exit.value)
          assert.strictEqual(events[events.length - 1]?._tag, "Done", `seed ${seed}: last event`)
          assert.strictEqual(
            events.filter((e) =>
              e._tag === "Done"
            ).length,
            1,
            `seed ${seed}: one Done`
          )
          for (const [i, req] of fake.requests.entries()) {
            const messages = (req.body?.messages ?? []) as ReadonlyArray<ChatMessage>
            for (const v of protocolViolations(messages)) assert.fail(`seed ${seed}, request ${i}: ${v}`)
          }
          requests += fake.requests.length
        }
        assert.isAbove(requests, 100, "the provider was exercised")
      }),
    120_000
  )
})
