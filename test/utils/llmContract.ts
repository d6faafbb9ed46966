/**
 * The `Llm` contract, as one suite run against every LLM layer that talks to a
 * real wire protocol: `OpenAiLlm` over the fake OpenAI-compatible server, and
 * `EffectAiLlm` over the real `@effect/ai-anthropic` client and the fake
 * Anthropic Messages API. A backend turns abstract replies into its wire shape
 * and builds the layer under test over its fake; the assertions are the same.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as Hooks from "../../src/Hooks.js"
import * as Interrupts from "../../src/Interrupts.js"
import type { ChatDelta, ChatRequest, LlmService, ToolDefinition } from "../../src/Llm.js"
import * as Llm from "../../src/Llm.js"
import * as Message from "../../src/Message.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import type { RunEvent } from "../../src/RunEvent.js"
import * as Tool from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"

/** An abstract scripted reply. */
export type ContractReply =
  | { readonly _tag: "Text"; readonly text: string }
  | {
    readonly _tag: "Tools"
    readonly calls: ReadonlyArray<{ readonly name: string; readonly input: Record<string, unknown> }>
  }
  | {
    readonly _tag: "Error"
    readonly status: number
    readonly kind: "rate_limit" | "overloaded" | "overflow" | "auth" | "bad"
    readonly retryAfterS?: number | string
  }
  | { readonly _tag: "Hang" }

export interface ContractServer {
  readonly requests: () => number
  /** The tool definitions the request at `index` advertised, as `{name, schema}`. */
  readonly advertised: (index: number) => ReadonlyArray<{ readonly name: string; readonly schema: unknown }>
  /** Whether the request at `index` was streamed. */
  readonly streamed: (index: number) => boolean
  readonly llm: (
    options: { readonly maxRetries?: number; readonly timeout?: Duration.DurationInput }
  ) => Effect.Effect<LlmService, never, Scope.Scope>
}

export interface ContractBackend {
  readonly name: string
  readonly start: (
    script: ReadonlyArray<ContractReply> | ((body: any, index: number) => ContractReply)
  ) => Effect.Effect<ContractServer, never, Scope.Scope>
}

export const text = (t: string): ContractReply => ({ _tag: "Text", text: t })
export const tools = (
  ...calls: ReadonlyArray<{ readonly name: string; readonly input: Record<string, unknown> }>
): ContractReply => ({
  _tag: "Tools",
  calls
})
export const failWith = (
  status: number,
  kind: Extract<ContractReply, { _tag: "Error" }>["kind"],
  retryAfterS?: number | string
): ContractReply => ({
  _tag: "Error",
  status,
  kind,
  ...(retryAfterS !== undefined ? { retryAfterS } : {})
})

const weatherSchema = {
  type: "object",
  properties: { city: { type: "string", description: "City name" }, unit: { type: "string", enum: ["C", "F"] } },
  required: ["city"],
  additionalProperties: false
}
const toolDefs: ReadonlyArray<ToolDefinition> = [
  {
    type: "function",
    function: { name: "weather", description: "Current weather for a city", parameters: weatherSchema }
  },
  {
    type: "function",
    function: { name: "clock", description: "The time", parameters: { type: "object", properties: {} } }
  }
]

const request: ChatRequest = {
  messages: [Message.system("You are terse."), Message.user("Weather in Paris and Oslo?")],
  tools: toolDefs
}

const collect = (stream: Stream.Stream<ChatDelta, Llm.LlmError>) =>
  Effect.map(Stream.runCollect(stream), Chunk.toReadonlyArray)

/** Folds deltas into text, calls (by index) and the last usage and finish reason. */
const fold = (deltas: ReadonlyArray<ChatDelta>) => {
  let content = ""
  const calls: Array<{ id: string; name: string; args: string }> = []
  let usage: Llm.ChatResponse["usage"] | undefined
  let finish: string | null | undefined
  for (const d of deltas) {
    if (d._tag === "Content") content += d.text
    if (d._tag === "ToolCall") {
      const c = (calls[d.index] ??= { id: "", name: "", args: "" })
      if (d.id) c.id = d.id
      if (d.name) c.name = d.name
      if (d.arguments) c.args += d.arguments
    }
    if (d._tag === "Usage") usage = d.usage
    if (d._tag === "Finish") finish = d.reason
  }
  return { content, calls, usage, finish }
}

const agentRun = (llm: LlmService, tools: ReadonlyArray<Tool.Tool>) =>
  Effect.flatMap(ReactAgent.ReactAgent, (a) => Stream.runCollect(a.run({ query: "Weather in Paris and Oslo?" }))).pipe(
    Effect.map((c) => Chunk.toArray(c) as Array<RunEvent>),
    Effect.provide(
      ReactAgent.layer({ synthesis: "auto" }).pipe(
        Layer.provideMerge(Layer.mergeAll(
          Layer.succeed(Llm.Llm, llm),
          Toolkit.layer(tools),
          Hooks.layerNoop,
          ContextGuard.layer(),
          Interrupts.layerMemory
        )),
        Layer.orDie
      )
    )
  )

/** Registers the contract suite for `backend`. */
export const contract = (backend: ContractBackend): void => {
  describe(`Llm contract: ${backend.name}`, () => {
    it.scopedLive("chat: text, usage counted, tools advertised with our JSON Schemas in our order", () =>
      Effect.gen(function*() {
        const server = yield* backend.start([text("Sunny.")])
        const response = yield* (yield* server.llm({})).chat(request)
        assert.strictEqual(response.content, "Sunny.")
        assert.deepStrictEqual(response.toolCalls, [])
        assert.strictEqual(response.finishReason, "stop")
        assert.isAbove(response.usage.prompt_tokens, 0)
        assert.isAbove(response.usage.completion_tokens, 0)
        assert.strictEqual(response.usage.llm_calls, 1)
        assert.deepStrictEqual(server.advertised(0).map((t) => t.name), ["weather", "clock"])
        assert.deepInclude(server.advertised(0)[0].schema as object, {
          properties: weatherSchema.properties,
          required: ["city"]
        })
      }))

    it.scopedLive("chat: parallel tool calls come back with fresh ids and parsed arguments", () =>
      Effect.gen(function*() {
        const server = yield* backend.start([
          tools({ name: "weather", input: { city: "Paris" } }, { name: "weather", input: { city: "Oslo", unit: "C" } })
        ])
        const response = yield* (yield* server.llm({})).chat(request)
        assert.strictEqual(response.finishReason, "tool_calls")
        assert.deepStrictEqual(response.toolCalls.map((c) => c.name), ["weather", "weather"])
        assert.deepStrictEqual(response.toolCalls.map((c) => c.parsed), [
          Either.right({ city: "Paris" }),
          Either.right({ city: "Oslo", unit: "C" })
        ])
        assert.notStrictEqual(response.toolCalls[0].id, response.toolCalls[1].id)
      }))

    it.scopedLive("streamChat: content deltas, tool-call deltas by index, finish and usage", () =>
      Effect.gen(function*() {
        const server = yield* backend.start([
          text("It is sunny in Paris and rainy in Oslo."),
          tools({ name: "weather", input: { city: "Paris" } }, { name: "clock", input: {} })
        ])
        const llm = yield* server.llm({})
        const a = fold(yield* collect(llm.streamChat(request)))
        assert.strictEqual(a.content, "It is sunny in Paris and rainy in Oslo.")
        assert.strictEqual(a.finish, "stop")
        assert.isAbove(a.usage?.completion_tokens ?? 0, 0)
        assert.isTrue(server.streamed(0))
        const b = fold(yield* collect(llm.streamChat(request)))
        assert.deepStrictEqual(b.calls.map((c) => [c.name, JSON.parse(c.args === "" ? "{}" : c.args)]), [["weather", {
          city: "Paris"
        }], ["clock", {}]])
        assert.isTrue(b.calls.every((c) => c.id !== ""))
        assert.strictEqual(b.finish, "tool_calls")
      }))

    it.scopedLive("a 429 with retry-after is retried after at least that long", () =>
      Effect.gen(function*() {
        const server = yield* backend.start([failWith(429, "rate_limit", 1), text("ok")])
        const started = Date.now()
        const notices: Array<Llm.RetryNotice> = []
        const response = yield* (yield* server.llm({})).chat(request).pipe(
          Llm.withRetryObserver((n) => Effect.sync(() => notices.push(n)))
        )
        assert.strictEqual(response.content, "ok")
        assert.strictEqual(server.requests(), 2)
        assert.isAtLeast(Date.now() - started, 990)
        assert.deepStrictEqual(notices.map((n) => n.reason), ["RateLimited"])
        assert.isAtLeast(notices[0].delayMs, 1000)
      }))

    it.scopedLive("retry-after in seconds is capped at 60 s; as an HTTP date it is the time until then", () =>
      Effect.gen(function*() {
        const inHalfAMinute = new Date(Date.now() + 30_000).toUTCString()
        const server = yield* backend.start([
          failWith(429, "rate_limit", 120),
          failWith(429, "rate_limit", inHalfAMinute)
        ])
        const llm = yield* server.llm({ maxRetries: 0 })
        const capped = yield* Effect.flip(llm.chat(request))
        assert.strictEqual(capped.reason, "RateLimited")
        assert.strictEqual(capped.retryAfterMs, 60_000)
        const dated = yield* Effect.flip(llm.chat(request))
        // the date has whole seconds: up to one second early, a little late for the time the request took
        assert.isAtLeast(dated.retryAfterMs ?? 0, 28_000)
        assert.isAtMost(dated.retryAfterMs ?? 0, 30_000)
      }))

    it.scopedLive("server errors: retried maxRetries times, then Server", () =>
      Effect.gen(function*() {
        const server = yield* backend.start(() => failWith(529, "overloaded"))
        const error = yield* Effect.flip((yield* server.llm({ maxRetries: 2 })).chat(request))
        assert.strictEqual(error.reason, "Server")
        assert.strictEqual(server.requests(), 3)
      }))

    it.scopedLive("context overflow, auth and bad requests are typed and not retried", () =>
      Effect.gen(function*() {
        const server = yield* backend.start([failWith(400, "overflow"), failWith(401, "auth"), failWith(400, "bad")])
        const llm = yield* server.llm({})
        assert.strictEqual((yield* Effect.flip(llm.chat(request))).reason, "ContextOverflow")
        assert.strictEqual((yield* Effect.flip(llm.streamChat(request).pipe(Stream.runDrain))).reason, "Auth")
        assert.strictEqual((yield* Effect.flip(llm.chat(request))).reason, "BadRequest")
        assert.strictEqual(server.requests(), 3)
      }))

    it.scopedLive("a hung endpoint is a Timeout, retried", () =>
      Effect.gen(function*() {
        const server = yield* backend.start(() => ({ _tag: "Hang" }))
        const error = yield* Effect.flip((yield* server.llm({ maxRetries: 1, timeout: "300 millis" })).chat(request))
        assert.strictEqual(error.reason, "Timeout")
        assert.strictEqual(server.requests(), 2)
      }))

    it.scopedLive("the agent runs a tool-using conversation over it: parallel calls, tool results sent back, the answer", () =>
      Effect.gen(function*() {
        const seen: Array<string> = []
        const weather = Tool.make({
          name: "weather",
          description: "Current weather for a city",
          parameters: Schema.Struct({ city: Schema.String }),
          handler: ({ city }) => Effect.sync(() => (seen.push(city), `${city}: 21C`))
        })
        const server = yield* backend.start((_body, index) =>
          index === 0
            ? tools({ name: "weather", input: { city: "Paris" } }, { name: "weather", input: { city: "Oslo" } })
            : text("Paris 21C, Oslo 21C.")
        )
        const events = yield* agentRun(yield* server.llm({}), [weather])
        const done = events[events.length - 1]
        assert.strictEqual(done._tag, "Done")
        assert.strictEqual(done._tag === "Done" ? done.answer : "", "Paris 21C, Oslo 21C.")
        assert.deepStrictEqual(seen.sort(), ["Oslo", "Paris"])
        assert.strictEqual(server.requests(), 2, "one request per model turn (the fake rejects unanswered tool calls)")
      }))

    it.scopedLive("the agent recovers from a context overflow: the request is made again and the run answers", () =>
      Effect.gen(function*() {
        const server = yield* backend.start((
          _body,
          index
        ) => (index === 0 ? failWith(400, "overflow") : text("Recovered.")))
        const events = yield* agentRun(yield* server.llm({}), [])
        const done = events[events.length - 1]
        assert.strictEqual(done._tag === "Done" ? done.answer : "", "Recovered.")
        assert.isFalse(events.some((e) => e._tag === "RunFailed"))
        assert.strictEqual(server.requests(), 2, "one more request after the overflow, no blind retries")
        // the loop's overflow recovery asks again with its streamed call; any other error would
        // have been asked again without streaming (the stream-to-plain fallback)
        assert.isTrue(server.streamed(1), "recovered as an overflow (compaction, then the same streamed call)")
      }))
  })
}
