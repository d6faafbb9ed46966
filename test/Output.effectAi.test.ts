/**
 * Typed answers over the `@effect/ai` providers, each through its real client
 * (`EffectAiLlm`) against a fake of its API that refuses what the API refuses
 * (a forced tool choice naming a tool the request does not define; for
 * Anthropic also roles out of order, a `tool_result` without its `tool_use`).
 * The answer is a forced tool — what `@effect/ai-anthropic`'s own structured
 * output sends — and its streamed arguments (`input_json_delta`,
 * `function_call_arguments.delta`) are the answer text and the partial objects;
 * a value that does not validate is asked again with the validation message.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Hooks from "../src/Hooks.js"
import { make as makeOpenAi } from "../src/internal/llmProviders/openai.js"
import * as Interrupts from "../src/Interrupts.js"
import { Llm, type LlmService } from "../src/Llm.js"
import * as ReactAgent from "../src/ReactAgent.js"
import type { RunEvent } from "../src/RunEvent.js"
import * as Toolkit from "../src/Toolkit.js"
import { anthropicLlm } from "./utils/anthropicLlm.js"
import * as FakeAnthropic from "./utils/fakeAnthropicServer.js"
import * as FakeResponses from "./utils/fakeOpenAiResponsesServer.js"

const Weather = Schema.Struct({
  city: Schema.String,
  celsius: Schema.Number.pipe(Schema.between(-90, 60)),
  sky: Schema.Literal("clear", "cloudy", "rain")
})

const isAnswerCall = (body: any) => body.tool_choice?.type === "tool"

/** A typed run over an LLM; its events. */
const typedRunOver = (llm: LlmService) =>
  Effect.gen(function*() {
    const layer = ReactAgent.layer({ synthesis: "always" }).pipe(
      Layer.provideMerge(
        Layer.mergeAll(
          Layer.succeed(Llm, llm),
          Toolkit.layer([]),
          Hooks.layerNoop,
          ContextGuard.layer(),
          Interrupts.layerMemory
        )
      ),
      Layer.orDie
    )
    const events: Array<RunEvent> = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) =>
      Effect.map(Stream.runCollect(agent.run({ query: "Weather in Paris?", output: Weather })), Chunk.toArray)).pipe(
        Effect.provide(layer)
      )
    return events
  })

/** A typed run over the real Anthropic client and the fake; its events and the fake's requests. */
const typedRun = (responder: FakeAnthropic.FakeAnthropicResponder, options?: FakeAnthropic.FakeAnthropicOptions) =>
  Effect.gen(function*() {
    const server = yield* FakeAnthropic.scoped(responder, options)
    const events = yield* typedRunOver(yield* anthropicLlm(server.url))
    return { events, requests: server.requests.map((r) => r.body), streamed: server.requests.map((r) => r.stream) }
  })

describe("typed answers over Anthropic (the real @effect/ai-anthropic client, the fake Messages API)", () => {
  it.scopedLive(
    "a forced tool: its streamed arguments are the answer text and the partial objects; Done.output the value",
    () =>
      Effect.gen(function*() {
        const value = { city: "Paris", celsius: 21, sky: "clear" }
        const { events, requests, streamed } = yield* typedRun((body) =>
          isAnswerCall(body)
            ? FakeAnthropic.toolUse([{ name: body.tool_choice.name, input: value }])
            : FakeAnthropic.text("It is 21 degrees and clear in Paris."), { pieceSize: 8, pieceDelayMs: 60 })
        const done = events.at(-1)!
        assert.strictEqual(done._tag, "Done", JSON.stringify(events.slice(-3)))
        assert.deepStrictEqual(done._tag === "Done" ? done.output : undefined, value)
        assert.deepStrictEqual(
          JSON.parse(done._tag === "Done" ? done.answer : ""),
          value,
          "the answer text is the value's JSON"
        )
        // the answer call: one tool, forced by name, its input_schema the schema's; streamed
        const answers = requests.filter(isAnswerCall)
        assert.lengthOf(answers, 1)
        assert.deepStrictEqual(answers[0].tool_choice, { type: "tool", name: "answer" })
        assert.deepStrictEqual(answers[0].tools.map((t: any) => t.name), ["answer"])
        assert.deepStrictEqual(answers[0].tools[0].input_schema.required, ["city", "celsius", "sky"])
        assert.deepStrictEqual(answers[0].tools[0].input_schema.properties.sky.enum, ["clear", "cloudy", "rain"])
        assert.isTrue(streamed[requests.indexOf(answers[0])])
        // partial objects grew from the input_json_delta pieces (one every 60 ms, at most one per 50 ms kept)
        const partials = events.flatMap((e) => (e._tag === "OutputPartial" ? [e.value as Record<string, unknown>] : []))
        assert.isAtLeast(partials.length, 3, JSON.stringify(partials))
        assert.isTrue(partials.some((p) => p.city === "Paris" && p.sky === undefined), "a value still being written")
        for (const p of partials) assert.isTrue(Object.keys(p).every((k) => k in value), JSON.stringify(p))
        const sizes = partials.map((p) => Object.keys(p).length)
        assert.deepStrictEqual(
          sizes,
          [...sizes].sort((a, b) => a - b),
          "each partial holds at least the keys of the one before"
        )
        assert.isAbove(sizes.at(-1)!, 1)
        const shown = events.flatMap((e) => (e._tag === "AnswerDelta" ? [e.content] : [])).join("")
        assert.deepStrictEqual(JSON.parse(shown), value, "the answer deltas are the tool's arguments as they came")
      }),
    60_000
  )

  it.scopedLive(
    "a value that does not validate: asked again with the validation message, in turns the API accepts",
    () =>
      Effect.gen(function*() {
        const { events, requests } = yield* typedRun((body) => {
          if (!isAnswerCall(body)) return FakeAnthropic.text("Hot and clear in Paris.")
          const celsius = body.messages.length > 1 ? 38 : 102
          return FakeAnthropic.toolUse([{ name: "answer", input: { city: "Paris", celsius, sky: "clear" } }])
        })
        const done = events.at(-1)!
        assert.deepStrictEqual(done._tag === "Done" ? done.output : undefined, {
          city: "Paris",
          celsius: 38,
          sky: "clear"
        })
        const answers = requests.filter(isAnswerCall)
        assert.lengthOf(answers, 2, "one retry")
        const retry = answers[1].messages
        // the bad value as the model's own turn, then the message naming what was wrong
        assert.include(JSON.stringify(retry.at(-2).content), "102")
        assert.strictEqual(retry.at(-2).role, "assistant")
        const ask = JSON.stringify(retry.at(-1).content)
        assert.include(ask, "celsius: Expected a number between -90 and 60, actual 102", ask)
        assert.deepStrictEqual(answers[1].tool_choice, answers[0].tool_choice, "still the forced tool")
        assert.includeMembers(
          events.map((e) => e._tag),
          ["AnswerReset"],
          "what the first attempt showed was taken back"
        )
      }),
    60_000
  )
})

describe("typed answers over OpenAI's Responses API (the real @effect/ai-openai client, LLM_PROVIDER=openai)", () => {
  it.scopedLive(
    "a forced function: its streamed arguments are the answer; a value that does not validate is asked again",
    () =>
      Effect.gen(function*() {
        const server = yield* FakeResponses.scoped((body) => {
          if (body.tool_choice?.type !== "function") return { _tag: "Text", text: "Hot and clear in Paris." }
          const again = JSON.stringify(body.input).includes("Expected a number between -90 and 60")
          return {
            _tag: "Calls",
            calls: [{ name: body.tool_choice.name, input: { city: "Paris", celsius: again ? 38 : 102, sky: "clear" } }]
          }
        })
        const llm = yield* makeOpenAi({
          model: "gpt-test",
          baseURL: server.url,
          apiKey: Redacted.make("sk-test"),
          abilities: {},
          retryBaseDelay: "5 millis",
          promptCache: "auto"
        })
        const events = yield* typedRunOver(llm)
        const done = events.at(-1)!
        assert.deepStrictEqual(done._tag === "Done" ? done.output : undefined, {
          city: "Paris",
          celsius: 38,
          sky: "clear"
        }, JSON.stringify(events.slice(-3)))
        const answers = server.requests.map((r) => r.body).filter((b) => b.tool_choice?.type === "function")
        assert.lengthOf(answers, 2, "the first value, then the one asked again")
        assert.deepStrictEqual(answers[0].tool_choice, { type: "function", name: "answer" })
        assert.deepStrictEqual(answers[0].tools.map((t: any) => t.name), ["answer"])
        assert.deepStrictEqual(answers[0].tools[0].parameters.required, ["city", "celsius", "sky"])
        assert.isTrue(answers.every((b) => b.stream === true), "streamed")
        assert.deepStrictEqual(
          answers[0].text?.format,
          { type: "text" },
          "no json_schema text format: the forced function is the native way here"
        )
        const shown = events.slice(events.map((e) => e._tag).lastIndexOf("AnswerReset") + 1)
          .flatMap((e) => (e._tag === "AnswerDelta" ? [e.content] : [])).join("")
        assert.deepStrictEqual(
          JSON.parse(shown),
          { city: "Paris", celsius: 38, sky: "clear" },
          "the arguments streamed as the answer"
        )
        assert.isTrue(events.some((e) => e._tag === "OutputPartial"))
      }),
    60_000
  )
})
