/**
 * Typed answers through the real server (`POST /api/react` `output_schema`)
 * over the `openai`-SDK model layer and a fake OpenAI endpoint that refuses
 * what OpenAI refuses in a `response_format`: `done.output`, the partial
 * objects live (no `id:`, never stored), a clear 400 for a schema the server
 * cannot honour (nothing stored, no model called), `output_invalid`.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { refusing } from "../utils/openAiFormats.js"
import { startServer } from "../utils/serverHarness.js"
import { openSse, postJson } from "../utils/sse.js"

const WEATHER = {
  type: "object",
  properties: {
    city: { type: "string" },
    celsius: { type: "number", minimum: -90, maximum: 60 },
    sky: { enum: ["clear", "cloudy", "rain"] }
  },
  required: ["city", "celsius", "sky"],
  additionalProperties: false
}

const isAnswer = (body: any) => body.stream === true

/** The loop answers in prose; the answer call streams `json` in pieces. */
const model = (json: (n: number) => string) => {
  let answers = 0
  return (body: any) => {
    if (!isAnswer(body)) return FakeOpenAi.completion({ content: "It is 21 degrees and clear in Paris." })
    const text = json(++answers)
    const pieces = text.match(/.{1,12}/gs) ?? [text]
    return FakeOpenAi.sse([
      FakeOpenAi.chunk.role(),
      ...pieces.map(FakeOpenAi.chunk.content),
      FakeOpenAi.chunk.finish("stop"),
      FakeOpenAi.chunk.usage(20, 10)
    ], {
      chunkDelayMs: 30
    })
  }
}

describe("POST /api/react with output_schema", () => {
  it.scopedLive(
    "done.output is the value; the answer is its JSON; partial objects live only",
    () =>
      Effect.gen(function*() {
        const refusals: Array<string> = []
        const fake = yield* FakeOpenAi.scoped(
          refusing(model(() => `{"city": "Paris", "celsius": 21, "sky": "clear"}`), refusals)
        )
        const server = yield* startServer({ llmUrl: fake.url, tools: [] })
        const run = yield* Effect.promise(() =>
          openSse(`${server.url}/api/react`, {
            body: { query: "Weather in Paris?", conversation_id: "o1", output_schema: WEATHER }
          })
        )
        const done = run.events.at(-1)!
        assert.strictEqual(done.event, "done")
        assert.deepStrictEqual(done.data.output, { city: "Paris", celsius: 21, sky: "clear" })
        assert.strictEqual(done.data.answer, `{"city": "Paris", "celsius": 21, "sky": "clear"}`)
        const partials = run.events.filter((e) => e.event === "answer" && e.data.type === "output_partial")
        assert.isAbove(partials.length, 1)
        assert.isTrue(partials.every((p) => p.id === undefined))
        // each a deep-partial of the value (throttled: the last one need not be complete; done.output is)
        for (const p of partials) {
          assert.isTrue("Paris".startsWith(p.data.value.city ?? ""), JSON.stringify(p.data.value))
          assert.includeMembers(["city", "celsius", "sky"], Object.keys(p.data.value))
        }
        // what the model was asked: the client's schema, strict (it meets strict mode's rules), and OpenAI took it
        const asked = fake.requests.filter((r) => r.body.stream === true)
        assert.strictEqual(asked.length, 1)
        assert.deepStrictEqual(asked[0].body.response_format, {
          type: "json_schema",
          json_schema: { name: "answer", schema: WEATHER, strict: true }
        })
        assert.deepStrictEqual(refusals, [])
        // stored: done.output, no partial
        const replay = yield* Effect.promise(() => openSse(`${server.url}/api/react/events?conversation_id=o1`))
        assert.deepStrictEqual(replay.events.at(-1)?.data.output, { city: "Paris", celsius: 21, sky: "clear" })
        assert.isFalse(replay.events.some((e) => e.data.type === "output_partial"))
      }),
    60_000
  )

  it.scopedLive(
    "an optional property: sent non-strict, which OpenAI takes (strict would be refused)",
    () =>
      Effect.gen(function*() {
        const refusals: Array<string> = []
        const fake = yield* FakeOpenAi.scoped(refusing(model(() => `{"city": "Oslo"}`), refusals))
        const server = yield* startServer({ llmUrl: fake.url, tools: [] })
        const schema = {
          type: "object",
          properties: { city: { type: "string", minLength: 2 }, celsius: { type: "number" } },
          required: ["city"]
        }
        const run = yield* Effect.promise(() =>
          openSse(`${server.url}/api/react`, { body: { query: "Oslo?", output_schema: schema } })
        )
        assert.deepStrictEqual(run.events.at(-1)?.data.output, { city: "Oslo" })
        const format = fake.requests.find((r) => r.body.stream === true)?.body.response_format
        assert.strictEqual(format.json_schema.strict, false)
        assert.deepStrictEqual(refusals, [])
      }),
    60_000
  )

  it.scopedLive(
    "a value that never validates: asked again once with the message, then error output_invalid and done",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped(model((n) => `{"city": "Paris", "celsius": ${100 + n}, "sky": "clear"}`))
        const server = yield* startServer({ llmUrl: fake.url, tools: [] })
        const run = yield* Effect.promise(() =>
          openSse(`${server.url}/api/react`, { body: { query: "Weather?", output_schema: WEATHER } })
        )
        const answers = fake.requests.filter((r) => r.body.stream === true)
        assert.strictEqual(answers.length, 2)
        const retry = answers[1].body.messages
        assert.strictEqual(retry.at(-2).content, `{"city": "Paris", "celsius": 101, "sky": "clear"}`)
        assert.include(retry.at(-1).content, "less than or equal to 60")
        const error = run.events.find((e) => e.event === "error")
        assert.strictEqual(error?.data.code, "output_invalid")
        assert.include(error?.data.message, "102")
        assert.strictEqual(run.events.at(-1)?.event, "done")
        assert.isUndefined(run.events.at(-1)?.data.output)
      }),
    60_000
  )

  it.scopedLive(
    "a schema the server cannot honour: 400 naming the keyword; nothing stored, no model called",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped([])
        const server = yield* startServer({ llmUrl: fake.url, tools: [] })
        const bad = { type: "object", properties: { a: { type: "string", not: { const: "x" } } } }
        const response = yield* Effect.promise(() =>
          postJson(`${server.url}/api/react`, { query: "q", conversation_id: "bad1", output_schema: bad })
        )
        assert.strictEqual(response.status, 400)
        const text = JSON.stringify(response.body)
        assert.include(text, "output_schema")
        assert.include(text, "keyword \\\"not\\\" at /properties/a/not")
        const notObject = yield* Effect.promise(() =>
          postJson(`${server.url}/api/react`, { query: "q", output_schema: { type: "array" } })
        )
        assert.strictEqual(notObject.status, 400)
        assert.include(JSON.stringify(notObject.body), "the schema's root needs")
        const big = {
          type: "object",
          properties: Object.fromEntries(
            Array.from({ length: 3000 }, (_, i) => [`field_number_${i}`, { type: "string" }])
          )
        }
        const tooBig = yield* Effect.promise(() =>
          postJson(`${server.url}/api/react`, { query: "q", output_schema: big })
        )
        assert.strictEqual(tooBig.status, 400)
        assert.include(JSON.stringify(tooBig.body), "at most 65536 are taken")
        assert.strictEqual(fake.requests.length, 0)
        const conversation = yield* Effect.promise(() => fetch(`${server.url}/api/conversations/bad1`))
        assert.strictEqual(conversation.status, 404)
      }),
    60_000
  )
})
