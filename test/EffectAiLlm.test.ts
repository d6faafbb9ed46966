/**
 * `EffectAiLlm` over the real `@effect/ai-anthropic` client and the fake
 * Anthropic Messages API: the shared `Llm` contract, and what is Anthropic's own
 * (wire shape, thinking, stream errors, cache usage).
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import * as ContextGuard from "../src/ContextGuard.js"
import * as Hooks from "../src/Hooks.js"
import * as Interrupts from "../src/Interrupts.js"
import { Llm } from "../src/Llm.js"
import * as Message from "../src/Message.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as Tool from "../src/Tool.js"
import * as Toolkit from "../src/Toolkit.js"
import { anthropicLlm } from "./utils/anthropicLlm.js"
import * as FakeAnthropic from "./utils/fakeAnthropicServer.js"
import type { ContractBackend, ContractReply } from "./utils/llmContract.js"
import { contract } from "./utils/llmContract.js"
import { attr, makeSpanRecorder } from "./utils/spans.js"

const toReply = (r: ContractReply): FakeAnthropic.FakeAnthropicReply => {
  switch (r._tag) {
    case "Text":
      return FakeAnthropic.text(r.text)
    case "Tools":
      return FakeAnthropic.toolUse(r.calls)
    case "Hang":
      return FakeAnthropic.hang
    case "Error": {
      const headers = r.retryAfterS !== undefined ? { "retry-after": String(r.retryAfterS) } : undefined
      switch (r.kind) {
        case "rate_limit":
          return FakeAnthropic.error(
            r.status,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            headers
          )
        case "overloaded":
          return FakeAnthropic.error(r.status, "overloaded_error", "Overloaded")
        case "overflow":
          return FakeAnthropic.error(
            r.status,
            "invalid_request_error",
            "prompt is too long: 213456 tokens > 200000 maximum"
          )
        case "auth":
          return FakeAnthropic.error(r.status, "authentication_error", "invalid x-api-key")
        case "bad":
          return FakeAnthropic.error(r.status, "invalid_request_error", "messages.0.content: Field required")
      }
    }
  }
}

export const anthropicBackend: ContractBackend = {
  name: "EffectAiLlm over @effect/ai-anthropic",
  start: (script) =>
    Effect.map(
      FakeAnthropic.scoped(typeof script === "function" ? (b, i) => toReply(script(b, i)) : script.map(toReply)),
      (server) => ({
        requests: () => server.requests.length,
        advertised: (i) =>
          (server.requests[i].body.tools ?? []).map((t: any) => ({ name: t.name, schema: t.input_schema })),
        streamed: (i) => server.requests[i].stream,
        llm: (o) =>
          anthropicLlm(server.url, {
            ...(o.maxRetries !== undefined ? { maxRetries: o.maxRetries } : {}),
            ...(o.timeout !== undefined ? { timeout: o.timeout } : {})
          })
      })
    )
}

contract(anthropicBackend)

const longSystem = `You are a careful assistant. ${"Follow the house rules exactly. ".repeat(200)}`
const weatherTool = {
  type: "function" as const,
  function: {
    name: "weather",
    description: "Current weather",
    parameters: { type: "object", properties: { city: { type: "string" } } }
  }
}

describe("EffectAiLlm over Anthropic: what is Anthropic's own", () => {
  it.scopedLive("cache_control on the system prompt and on the newest message; the second call reads the first's prefix", () =>
    Effect.gen(function*() {
      const server = yield* FakeAnthropic.scoped([
        FakeAnthropic.toolUse([{ name: "weather", input: { city: "Paris" } }]),
        FakeAnthropic.text("21C")
      ])
      const llm = yield* anthropicLlm(server.url)
      const first = [Message.system(longSystem), Message.user("Weather in Paris?")]
      const a = yield* llm.chat({ messages: first, tools: [weatherTool] })
      const call = a.toolCalls[0]
      const b = yield* llm.chat({
        messages: [
          ...first,
          Message.assistant(null, { toolCalls: [Message.toolCall(call.id, call.name, call.arguments)] }),
          Message.tool(call.id, "21C")
        ],
        tools: [weatherTool]
      })
      const body = server.requests[0].body
      assert.deepStrictEqual(body.system.map((s: any) => s.cache_control), [{ type: "ephemeral" }])
      assert.deepStrictEqual(body.messages.at(-1).content.at(-1).cache_control, { type: "ephemeral" })
      assert.strictEqual(a.usage.cached_input_tokens, 0)
      assert.isAbove(a.usage.cache_write_input_tokens ?? 0, 1024)
      assert.strictEqual(
        b.usage.cached_input_tokens,
        a.usage.cache_write_input_tokens,
        "the whole first prefix is read"
      )
      assert.strictEqual(
        b.usage.prompt_tokens,
        server.requests[1].usage!.input_tokens + b.usage.cached_input_tokens! + b.usage.cache_write_input_tokens!
      )
      // the tool result went back as a tool_result for the fresh id
      assert.strictEqual(server.requests[1].body.messages.at(-1).content[0].tool_use_id, call.id)
    }))

  it.scopedLive("the fake is honest: a changed prefix, a short prefix or an expired entry reads nothing", () =>
    Effect.gen(function*() {
      const server = yield* FakeAnthropic.scoped(() => FakeAnthropic.text("ok"))
      const llm = yield* anthropicLlm(server.url)
      const ask = (system: string, q: string) =>
        Effect.map(llm.chat({ messages: [Message.system(system), Message.user(q)] }), (r) => r.usage)
      yield* ask(longSystem, "one")
      assert.isAbove(
        (yield* ask(longSystem, "two")).cached_input_tokens ?? 0,
        1024,
        "same system, new question: the system is read"
      )
      assert.strictEqual(
        (yield* ask(longSystem.replace("careful", "careless"), "three")).cached_input_tokens,
        0,
        "one byte changed"
      )
      const short = yield* ask("Be brief.", "four")
      assert.strictEqual(short.cache_write_input_tokens, 0, "under 1,024 tokens nothing is written")
      assert.strictEqual((yield* ask("Be brief.", "four")).cached_input_tokens, 0)
      server.advance(5 * 60_000 + 1)
      assert.strictEqual((yield* ask(longSystem, "five")).cached_input_tokens, 0, "entries live 5 minutes")
    }))

  it.scopedLive("streamed thinking becomes Reasoning; an error event mid-stream fails the stream with Server", () =>
    Effect.gen(function*() {
      const server = yield* FakeAnthropic.scoped([
        {
          _tag: "Message",
          content: [{ type: "thinking", thinking: "Paris is in France." }, { type: "text", text: "Sunny." }]
        },
        {
          _tag: "Message",
          content: [{ type: "text", text: "partial" }, { type: "text", text: "never" }],
          streamError: "overloaded_error"
        }
      ])
      const llm = yield* anthropicLlm(server.url)
      const deltas = Chunk.toReadonlyArray(
        yield* Stream.runCollect(llm.streamChat({ messages: [Message.user("Weather?")] }))
      )
      assert.strictEqual(
        deltas.flatMap((d) => (d._tag === "Reasoning" ? [d.text] : [])).join(""),
        "Paris is in France."
      )
      assert.strictEqual(deltas.flatMap((d) => (d._tag === "Content" ? [d.text] : [])).join(""), "Sunny.")
      const error = yield* Effect.flip(Stream.runDrain(llm.streamChat({ messages: [Message.user("again")] })))
      assert.strictEqual(error.reason, "Server")
      assert.include(error.message, "overloaded_error")
    }))

  it.scopedLive("a later system message goes as user text (one system prompt); no breakpoints with cacheBreakpoints none", () =>
    Effect.gen(function*() {
      const server = yield* FakeAnthropic.scoped(() => FakeAnthropic.text("ok"))
      const llm = yield* anthropicLlm(server.url, { cacheBreakpoints: "none" })
      yield* llm.chat({
        messages: [
          Message.system("Rules."),
          Message.user("hi"),
          Message.assistant("hello"),
          Message.system("Summary so far: greeting."),
          Message.user("go on")
        ]
      })
      const body = server.requests[0].body
      assert.deepStrictEqual(body.system.map((s: any) => s.text), ["Rules."])
      assert.deepStrictEqual(body.messages.map((m: any) => m.role), ["user", "assistant", "user"])
      assert.deepStrictEqual(body.messages[2].content.map((c: any) => c.text), ["Summary so far: greeting.", "go on"])
      assert.notInclude(JSON.stringify(body), "cache_control")
    }))

  it.scopedLive("chat spans carry the cache reads and writes of each call; done.usage sums them", () =>
    Effect.gen(function*() {
      const server = yield* FakeAnthropic.scoped([
        FakeAnthropic.toolUse([{ name: "echo", input: { text: "hi" } }]),
        FakeAnthropic.text("hi")
      ])
      const llm = yield* anthropicLlm(server.url)
      const recorder = makeSpanRecorder()
      const echo = Tool.make({
        name: "echo",
        description: "Echo",
        parameters: Schema.Struct({ text: Schema.String }),
        handler: ({ text }) => Effect.succeed(text)
      })
      const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "echo hi" })).pipe(
        Effect.provide(
          ReactAgent.layer({ synthesis: "auto", systemPrompt: longSystem }).pipe(
            Layer.provideMerge(
              Layer.mergeAll(
                Layer.succeed(Llm, llm),
                Toolkit.layer([echo]),
                Hooks.layerNoop,
                ContextGuard.layer(),
                Interrupts.layerMemory
              )
            ),
            Layer.orDie
          )
        ),
        Effect.provide(recorder.layer)
      )
      const chats = recorder.spans().filter((s) => s.name.startsWith("chat "))
      assert.lengthOf(chats, 2)
      const reported = server.requests.map((r) => r.usage!)
      assert.deepStrictEqual(
        chats.map((s) => attr(s, "gen_ai.usage.cache_read.input_tokens")),
        reported.map((u) => u.cache_read_input_tokens)
      )
      assert.deepStrictEqual(
        chats.map((s) => attr(s, "gen_ai.usage.cache_creation.input_tokens")),
        reported.map((u) => u.cache_creation_input_tokens)
      )
      assert.isAbove(reported[1].cache_read_input_tokens, 1024, "the second call reads the first one's prefix")
      assert.strictEqual(
        result.usage.cached_input_tokens,
        reported[0].cache_read_input_tokens + reported[1].cache_read_input_tokens
      )
      assert.strictEqual(
        result.usage.cache_write_input_tokens,
        reported[0].cache_creation_input_tokens + reported[1].cache_creation_input_tokens
      )
      assert.strictEqual(result.usage.by_phase.loop?.cached_input_tokens, result.usage.cached_input_tokens)
    }))
})
