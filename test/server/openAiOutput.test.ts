/**
 * `response_format` on `/v1/chat/completions` through the official `openai`
 * SDK: `chat.completions.parse` with a Zod schema (`openai/helpers/zod`) gets a
 * parsed object, non-streamed and streamed; `json_object` gets a JSON object;
 * an answer that never validates is an OpenAI-style error with code
 * `output_invalid`. The real server over a scripted model that records what
 * the answer call was asked.
 */
import { assert, describe, it } from "@effect/vitest"
import {
  parseJsonEventStream,
  readUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
  uiMessageChunkSchema
} from "ai"
import * as Effect from "effect/Effect"
import OpenAI from "openai"
import { zodResponseFormat } from "openai/helpers/zod"
import { z } from "zod"
import type { ChatRequest } from "../../src/Llm.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import { startInteropServer } from "../utils/interopServer.js"

const Weather = z.object({
  city: z.string(),
  celsius: z.number().min(-90).max(60),
  sky: z.enum(["clear", "cloudy", "rain"]),
  note: z.string().nullable()
})

const client = (url: string) => new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 })

/** The loop answers in prose; the answer call (streamed, a response format) answers `json(n)`. */
const model = (json: (n: number) => string) => {
  let answers = 0
  const asked: Array<ChatRequest> = []
  const llm = ScriptedLlm.makeUnsafe((request, _i, method) => {
    if (method === "chat") return ScriptedLlm.text("Paris: 21 degrees, clear.")
    asked.push(request)
    return ScriptedLlm.text(json(++answers), { chunks: json(answers).match(/.{1,10}/gs) ?? [] })
  })
  return { llm, asked }
}

const weather = `{"city": "Paris", "celsius": 21, "sky": "clear", "note": null}`

describe("response_format on /v1/chat/completions", () => {
  it.scopedLive(
    "chat.completions.parse with a Zod schema gets the parsed object; the model was asked for the client's schema",
    () =>
      Effect.gen(function*() {
        const { asked, llm } = model(() => weather)
        const url = yield* startInteropServer({ llm: llm.layer, tools: [] })
        const completion = yield* Effect.promise(() =>
          client(url).chat.completions.parse({
            model: "react-agent",
            messages: [{ role: "user", content: "Weather in Paris?" }],
            response_format: zodResponseFormat(Weather, "weather")
          })
        )
        const parsed = completion.choices[0].message.parsed
        const celsius: number | undefined = parsed?.celsius
        assert.strictEqual(celsius, 21)
        assert.deepStrictEqual(parsed, { city: "Paris", celsius: 21, sky: "clear", note: null })
        assert.strictEqual(completion.choices[0].message.content, weather)
        assert.strictEqual(asked.length, 1)
        const format = asked[0].responseFormat as { type: string; json_schema: { strict: boolean; schema: any } }
        assert.strictEqual(format.type, "json_schema")
        assert.isTrue(format.json_schema.strict)
        assert.deepStrictEqual(format.json_schema.schema.required, ["city", "celsius", "sky", "note"])
      }),
    30_000
  )

  it.scopedLive("streamed: the SDK's stream helper assembles and parses the content", () =>
    Effect.gen(function*() {
      const { llm } = model(() => weather)
      const url = yield* startInteropServer({ llm: llm.layer, tools: [] })
      const final = yield* Effect.promise(async () => {
        const stream = client(url).chat.completions.stream({
          model: "react-agent",
          messages: [{ role: "user", content: "Weather in Paris?" }],
          response_format: zodResponseFormat(Weather, "weather")
        })
        return stream.finalChatCompletion()
      })
      assert.deepStrictEqual(final.choices[0].message.parsed, { city: "Paris", celsius: 21, sky: "clear", note: null })
    }), 30_000)

  it.scopedLive(
    "streamed, a value asked again: the client gets the valid value's JSON only, once",
    () =>
      Effect.gen(function*() {
        const { llm } = model((
          n
        ) => (n === 1 ? `{"city": "Paris", "celsius": 99, "sky": "clear", "note": null}` : weather))
        const url = yield* startInteropServer({ llm: llm.layer, tools: [] })
        let content = ""
        yield* Effect.promise(async () => {
          const stream = await client(url).chat.completions.create({
            model: "react-agent",
            messages: [{ role: "user", content: "Weather in Paris?" }],
            response_format: zodResponseFormat(Weather, "weather"),
            stream: true
          })
          for await (const chunk of stream) content += chunk.choices[0]?.delta.content ?? ""
        })
        assert.strictEqual(content, weather)
      }),
    30_000
  )

  it.scopedLive("json_object: the content is a JSON object", () =>
    Effect.gen(function*() {
      const { asked, llm } = model(() => `{"answer": 42}`)
      const url = yield* startInteropServer({ llm: llm.layer, tools: [] })
      const completion = yield* Effect.promise(() =>
        client(url).chat.completions.create({
          model: "react-agent",
          messages: [{ role: "user", content: "The answer, as JSON?" }],
          response_format: { type: "json_object" }
        })
      )
      assert.deepStrictEqual(JSON.parse(completion.choices[0].message.content ?? ""), { answer: 42 })
      assert.strictEqual(asked.length, 1)
    }), 30_000)

  it.scopedLive(
    "an answer that never validates: an OpenAI-style error, code output_invalid",
    () =>
      Effect.gen(function*() {
        const { asked, llm } = model(() => `{"city": "Paris", "celsius": 99, "sky": "clear", "note": null}`)
        const url = yield* startInteropServer({ llm: llm.layer, tools: [] })
        const error = yield* Effect.promise(() =>
          client(url).chat.completions.parse({
            model: "react-agent",
            messages: [{ role: "user", content: "Weather in Paris?" }],
            response_format: zodResponseFormat(Weather, "weather")
          }).then(() => undefined, (e: unknown) => e)
        )
        assert.instanceOf(error, OpenAI.APIError)
        const api = error as InstanceType<typeof OpenAI.APIError>
        assert.strictEqual(api.status, 500)
        assert.strictEqual(api.code, "output_invalid")
        assert.include(api.message, "celsius")
        assert.strictEqual(asked.length, 2)
      }),
    30_000
  )

  it.scopedLive(
    "a schema the server cannot honour: 400 naming the keyword, in OpenAI's error shape",
    () =>
      Effect.gen(function*() {
        const { asked, llm } = model(() => weather)
        const url = yield* startInteropServer({ llm: llm.layer, tools: [] })
        const error = yield* Effect.promise(() =>
          client(url).chat.completions.create({
            model: "react-agent",
            messages: [{ role: "user", content: "q" }],
            response_format: {
              type: "json_schema",
              json_schema: { name: "x", schema: { type: "object", properties: { a: { allOf: [] } } } }
            }
          }).then(() => undefined, (e: unknown) => e)
        )
        const api = error as InstanceType<typeof OpenAI.APIError>
        assert.strictEqual(api.status, 400)
        assert.include(api.message, "allOf")
        assert.strictEqual(asked.length, 0)
      }),
    30_000
  )

  it.scopedLive(
    "POST /api/chat with output_schema: the AI SDK gets the partial value as a data-output part, then the decoded one",
    () =>
      Effect.gen(function*() {
        const { llm } = model(() => weather)
        const url = yield* startInteropServer({ llm: llm.layer, tools: [] })
        const schema = z.toJSONSchema(Weather)
        const response = yield* Effect.promise(() =>
          fetch(`${url}/api/chat`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({
              id: "chat-typed",
              messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "Weather in Paris?" }] }],
              output_schema: schema
            })
          })
        )
        const seen: Array<UIMessageChunk> = []
        const chunks = parseJsonEventStream({ stream: response.body!, schema: uiMessageChunkSchema }).pipeThrough(
          new TransformStream<{ success: boolean; value?: UIMessageChunk; error?: unknown }, UIMessageChunk>({
            transform(result, controller) {
              if (!result.success) throw result.error
              seen.push(structuredClone(result.value!))
              controller.enqueue(result.value!)
            }
          })
        )
        let message: UIMessage | undefined
        yield* Effect.promise(async () => {
          for await (const m of readUIMessageStream({ stream: chunks, terminateOnError: true })) {
            message = structuredClone(m)
          }
        })
        const outputs = seen.filter((c) => c.type === "data-output") as Array<
          { id: string; data: Record<string, unknown> }
        >
        assert.isAbove(outputs.length, 1, "partial values, then the final one")
        assert.isTrue(outputs.every((c) => c.id === "output"))
        assert.deepStrictEqual(outputs.at(-1)?.data, { city: "Paris", celsius: 21, sky: "clear", note: null })
        // one part in the assembled message, holding the decoded value
        const parts = message!.parts.filter((p) => p.type === "data-output") as Array<{ data: unknown }>
        assert.deepStrictEqual(parts.map((p) => p.data), [{ city: "Paris", celsius: 21, sky: "clear", note: null }])
        const text = message!.parts.find((p) => p.type === "text") as { text: string }
        assert.strictEqual(text.text, weather)
      }),
    30_000
  )
})
