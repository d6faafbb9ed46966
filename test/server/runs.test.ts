import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Tool from "../../src/Tool.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer, tempDatabase } from "../utils/serverHarness.js"
import { getJson, labels, openSse, postJson, type SseEvent } from "../utils/sse.js"

const hasToolResult = (body: any) => (body?.messages ?? []).some((m: any) => m.role === "tool")
const synthesis = (text: string, chunkDelayMs = 0) =>
  FakeOpenAi.sse(
    [
      ...text.split(/(?<= )/).map((t) => FakeOpenAi.chunk.content(t)),
      FakeOpenAi.chunk.finish("stop"),
      FakeOpenAi.chunk.usage(10, 3)
    ],
    { chunkDelayMs }
  )

/** A tool that takes a while (so a test can act while it runs). */
const slowTool = (ms: number) =>
  Tool.make({
    name: "lookup",
    description: "Looks a topic up, slowly",
    parameters: Schema.Struct({ topic: Schema.String }),
    handler: ({ topic }) => Effect.as(Effect.sleep(ms), `Facts about ${topic}.`)
  })

/** Calls `lookup` once, then answers; synthesis streams `answer` word by word. */
const lookupRound = (answer: string, chunkDelayMs = 0): FakeOpenAi.FakeResponder => (body) => {
  if (body?.stream) return synthesis(answer, chunkDelayMs)
  return hasToolResult(body)
    ? FakeOpenAi.completion({ content: answer })
    : FakeOpenAi.completion({ toolCalls: [{ id: "call_a", name: "lookup", arguments: "{\"topic\":\"tides\"}" }] })
}

const last = (events: ReadonlyArray<SseEvent>) => events[events.length - 1]

describe("runs", () => {
  it.scopedLive(
    "inject mid-run: inject event, and the next LLM request carries [USER INTERRUPT]",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(lookupRound("Tides follow the moon."))
        const { url } = yield* startServer({ llmUrl: fake.url, tools: [slowTool(600)] })
        const injected: Array<any> = []
        const result = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, {
            body: { query: "Explain tides", conversation_id: "inj" },
            onEvent: async (e) => {
              if (e.event === "step" && e.data.type === "iteration" && e.data.status === "start") {
                injected.push(
                  (await postJson(`${url}/api/react/inject`, {
                    conversation_id: "inj",
                    content: "mention the sun too"
                  })).body
                )
                const second = await postJson(`${url}/api/react/inject`, {
                  conversation_id: "inj",
                  content: "forget this"
                })
                injected.push(second.body)
                injected.push(
                  (await postJson(`${url}/api/react/inject/recall`, { conversation_id: "inj", id: second.body.id }))
                    .body
                )
              }
            }
          })
        )
        assert.isString(injected[0].id)
        assert.deepStrictEqual(injected[2], { recalled: true })
        const injects = result.events.filter((e) => e.event === "inject")
        assert.deepStrictEqual(injects.map((e) => e.data.content), ["mention the sun too"])
        assert.strictEqual(injects[0].data.id, injected[0].id)
        assert.strictEqual(last(result.events).event, "done")
        const second = fake.requests[1].body
        const interrupts = second.messages.filter((m: any) =>
          m.role === "user" && String(m.content).startsWith("[USER INTERRUPT]")
        )
        assert.strictEqual(interrupts.length, 1)
        assert.include(interrupts[0].content, "mention the sun too")
        assert.notInclude(interrupts[0].content, "forget this")
      }),
    30_000
  )

  it.scopedLive(
    "a message injected during answer synthesis is reported in done.pending_injections",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped((body) =>
          body?.stream ? synthesis("a b c d e f", 100) : FakeOpenAi.completion({ content: "a b c d e f" })
        )
        const { url } = yield* startServer({ llmUrl: fake.url })
        let injected: any
        const result = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, {
            body: { query: "letters", conversation_id: "late" },
            onEvent: async (e) => {
              if (e.event === "answer" && e.data.status === "delta" && injected === undefined) {
                injected = await postJson(`${url}/api/react/inject`, { conversation_id: "late", content: "too late?" })
              }
            }
          })
        )
        assert.strictEqual(injected.status, 200)
        assert.deepStrictEqual(last(result.events).data.pending_injections, [{
          id: injected.body.id,
          content: "too late?"
        }])
        // the run is over: no more injections
        const after = yield* Effect.promise(() =>
          postJson(`${url}/api/react/inject`, { conversation_id: "late", content: "x" })
        )
        assert.strictEqual(after.status, 404)
      }),
    30_000
  )

  it.scopedLive(
    "resume after a disconnect with Last-Event-ID: no duplicated or missing frames",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(lookupRound("one two three four five six seven eight", 80))
        const { url } = yield* startServer({ llmUrl: fake.url, tools: [slowTool(300)] })
        const first = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, {
            body: { query: "count", conversation_id: "resume" },
            until: (_, all) => all.length === 3
          })
        )
        assert.isTrue(first.hungUp)
        assert.deepStrictEqual(first.events.map((e) => e.id), ["1", "2", "3"])
        const rest = yield* Effect.promise(() =>
          openSse(`${url}/api/react/events?conversation_id=resume`, { headers: { "last-event-id": "3" } })
        )
        assert.strictEqual(rest.status, 200)
        const ids = [...first.events, ...rest.events].map((e) => Number(e.id))
        assert.deepStrictEqual(ids, ids.map((_, i) => i + 1))
        assert.strictEqual(last(rest.events).event, "done")
        const deltas = rest.events.filter((e) => e.event === "answer" && e.data.status === "delta")
        assert.strictEqual(deltas.map((e) => e.data.content).join(""), "one two three four five six seven eight")

        // the run is over: a replay from ?after=N ends by itself, and a replay of everything is identical
        const tail = yield* Effect.promise(() =>
          openSse(`${url}/api/react/events?conversation_id=resume&after=${ids.length - 2}`)
        )
        assert.deepStrictEqual(tail.events.map((e) => Number(e.id)), [ids.length - 1, ids.length])
        const all = yield* Effect.promise(() => openSse(`${url}/api/react/events?conversation_id=resume`))
        assert.deepStrictEqual(all.events, [...first.events, ...rest.events])
        // only one run: no new LLM work
        assert.strictEqual(fake.requests.length, 3)
      }),
    30_000
  )

  it.scopedLive("two clients on one run see the same frames", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(lookupRound("shared answer here", 50))
      const { url } = yield* startServer({ llmUrl: fake.url, tools: [slowTool(300)] })
      const [a, b] = yield* Effect.promise(async () => {
        const a = openSse(`${url}/api/react`, { body: { query: "q", conversation_id: "two" } })
        await fake.waitForRequests(1)
        const b = openSse(`${url}/api/react/events?conversation_id=two`)
        return Promise.all([a, b])
      })
      assert.deepStrictEqual(b.events, a.events)
    }), 30_000)

  it.scopedLive("multi-turn memory survives a server restart (same SQLite file)", () =>
    Effect.gen(function*() {
      const databasePath = tempDatabase()
      const fake = yield* FakeOpenAi.scoped((body) =>
        body?.stream ? synthesis("The capital is Paris.") : FakeOpenAi.completion({ content: "Paris." })
      )
      const first = yield* startServer({ llmUrl: fake.url, databasePath })
      const turn1 = yield* Effect.promise(() =>
        openSse(`${first.url}/api/react`, { body: { query: "Capital of France?", conversation_id: "mem" } })
      )
      assert.strictEqual(last(turn1.events).data.answer, "The capital is Paris.")
      yield* first.stop
      const before = fake.requests.length

      const second = yield* startServer({ llmUrl: fake.url, databasePath })
      const turn2 = yield* Effect.promise(() =>
        openSse(`${second.url}/api/react`, { body: { query: "And its population?", conversation_id: "mem" } })
      )
      assert.strictEqual(last(turn2.events).event, "done")
      const request = fake.requests[before].body
      const texts = request.messages.map((m: any) => `${m.role}:${typeof m.content === "string" ? m.content : ""}`)
      assert.include(texts, "user:Capital of France?")
      assert.include(texts, "assistant:The capital is Paris.")
      assert.isTrue(texts.indexOf("user:Capital of France?") < texts.lastIndexOf("user:And its population?"))

      const stored = yield* Effect.promise(() => getJson(`${second.url}/api/conversations/mem`))
      assert.strictEqual(stored.body.turns, 2)
      assert.strictEqual(stored.body.title, "Capital of France?")
      assert.deepStrictEqual(stored.body.messages.filter((m: any) => m.role === "user").map((m: any) => m.content), [
        "Capital of France?",
        "And its population?"
      ])
    }), 30_000)

  it.scopedLive(
    "RUN_DETACH_GRACE_MS=0: a disconnect cancels the run and aborts the upstream LLM request",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped([FakeOpenAi.hang])
        const { url } = yield* startServer({ llmUrl: fake.url, settings: { detachGraceMs: 0 } })
        const result = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, { body: { query: "hang", conversation_id: "gone" }, until: () => true })
        )
        assert.deepStrictEqual(labels(result.events), ["step:thinking:start"])
        assert.isTrue(yield* Effect.promise(() => fake.waitForClientAbort(3000)))
        // the run ended with a stored, cancelled turn
        const replay = yield* Effect.promise(() => openSse(`${url}/api/react/events?conversation_id=gone`))
        assert.strictEqual(last(replay.events).event, "done")
        assert.isTrue(last(replay.events).data.cancelled)
        const stored = yield* Effect.promise(() => getJson(`${url}/api/conversations/gone`))
        assert.strictEqual(stored.body.turn_details[0].status, "cancelled")
      }),
    30_000
  )

  it.scopedLive("no client back within RUN_DETACH_GRACE_MS: the run is cancelled then", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped([FakeOpenAi.hang])
      const { url } = yield* startServer({ llmUrl: fake.url, settings: { detachGraceMs: 400 } })
      const started = Date.now()
      yield* Effect.promise(() =>
        openSse(`${url}/api/react`, { body: { query: "hang", conversation_id: "late-cancel" }, until: () => true })
      )
      // still running during the grace period
      yield* Effect.sleep(150)
      assert.isFalse(fake.requests[0].abortedByClient)
      assert.isTrue(yield* Effect.promise(() => fake.waitForClientAbort(3000)))
      assert.isAtLeast(Date.now() - started, 400)
      const replay = yield* Effect.promise(() => openSse(`${url}/api/react/events?conversation_id=late-cancel`))
      assert.isTrue(last(replay.events).data.cancelled)
    }), 30_000)

  it.scopedLive("a disconnect within the grace period leaves the run alive", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(lookupRound("still here", 20))
      const { url } = yield* startServer({
        llmUrl: fake.url,
        tools: [slowTool(500)],
        settings: { detachGraceMs: 5000 }
      })
      yield* Effect.promise(() =>
        openSse(`${url}/api/react`, { body: { query: "q", conversation_id: "grace" }, until: () => true })
      )
      const rest = yield* Effect.promise(() => openSse(`${url}/api/react/events?conversation_id=grace&after=1`))
      assert.strictEqual(last(rest.events).data.answer, "still here")
      assert.isUndefined(last(rest.events).data.cancelled)
      assert.isFalse(fake.requests.some((r) => r.abortedByClient))
    }), 30_000)

  it.scopedLive(
    "cancel: aborts the LLM request, ends with done, stores a tool message for every tool call",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped((body, index) =>
          index === 0
            ? FakeOpenAi.completion({ toolCalls: [{ id: "call_x", name: "lookup", arguments: "{\"topic\":\"x\"}" }] })
            : FakeOpenAi.hang
        )
        const { url } = yield* startServer({ llmUrl: fake.url, tools: [slowTool(10_000)] })
        let cancelResponse: any
        const result = yield* Effect.promise(() =>
          openSse(`${url}/api/react`, {
            body: { query: "cancel me", conversation_id: "stop" },
            onEvent: async (e) => {
              if (e.event === "step" && e.data.type === "iteration" && e.data.status === "start") {
                cancelResponse = await postJson(`${url}/api/react/cancel`, { conversation_id: "stop" })
              }
            }
          })
        )
        assert.strictEqual(cancelResponse.status, 200)
        assert.deepStrictEqual(labels(result.events), [
          "step:thinking:start",
          "step:thinking:done",
          "step:iteration:start",
          "done"
        ])
        const done = last(result.events).data
        assert.isTrue(done.cancelled)
        assert.strictEqual(done.conversation_id, "stop")
        // the agent's own Done: its usage survives the cancel
        assert.strictEqual(done.usage.llm_calls, 1)
        const again = yield* Effect.promise(() => postJson(`${url}/api/react/cancel`, { conversation_id: "stop" }))
        assert.strictEqual(again.status, 404)
        const stored = yield* Effect.promise(() => getJson(`${url}/api/conversations/stop`))
        const messages = stored.body.messages
        const call = messages.find((m: any) => m.role === "assistant" && m.tool_calls)
        assert.strictEqual(call.tool_calls[0].id, "call_x")
        const toolMessage = messages.find((m: any) => m.role === "tool")
        assert.strictEqual(toolMessage.tool_call_id, "call_x")
        assert.match(toolMessage.content, /interrupted|cancelled/i)
        assert.strictEqual(stored.body.turn_details[0].status, "cancelled")
      }),
    30_000
  )

  it.scopedLive("cancel during the LLM call aborts the upstream request", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped([FakeOpenAi.hang])
      const { url } = yield* startServer({ llmUrl: fake.url })
      const result = yield* Effect.promise(() =>
        openSse(`${url}/api/react`, {
          body: { query: "hang", conversation_id: "abort" },
          onEvent: async (e) => {
            if (e.event === "step") await postJson(`${url}/api/react/cancel`, { conversation_id: "abort" })
          }
        })
      )
      assert.deepStrictEqual(labels(result.events), ["step:thinking:start", "done"])
      assert.isTrue(yield* Effect.promise(() => fake.waitForClientAbort(3000)))
    }), 30_000)

  it.scopedLive("a failing model ends the stream with error then done", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped(() => FakeOpenAi.error(401, "bad key", { type: "authentication_error" }))
      const { url } = yield* startServer({ llmUrl: fake.url })
      const result = yield* Effect.promise(() => openSse(`${url}/api/react`, { body: { query: "hi" } }))
      const channels = result.events.map((e) => e.event)
      assert.strictEqual(channels[channels.length - 1], "done")
      assert.strictEqual(channels[channels.length - 2], "error")
      assert.isFalse(result.events[channels.length - 2].data.retryable)
    }), 30_000)

  it.scopedLive(
    "shutdown ends open streams promptly with a retryable error frame; the run is left to resume",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped([FakeOpenAi.hang])
        const server = yield* startServer({ llmUrl: fake.url })
        let endedAt = 0
        const pending = openSse(`${server.url}/api/react`, { body: { query: "hang" } }).then((r) => {
          endedAt = Date.now()
          return r
        })
        yield* Effect.promise(() => fake.waitForRequests(1))
        const started = Date.now()
        yield* server.stop
        const result = yield* Effect.promise(() => pending)
        assert.isBelow(endedAt - started, 2000)
        assert.isBelow(Date.now() - started, 3000)
        // runs are durable: no `done` (the run is not over), a final frame without an id to resume from elsewhere
        const final = last(result.events)
        assert.strictEqual(final.event, "error")
        assert.isUndefined(final.id)
        assert.isTrue(final.data.retryable)
        assert.isTrue(yield* Effect.promise(() => fake.waitForClientAbort(3000)))
      }),
    30_000
  )
})

describe("replay of a finished run", () => {
  it.scopedLive("a client that has everything gets 204 (EventSource stops reconnecting)", () =>
    Effect.gen(function*() {
      const fake = yield* FakeOpenAi.scoped((body) =>
        body?.stream ? synthesis("done here") : FakeOpenAi.completion({ content: "done here" })
      )
      const { url } = yield* startServer({ llmUrl: fake.url })
      const run = yield* Effect.promise(() =>
        openSse(`${url}/api/react`, { body: { query: "q", conversation_id: "fin" } })
      )
      const lastId = last(run.events).id!
      const response = yield* Effect.promise(() =>
        fetch(`${url}/api/react/events?conversation_id=fin`, { headers: { "last-event-id": lastId } })
      )
      assert.strictEqual(response.status, 204)
      const replay = yield* Effect.promise(() =>
        openSse(`${url}/api/react/events?conversation_id=fin`, {
          headers: { "last-event-id": String(Number(lastId) - 1) }
        })
      )
      assert.deepStrictEqual(replay.events, [last(run.events)])
    }), 30_000)
})
