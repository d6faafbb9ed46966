import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FastCheck from "effect/FastCheck"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { ChatDelta, ChatRequest, LlmService } from "../src/Llm.js"
import { Llm, LlmError } from "../src/Llm.js"
import * as Message from "../src/Message.js"
import * as OpenAiLlm from "../src/OpenAiLlm.js"
import * as FakeOpenAi from "./utils/fakeOpenAiServer.js"

const request: ChatRequest = { messages: [Message.system("You are terse."), Message.user("Hi")] }

const llmFor = (server: FakeOpenAi.FakeOpenAiServer, options?: Partial<OpenAiLlm.OpenAiLlmOptions>): LlmService =>
  OpenAiLlm.makeUnsafe({
    model: "fake-model",
    baseURL: server.url,
    apiKey: "sk-test",
    retryBaseDelay: "5 millis",
    ...options
  })

const failure = <A>(effect: Effect.Effect<A, LlmError>) =>
  Effect.flatMap(
    Effect.either(effect),
    (e) => Either.isLeft(e) ? Effect.succeed(e.left) : Effect.dieMessage("expected an LlmError")
  )

const collect = (stream: Stream.Stream<ChatDelta, LlmError>) =>
  Effect.map(Stream.runCollect(stream), Chunk.toReadonlyArray)

const textOf = (deltas: ReadonlyArray<ChatDelta>, tag: "Content" | "Reasoning") =>
  deltas.flatMap((d) => (d._tag === tag ? [d.text] : [])).join("")

describe("OpenAiLlm.chat", () => {
  it.live("returns content and usage (with cached tokens); no tools means no tools/tool_choice", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.completion({ content: "Hello!", usage: { prompt: 12, completion: 3, cached: 8 } })
      ])
      const llm = llmFor(server, { temperature: 0.3 })
      const response = yield* llm.chat({ ...request, maxTokens: 100 })
      assert.strictEqual(response.content, "Hello!")
      assert.strictEqual(response.finishReason, "stop")
      assert.deepStrictEqual(response.toolCalls, [])
      assert.isUndefined(response.reasoning)
      assert.deepStrictEqual(response.usage, {
        prompt_tokens: 12,
        completion_tokens: 3,
        total_tokens: 15,
        cached_tokens: 8,
        cached_input_tokens: 8,
        llm_calls: 1
      })
      const body = server.requests[0].body
      assert.strictEqual(server.requests[0].headers.authorization, "Bearer sk-test")
      assert.strictEqual(body.model, "fake-model")
      assert.deepStrictEqual(body.messages, [
        { role: "system", content: "You are terse." },
        { role: "user", content: "Hi" }
      ])
      assert.notProperty(body, "tools")
      assert.notProperty(body, "tool_choice")
      assert.notProperty(body, "stream_options")
      assert.strictEqual(body.temperature, 0.3)
      assert.strictEqual(body.max_tokens, 100)
    })))

  it.live("sends tools with tool_choice auto and response_format; parses tool calls, invalid JSON is a Left", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.completion({
          content: null,
          toolCalls: [
            { id: "call_a", name: "calculator", arguments: "{\"expression\":\"2+2\"}" },
            { id: "call_b", name: "search", arguments: "{\"q\": \"unterminated" },
            { id: "call_c", name: "now", arguments: "" }
          ]
        })
      ])
      const llm = llmFor(server)
      const tools = [{
        type: "function" as const,
        function: { name: "calculator", description: "math", parameters: { type: "object", properties: {} } }
      }]
      const response = yield* llm.chat({
        messages: [
          Message.user("2+2?"),
          {
            ...Message.assistant(null, { toolCalls: [Message.toolCall("x", "calculator", "{}")], reasoning: "hmm" }),
            pinned: true
          },
          Message.tool("x", "4")
        ],
        tools,
        responseFormat: { type: "json_object" },
        temperature: 0
      })
      assert.strictEqual(response.content, "")
      assert.strictEqual(response.finishReason, "tool_calls")
      assert.deepStrictEqual(response.toolCalls.map((c) => [c.id, c.name, c.arguments]), [
        ["call_a", "calculator", "{\"expression\":\"2+2\"}"],
        ["call_b", "search", "{\"q\": \"unterminated"],
        ["call_c", "now", ""]
      ])
      assert.deepStrictEqual(response.toolCalls[0].parsed, Either.right({ expression: "2+2" }))
      assert.isTrue(Either.isLeft(response.toolCalls[1].parsed))
      assert.deepStrictEqual(response.toolCalls[2].parsed, Either.right({}))
      const body = server.requests[0].body
      assert.deepStrictEqual(body.tools, tools)
      assert.strictEqual(body.tool_choice, "auto")
      assert.deepStrictEqual(body.response_format, { type: "json_object" })
      assert.strictEqual(body.temperature, 0)
      // pinned and reasoning_content never reach the provider
      assert.deepStrictEqual(body.messages[1], {
        role: "assistant",
        content: null,
        tool_calls: [{ id: "x", type: "function", function: { name: "calculator", arguments: "{}" } }]
      })
      assert.deepStrictEqual(body.messages[2], { role: "tool", tool_call_id: "x", content: "4" })
    })))

  it.live("omits tool_choice and json response_format when the model lacks those abilities", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.completion({ content: "ok" })])
      const llm = llmFor(server, { abilities: { toolChoice: false, jsonMode: false } })
      yield* llm.chat({
        ...request,
        tools: [{ type: "function", function: { name: "t", description: "", parameters: { type: "object" } } }],
        toolChoice: { type: "function", function: { name: "t" } },
        responseFormat: { type: "json_object" }
      })
      const body = server.requests[0].body
      assert.lengthOf(body.tools, 1)
      assert.notProperty(body, "tool_choice")
      assert.notProperty(body, "response_format")
    })))

  it.live("reasoning_content and <think> blocks become reasoning", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.completion({ content: "42", reasoningContent: "Let me think." }),
        FakeOpenAi.completion({ content: "<think>\nstep one\n</think>\n\nThe answer is 42." })
      ])
      const llm = llmFor(server)
      const a = yield* llm.chat(request)
      assert.strictEqual(a.content, "42")
      assert.strictEqual(a.reasoning, "Let me think.")
      const b = yield* llm.chat(request)
      assert.strictEqual(b.content, "The answer is 42.")
      assert.strictEqual(b.reasoning, "step one")
      // missing usage still counts the call
      assert.strictEqual(b.usage.llm_calls, 1)
    })))

  it.live("retries a 429 and succeeds (the server sees both attempts)", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.error(429, "Rate limit reached", { type: "rate_limit_error" }),
        FakeOpenAi.completion({ content: "after retry" })
      ])
      const response = yield* llmFor(server).chat(request)
      assert.strictEqual(response.content, "after retry")
      assert.strictEqual(server.requests.length, 2)
    })))

  it.live("a 429 with Retry-After waits at least that long", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.error(429, "Rate limit reached", { headers: { "retry-after-ms": "400" } }),
        FakeOpenAi.completion({ content: "waited" })
      ])
      assert.strictEqual((yield* llmFor(server).chat(request)).content, "waited")
      assert.isAtLeast(server.requests[1].receivedAt - server.requests[0].receivedAt, 380)
    })))

  it.live("500 on every attempt: LLM_MAX_RETRIES + 1 attempts, then LlmError Server", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped(() =>
        FakeOpenAi.error(500, "upstream exploded", { type: "server_error" })
      )
      const error = yield* failure(llmFor(server, { maxRetries: 2 }).chat(request))
      assert.instanceOf(error, LlmError)
      assert.strictEqual(error.reason, "Server")
      assert.strictEqual(error.status, 500)
      assert.include(error.message, "upstream exploded")
      assert.isTrue(error.retryable)
      assert.strictEqual(server.requests.length, 3)
    })))

  it.live("400 context overflow is ContextOverflow and is not retried", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped(() =>
        FakeOpenAi.error(
          400,
          "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.",
          {
            code: "context_length_exceeded"
          }
        )
      )
      const error = yield* failure(llmFor(server).chat(request))
      assert.strictEqual(error.reason, "ContextOverflow")
      assert.strictEqual(error.status, 400)
      assert.strictEqual(server.requests.length, 1)
      // the message alone is enough (providers without the code)
      const server2 = yield* FakeOpenAi.scoped([FakeOpenAi.error(400, "Input is too long for requested model")])
      assert.strictEqual((yield* failure(llmFor(server2).chat(request))).reason, "ContextOverflow")
    })))

  it.live("401/403 are Auth, other 4xx BadRequest, none retried", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.error(401, "Incorrect API key provided", { type: "invalid_request_error", code: "invalid_api_key" }),
        FakeOpenAi.error(403, "Forbidden"),
        FakeOpenAi.error(404, "The model `nope` does not exist")
      ])
      const llm = llmFor(server)
      const a = yield* failure(llm.chat(request))
      assert.strictEqual(a.reason, "Auth")
      assert.strictEqual(a.status, 401)
      assert.isFalse(a.retryable)
      assert.strictEqual((yield* failure(llm.chat(request))).reason, "Auth")
      const c = yield* failure(llm.chat(request))
      assert.strictEqual(c.reason, "BadRequest")
      assert.include(c.message, "does not exist")
      assert.strictEqual(server.requests.length, 3)
    })))

  it.live("malformed replies are Decode errors; a 200 with an error body is typed by its content", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.raw(200, "this is not json"),
        FakeOpenAi.raw(200, JSON.stringify({ id: "x", object: "chat.completion", choices: [] })),
        FakeOpenAi.raw(
          200,
          JSON.stringify({
            id: "x",
            choices: [{ index: 0, message: { role: "assistant", tool_calls: [{ id: "a" }] } }]
          })
        ),
        FakeOpenAi.raw(200, JSON.stringify({ error: { message: "maximum context length exceeded", code: null } }))
      ])
      const llm = llmFor(server, { maxRetries: 0 })
      assert.strictEqual((yield* failure(llm.chat(request))).reason, "Decode")
      assert.strictEqual((yield* failure(llm.chat(request))).reason, "Decode")
      const noName = yield* failure(llm.chat(request))
      assert.strictEqual(noName.reason, "Decode")
      assert.include(noName.message, "no function name")
      assert.strictEqual((yield* failure(llm.chat(request))).reason, "ContextOverflow")
    })))

  it.live("content given as an array of parts is joined", () =>
    Effect.scoped(Effect.gen(function*() {
      const body = FakeOpenAi.completionBody({ content: "" }) as any
      body.choices[0].message.content = [{ type: "text", text: "Hello " }, { type: "text", text: "there" }]
      const server = yield* FakeOpenAi.scoped([{ _tag: "Json", status: 200, body }])
      assert.strictEqual((yield* llmFor(server).chat(request)).content, "Hello there")
    })))

  it.live("a hung server is a Timeout; a dropped connection is Connection (both retried)", () =>
    Effect.scoped(Effect.gen(function*() {
      const hung = yield* FakeOpenAi.scoped(() => FakeOpenAi.hang)
      const t = yield* failure(llmFor(hung, { timeout: "150 millis", maxRetries: 1 }).chat(request))
      assert.strictEqual(t.reason, "Timeout")
      assert.strictEqual(hung.requests.length, 2)
      const dropping = yield* FakeOpenAi.scoped([FakeOpenAi.drop, FakeOpenAi.completion({ content: "back" })])
      assert.strictEqual((yield* llmFor(dropping).chat(request)).content, "back")
      const dropped = yield* FakeOpenAi.scoped(() => FakeOpenAi.drop)
      const c = yield* failure(llmFor(dropped, { maxRetries: 0 }).chat(request))
      assert.strictEqual(c.reason, "Connection")
      assert.include(c.message, dropped.url) // says which endpoint could not be reached
    })))

  it.live("interrupting chat aborts the HTTP request", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped(() => FakeOpenAi.hang)
      const fiber = yield* Effect.fork(llmFor(server).chat(request))
      assert.isTrue(yield* Effect.promise(() => server.waitForRequests(1)))
      yield* Fiber.interrupt(fiber)
      assert.isTrue(yield* Effect.promise(() => server.waitForClientAbort()))
      assert.isTrue(server.requests[0].abortedByClient)
    })))
})

describe("OpenAiLlm.streamChat", () => {
  it.live("streams content, reasoning, tool-call deltas split across chunks, usage and finish", () =>
    Effect.scoped(Effect.gen(function*() {
      const { chunk } = FakeOpenAi
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.sse([
          chunk.role(),
          chunk.reasoning("Thinking "),
          chunk.reasoning("hard."),
          chunk.content("Let me "),
          chunk.content("check."),
          chunk.toolCall(0, { id: "call_1", name: "calculator", arguments: "" }),
          chunk.toolCall(0, { arguments: "{\"expre" }),
          chunk.toolCall(0, { arguments: "ssion\": \"6*7\"}" }),
          chunk.toolCall(1, { id: "call_2", name: "now" }),
          chunk.toolCall(1, { arguments: "{}" }),
          chunk.finish("tool_calls"),
          chunk.usage(30, 9, 4)
        ], { chunkDelayMs: 1 })
      ])
      const deltas = yield* collect(llmFor(server).streamChat(request))
      assert.strictEqual(textOf(deltas, "Reasoning"), "Thinking hard.")
      assert.strictEqual(textOf(deltas, "Content"), "Let me check.")
      const calls = deltas.filter((d): d is Extract<ChatDelta, { _tag: "ToolCall" }> => d._tag === "ToolCall")
      assert.deepStrictEqual(calls[0], { _tag: "ToolCall", index: 0, id: "call_1", name: "calculator" })
      assert.deepStrictEqual(
        calls.filter((c) => c.index === 0).map((c) => c.arguments ?? "").join(""),
        "{\"expression\": \"6*7\"}"
      )
      assert.deepStrictEqual(calls.filter((c) => c.index === 1).map((c) => [c.id, c.name, c.arguments]), [
        ["call_2", "now", undefined],
        [undefined, undefined, "{}"]
      ])
      assert.deepStrictEqual(deltas.slice(-2), [
        { _tag: "Finish", reason: "tool_calls" },
        {
          _tag: "Usage",
          usage: {
            prompt_tokens: 30,
            completion_tokens: 9,
            total_tokens: 39,
            cached_tokens: 4,
            cached_input_tokens: 4,
            llm_calls: 1
          }
        }
      ])
      const body = server.requests[0].body
      assert.strictEqual(body.stream, true)
      assert.deepStrictEqual(body.stream_options, { include_usage: true })
    })))

  it.live("usage repeated on every chunk (cumulative, vLLM style) is reported once, the last value", () =>
    Effect.scoped(Effect.gen(function*() {
      const { chunk } = FakeOpenAi
      const withUsage = (c: object, prompt: number, completion: number) => ({
        ...c,
        usage: chunk.usage(prompt, completion).usage
      })
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.sse([
          withUsage(chunk.content("a"), 10, 1),
          withUsage(chunk.content("b"), 10, 2),
          withUsage(chunk.finish("stop"), 10, 3)
        ])
      ])
      const deltas = yield* collect(llmFor(server).streamChat(request))
      const usages = deltas.filter((d) => d._tag === "Usage")
      assert.deepStrictEqual(usages, [
        { _tag: "Usage", usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13, llm_calls: 1 } }
      ])
      assert.strictEqual(textOf(deltas, "Content"), "ab")
    })))

  it.live("routes <think> blocks split across chunks to Reasoning", () =>
    Effect.scoped(Effect.gen(function*() {
      const { chunk } = FakeOpenAi
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.sse([
          chunk.content("<thi"),
          chunk.content("nk>plan: a"),
          chunk.content("dd</th"),
          chunk.content("ink>\n\nThe sum"),
          chunk.content(" is < 5 and <b>"),
          chunk.content("bold</b> <"),
          chunk.finish("stop")
        ])
      ])
      const deltas = yield* collect(llmFor(server).streamChat(request))
      assert.strictEqual(textOf(deltas, "Reasoning"), "plan: add")
      assert.strictEqual(textOf(deltas, "Content"), "The sum is < 5 and <b>bold</b> <")
    })))

  it.live("any chunking of a <think> reply gives the same reasoning and content (property)", () =>
    Effect.scoped(Effect.gen(function*() {
      const bodies: Array<FakeOpenAi.FakeReply> = []
      const server = yield* FakeOpenAi.scoped((_, i) => bodies[i])
      const llm = llmFor(server)
      const safe = FastCheck.string({ minLength: 1, maxLength: 30 }).filter((s) =>
        !s.includes("<") && s.trim() === s && s !== ""
      )
      yield* Effect.promise(() =>
        FastCheck.assert(
          FastCheck.asyncProperty(
            safe,
            safe,
            FastCheck.array(FastCheck.nat(60), { maxLength: 8 }),
            async (reasoning, content, cuts) => {
              const full = `<think>${reasoning}</think>\n${content}`
              const points = [...new Set(cuts.map((c) => c % (full.length + 1)))].sort((a, b) => a - b)
              const pieces: Array<string> = []
              let at = 0
              for (const p of [...points, full.length]) {
                if (p > at) pieces.push(full.slice(at, p))
                at = Math.max(at, p)
              }
              bodies.push(FakeOpenAi.sse([...pieces.map(FakeOpenAi.chunk.content), FakeOpenAi.chunk.finish("stop")]))
              const deltas = await Effect.runPromise(collect(llm.streamChat(request)))
              return textOf(deltas, "Reasoning") === reasoning && textOf(deltas, "Content") === content
            }
          ),
          { numRuns: 40 }
        )
      )
    })))

  it.live("retries before the first chunk (429 then stream)", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.error(429, "slow down"),
        FakeOpenAi.error(503, "overloaded"),
        FakeOpenAi.sseText("ok, all good", { usage: { prompt: 7, completion: 3 } })
      ])
      const deltas = yield* collect(llmFor(server).streamChat(request))
      assert.strictEqual(textOf(deltas, "Content"), "ok, all good")
      assert.isAbove(deltas.filter((d) => d._tag === "Content").length, 1)
      assert.deepInclude(deltas[deltas.length - 1], { _tag: "Usage" })
      assert.strictEqual(server.requests.length, 3)
    })))

  it.live("a failure after the first chunk is not retried", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.sse([FakeOpenAi.chunk.content("par"), FakeOpenAi.chunk.error("upstream died")]),
        FakeOpenAi.sse([FakeOpenAi.chunk.content("should not be used")])
      ])
      const seen: Array<ChatDelta> = []
      const error = yield* failure(
        Stream.runForEach(llmFor(server).streamChat(request), (d) => Effect.sync(() => seen.push(d)))
      )
      assert.strictEqual(error.reason, "Server")
      assert.include(error.message, "upstream died")
      assert.strictEqual(textOf(seen, "Content"), "par")
      assert.strictEqual(server.requests.length, 1)
    })))

  it.live("stream errors before any chunk are typed (401 Auth, 400 overflow) and not retried", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.error(401, "bad key"),
        FakeOpenAi.error(400, "prompt is too long: 300000 tokens > 200000 maximum")
      ])
      const llm = llmFor(server)
      assert.strictEqual((yield* failure(Stream.runDrain(llm.streamChat(request)))).reason, "Auth")
      assert.strictEqual((yield* failure(Stream.runDrain(llm.streamChat(request)))).reason, "ContextOverflow")
      assert.strictEqual(server.requests.length, 2)
    })))

  it.live("without the streaming ability, streamChat makes one non-streaming call", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.completion({ content: "<think>hm</think>whole answer", usage: { prompt: 5, completion: 2 } })
      ])
      const deltas = yield* collect(llmFor(server, { abilities: { streaming: false } }).streamChat(request))
      assert.deepStrictEqual(deltas, [
        { _tag: "Reasoning", text: "hm" },
        { _tag: "Content", text: "whole answer" },
        { _tag: "Finish", reason: "stop" },
        { _tag: "Usage", usage: { prompt_tokens: 5, completion_tokens: 2, total_tokens: 7, llm_calls: 1 } }
      ])
      assert.notStrictEqual(server.requests[0].body.stream, true)
    })))

  it.live("interrupting mid-stream closes the connection", () =>
    Effect.scoped(Effect.gen(function*() {
      const words = Array.from({ length: 200 }, (_, i) => FakeOpenAi.chunk.content(`w${i} `))
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.sse(words, { chunkDelayMs: 20 })])
      const got: Array<ChatDelta> = []
      const fiber = yield* Effect.fork(
        Stream.runForEach(llmFor(server).streamChat(request), (d) => Effect.sync(() => got.push(d)))
      )
      while (got.length < 3) yield* Effect.sleep("10 millis")
      yield* Fiber.interrupt(fiber)
      assert.isTrue(yield* Effect.promise(() => server.waitForClientAbort()))
      assert.isFalse(server.requests[0].finished)
      assert.isBelow(got.length, 200)
      // the socket itself is closed, not left dangling in a pool
      assert.isTrue(yield* Effect.promise(() => server.waitForClosedSockets(1)))
      assert.strictEqual(server.openSockets, 0)
    })))

  it.live("taking a prefix of the stream also releases the request", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.sse([FakeOpenAi.chunk.content("a"), FakeOpenAi.chunk.content("b")], { done: false })
      ])
      const deltas = yield* collect(Stream.take(llmFor(server).streamChat(request), 2))
      assert.strictEqual(textOf(deltas, "Content"), "ab")
      assert.isTrue(yield* Effect.promise(() => server.waitForClientAbort()))
    })))

  it.live("a stalled stream fails with Timeout", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.sse([FakeOpenAi.chunk.content("a")], { done: false })])
      const error = yield* failure(Stream.runDrain(llmFor(server, { timeout: "200 millis" }).streamChat(request)))
      assert.strictEqual(error.reason, "Timeout")
      assert.isTrue(yield* Effect.promise(() => server.waitForClientAbort()))
    })))
})

describe("OpenAiLlm.layerConfig", () => {
  const withEnv = (env: Record<string, string>) =>
    Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))

  it.live("reads LLM_* variables and talks to the configured endpoint", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([
        FakeOpenAi.error(500, "once"),
        FakeOpenAi.completion({ content: "configured" })
      ])
      const llm = yield* Effect.provide(
        Llm,
        OpenAiLlm.layerConfig().pipe(Layer.provide(withEnv({
          LLM_BASE_URL: server.url,
          LLM_API_KEY: "sk-secret",
          LLM_MODEL: "my-model",
          LLM_TEMPERATURE: "0.2",
          LLM_TOOL_CHOICE_ENABLED: "false",
          LLM_STREAMING_ENABLED: "no",
          LLM_CONTEXT_SIZE: "32000",
          LLM_MAX_OUTPUT_TOKENS: "4000",
          LLM_MAX_RETRIES: "1",
          LLM_RETRY_BASE_DELAY_MS: "1"
        })))
      )
      assert.strictEqual(llm.model, "my-model")
      assert.strictEqual(llm.contextSize, 32000)
      assert.strictEqual(llm.maxOutputTokens, 4000)
      assert.isFalse(llm.abilities.toolChoice)
      assert.isFalse(llm.abilities.streaming)
      assert.isTrue(llm.abilities.toolCall)
      assert.isTrue(llm.abilities.jsonMode)
      assert.strictEqual((yield* llm.chat(request)).content, "configured")
      assert.strictEqual(server.requests.length, 2)
      assert.strictEqual(server.requests[1].headers.authorization, "Bearer sk-secret")
      assert.strictEqual(server.requests[1].body.model, "my-model")
      assert.strictEqual(server.requests[1].body.temperature, 0.2)
    })))

  it.live("options given as Configs win over LLM_* (the others are still read); a given model needs no LLM_MODEL", () =>
    Effect.scoped(Effect.gen(function*() {
      const mine = yield* FakeOpenAi.scoped([FakeOpenAi.completion({ content: "mine" })])
      const envs = yield* FakeOpenAi.scoped(() => FakeOpenAi.completion({ content: "the environment's" }))
      const llm = yield* Effect.provide(
        Llm,
        OpenAiLlm.layerConfig({
          model: Config.string("MY_MODEL"),
          baseURL: Config.string("MY_URL"),
          apiKey: Config.redacted("MY_KEY"),
          temperature: Config.succeed(0.7),
          abilities: { streaming: Config.boolean("MY_STREAMING") }
        }).pipe(Layer.provide(withEnv({
          MY_MODEL: "my-model",
          MY_URL: mine.url,
          MY_KEY: "sk-mine",
          MY_STREAMING: "false",
          LLM_BASE_URL: envs.url,
          LLM_API_KEY: "sk-env",
          LLM_TEMPERATURE: "0.1",
          LLM_CONTEXT_SIZE: "9000",
          LLM_TOOL_CHOICE_ENABLED: "false"
        })))
      )
      assert.strictEqual(llm.model, "my-model")
      assert.isFalse(llm.abilities.streaming, "given")
      assert.isFalse(llm.abilities.toolChoice, "read beside the given ability")
      assert.strictEqual(llm.contextSize, 9000, "read")
      assert.strictEqual((yield* llm.chat(request)).content, "mine")
      assert.strictEqual(envs.requests.length, 0)
      assert.strictEqual(mine.requests[0].body.model, "my-model")
      assert.strictEqual(mine.requests[0].body.temperature, 0.7)
      assert.strictEqual(mine.requests[0].headers.authorization, "Bearer sk-mine")
      // one Config of them all
      const whole = yield* Effect.provide(
        Llm,
        OpenAiLlm.layerConfig(Config.succeed({ model: "whole", maxOutputTokens: 512 })).pipe(
          Layer.provide(withEnv({ LLM_MODEL: "env" }))
        )
      )
      assert.deepStrictEqual([whole.model, whole.maxOutputTokens], ["whole", 512])
      // a given Config that cannot be read is a ConfigError naming its variable
      const exit = yield* Effect.exit(Effect.provide(
        Llm,
        OpenAiLlm.layerConfig({ model: Config.string("MY_MODEL") }).pipe(Layer.provide(withEnv({ LLM_MODEL: "env" })))
      ))
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) assert.include(String(exit.cause), "MY_MODEL")
    })))

  it.live("defaults: context 128000, max output 64000, all abilities on", () =>
    Effect.gen(function*() {
      const llm = yield* Effect.provide(Llm, OpenAiLlm.layerConfig().pipe(Layer.provide(withEnv({ LLM_MODEL: "m" }))))
      assert.strictEqual(llm.contextSize, 128000)
      assert.strictEqual(llm.maxOutputTokens, 64000)
      assert.isTrue(llm.abilities.toolCall && llm.abilities.toolChoice && llm.abilities.jsonMode)
    }))

  it.live("bad values fail with a ConfigError naming the variable", () =>
    Effect.gen(function*() {
      const cases: Array<[Record<string, string>, string]> = [
        [{ LLM_MODEL: "m", LLM_TEMPERATURE: "hot" }, "LLM_TEMPERATURE"],
        [{ LLM_MODEL: "m", LLM_TEMPERATURE: "7" }, "LLM_TEMPERATURE"],
        [{ LLM_MODEL: "m", LLM_MAX_RETRIES: "-1" }, "LLM_MAX_RETRIES"],
        [{ LLM_MODEL: "m", LLM_CONTEXT_SIZE: "big" }, "LLM_CONTEXT_SIZE"],
        [{ LLM_MODEL: "m", LLM_TOOL_CALL_ENABLED: "maybe" }, "LLM_TOOL_CALL_ENABLED"],
        [{ LLM_MODEL: "m", LLM_BASE_URL: "localhost:8080" }, "LLM_BASE_URL"],
        [{ LLM_MODEL: "m", LLM_TIMEOUT_MS: "0" }, "LLM_TIMEOUT_MS"],
        [{ LLM_BASE_URL: "http://localhost:1/v1" }, "LLM_MODEL"]
      ]
      for (const [env, name] of cases) {
        const exit = yield* Effect.exit(Effect.provide(Llm, OpenAiLlm.layerConfig().pipe(Layer.provide(withEnv(env)))))
        assert.isTrue(Exit.isFailure(exit), name)
        if (Exit.isFailure(exit)) assert.include(String(exit.cause), name)
      }
    }))

  it.live("LLM_MODEL unset with LLM_BASE_URL set: the endpoint's first model is used", () =>
    Effect.scoped(Effect.gen(function*() {
      const server = yield* FakeOpenAi.scoped([FakeOpenAi.completion({ content: "hi" })], {
        models: ["local-model", "other"]
      })
      const llm = yield* Effect.provide(
        Llm,
        OpenAiLlm.layerConfig().pipe(Layer.provide(withEnv({ LLM_BASE_URL: server.url })))
      )
      assert.strictEqual(llm.model, "local-model")
      yield* llm.chat(request)
      assert.strictEqual(server.requests[0].body.model, "local-model")
      // an endpoint without a model list: a ConfigError naming LLM_MODEL and the URL
      const bare = yield* FakeOpenAi.scoped([])
      const exit = yield* Effect.exit(
        Effect.provide(Llm, OpenAiLlm.layerConfig().pipe(Layer.provide(withEnv({ LLM_BASE_URL: bare.url }))))
      )
      assert.isTrue(Exit.isFailure(exit))
      if (Exit.isFailure(exit)) {
        assert.include(String(exit.cause), "LLM_MODEL")
        assert.include(String(exit.cause), bare.url)
      }
    })))

  it.live("the API key is redacted in the options", () =>
    Effect.gen(function*() {
      const options = yield* Effect.provide(
        OpenAiLlm.config,
        withEnv({ LLM_MODEL: "m", LLM_API_KEY: "sk-very-secret" })
      )
      assert.notInclude(JSON.stringify(options), "sk-very-secret")
      assert.notInclude(String(options.apiKey), "sk-very-secret")
    }))
})
