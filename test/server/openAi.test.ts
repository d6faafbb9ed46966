import { assert, describe, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import OpenAI from "openai"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as Hooks from "../../src/Hooks.js"
import * as Interrupts from "../../src/Interrupts.js"
import type { ChatRequest } from "../../src/Llm.js"
import { textOf } from "../../src/Message.js"
import * as OpenAiLlm from "../../src/OpenAiLlm.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import * as Tool from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"
import * as Usage from "../../src/Usage.js"
import { addTool } from "../utils/agentLayers.js"
import { dagResponder, planReply, stepText } from "../utils/dagLayers.js"
import { startInteropServer } from "../utils/interopServer.js"

const u = (prompt: number, completion: number) => ({ usage: { prompt, completion } })
const hasToolResult = (request: ChatRequest) => request.messages.some((m) => m.role === "tool")

/**
 * The inner agent's model: `add` 2+3, then answer; synthesis streams `answer`.
 * One run = loop 10+1 and 3+2, synthesis 5+4: prompt 18, completion 7, 3 calls.
 */
const innerModel = (answer = "The sum is 5.") =>
  ScriptedLlm.makeUnsafe((request, _i, method) =>
    method === "stream"
      ? ScriptedLlm.text(answer, u(5, 4))
      : hasToolResult(request)
      ? ScriptedLlm.text(answer, u(3, 2))
      : ScriptedLlm.toolCall("add", { a: 2, b: 3 }, { id: "call_add", ...u(10, 1) })
  )
const RUN_USAGE = { prompt_tokens: 18, completion_tokens: 7, total_tokens: 25 }

const client = (url: string, apiKey = "unused") => new OpenAI({ baseURL: `${url}/v1`, apiKey, maxRetries: 0 })

/** An agent whose model is the server's agent, through this project's `OpenAiLlm`. */
const outerAgent = (url: string, model = "react-agent") =>
  ReactAgent.layer({ completionCheck: false, selfReflectionInterval: 0 }).pipe(
    Layer.provideMerge(Layer.mergeAll(
      OpenAiLlm.layer({ baseURL: `${url}/v1`, apiKey: "unused", model, maxRetries: 0 }),
      Toolkit.layerNoop,
      Hooks.layerNoop,
      ContextGuard.layer(),
      Interrupts.layerMemory
    )),
    Layer.orDie
  )

describe("POST /v1/chat/completions (official openai SDK)", () => {
  it.scopedLive(
    "non-streaming: the last user message is the query, earlier ones the history; usage is the run's",
    () =>
      Effect.gen(function*() {
        const inner = innerModel()
        const url = yield* startInteropServer({ llm: inner.layer, tools: [addTool] })
        const reply = yield* Effect.promise(() =>
          client(url).chat.completions.create({
            model: "react-agent",
            messages: [
              { role: "system", content: "You are terse." },
              { role: "user", content: "My name is Ada." },
              { role: "assistant", content: "Hello Ada." },
              { role: "user", content: "What is 2+3?" }
            ]
          })
        )
        assert.strictEqual(reply.object, "chat.completion")
        assert.strictEqual(reply.model, "react-agent")
        assert.strictEqual(reply.choices[0].message.content, "The sum is 5.")
        assert.strictEqual(reply.choices[0].finish_reason, "stop")
        assert.deepStrictEqual(reply.usage, RUN_USAGE)
        const reasoning = (reply.choices[0].message as { reasoning_content?: string }).reasoning_content ?? ""
        assert.include(reasoning, "→ add({\"a\":2,\"b\":3})")
        assert.include(reasoning, "← add: 5")
        const first = inner.requests[0].request.messages.map((m) => [m.role, textOf(m.content)])
        assert.deepStrictEqual(first.slice(1), [["user", "My name is Ada."], ["assistant", "Hello Ada."], [
          "user",
          "What is 2+3?"
        ]])
        assert.notInclude(first[0][1], "You are terse.", "the agent keeps its own system prompt")
      }),
    30_000
  )

  it.scopedLive(
    "stream: true — content deltas, tool activity as reasoning_content, usage in the last chunk",
    () =>
      Effect.gen(function*() {
        const url = yield* startInteropServer({ llm: innerModel("The sum is five.").layer, tools: [addTool] })
        const chunks = yield* Effect.promise(async () => {
          const stream = await client(url).chat.completions.create({
            model: "react-agent",
            stream: true,
            stream_options: { include_usage: true },
            messages: [{ role: "user", content: "What is 2+3?" }]
          })
          const out = []
          for await (const chunk of stream) out.push(chunk)
          return out
        })
        const deltas = chunks.flatMap((c) =>
          c.choices.map((ch) => ch.delta as { content?: string; reasoning_content?: string; role?: string })
        )
        assert.strictEqual(deltas[0].role, "assistant")
        assert.strictEqual(deltas.map((d) => d.content ?? "").join(""), "The sum is five.")
        const reasoning = deltas.map((d) => d.reasoning_content ?? "").join("")
        assert.include(reasoning, "→ add(")
        assert.include(reasoning, "← add: 5")
        // every reasoning delta comes before the first content delta
        const firstContent = deltas.findIndex((d) => (d.content ?? "") !== "")
        assert.isTrue(deltas.slice(firstContent).every((d) => d.reasoning_content === undefined))
        const finish = chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter((f) => f !== null)
        assert.deepStrictEqual(finish, ["stop"])
        const last = chunks[chunks.length - 1]
        assert.deepStrictEqual(last.choices, [])
        assert.deepStrictEqual(last.usage, RUN_USAGE)
        assert.isTrue(chunks.slice(0, -1).every((c) => c.usage == null))
        assert.isTrue(new Set(chunks.map((c) => c.id)).size === 1 && chunks[0].id.startsWith("chatcmpl-"))
      }),
    30_000
  )

  it.scopedLive(
    "synthesis auto: text the model wrote before a tool call never reaches content (it is reasoning); the answer does",
    () =>
      Effect.gen(function*() {
        const inner = ScriptedLlm.makeUnsafe((request) =>
          hasToolResult(request)
            ? ScriptedLlm.text("The sum is five.")
            : ScriptedLlm.toolCall("add", { a: 2, b: 3 }, { id: "call_add", content: "Let me add these." })
        )
        const url = yield* startInteropServer({ llm: inner.layer, tools: [addTool], synthesis: "auto" })
        const chunks = yield* Effect.promise(async () => {
          const stream = await client(url).chat.completions.create({
            model: "react-agent",
            stream: true,
            messages: [{ role: "user", content: "What is 2+3?" }]
          })
          const out = []
          for await (const chunk of stream) out.push(chunk)
          return out
        })
        const deltas = chunks.flatMap((c) =>
          c.choices.map((ch) => ch.delta as { content?: string; reasoning_content?: string })
        )
        assert.strictEqual(deltas.map((d) => d.content ?? "").join(""), "The sum is five.")
        assert.include(deltas.map((d) => d.reasoning_content ?? "").join(""), "Let me add these.")
        // both loop calls streamed, no synthesis call
        assert.deepStrictEqual(inner.requests.map((r) => r.method), ["stream", "stream"])
      }),
    30_000
  )

  it.scopedLive(
    "without include_usage no usage chunk; the models list; errors in OpenAI's shape",
    () =>
      Effect.gen(function*() {
        const url = yield* startInteropServer({ llm: innerModel().layer, tools: [addTool] })
        const sdk = client(url)
        const chunks = yield* Effect.promise(async () => {
          const out = []
          for await (
            const c of await sdk.chat.completions.create({
              model: "react-agent",
              stream: true,
              messages: [{ role: "user", content: "2+3?" }]
            })
          ) out.push(c)
          return out
        })
        assert.isTrue(chunks.every((c) => c.usage == null && c.choices.length === 1))
        const list = yield* Effect.promise(() => sdk.models.list())
        assert.deepStrictEqual(list.data.map((m) => m.id), ["react-agent", "react-agent-dag"])
        assert.strictEqual(
          (yield* Effect.promise(() => sdk.models.retrieve("react-agent-dag"))).owned_by,
          "effect-react-engine"
        )

        const failure = (p: () => Promise<unknown>) =>
          Effect.promise(() => p().then(() => undefined, (e: unknown) => e))
        const bad = yield* failure(() =>
          sdk.chat.completions.create({ model: "react-agent", messages: [{ role: "usr" as "user", content: "x" }] })
        )
        assert.instanceOf(bad, OpenAI.BadRequestError)
        assert.strictEqual((bad as InstanceType<typeof OpenAI.BadRequestError>).param, "messages.0.role")
        assert.strictEqual((bad as InstanceType<typeof OpenAI.BadRequestError>).type, "invalid_request_error")
        const noUser = yield* failure(() =>
          sdk.chat.completions.create({ model: "react-agent", messages: [{ role: "system", content: "x" }] })
        )
        assert.strictEqual((noUser as InstanceType<typeof OpenAI.BadRequestError>).param, "messages")
        const unknown = yield* failure(() =>
          sdk.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] })
        )
        assert.instanceOf(unknown, OpenAI.NotFoundError)
        assert.strictEqual((unknown as InstanceType<typeof OpenAI.NotFoundError>).code, "model_not_found")
      }),
    30_000
  )

  it.scopedLive(
    "API_TOKEN: the bearer token is required (401 in OpenAI's shape), the right one works",
    () =>
      Effect.gen(function*() {
        const url = yield* startInteropServer({
          llm: innerModel().layer,
          tools: [addTool],
          settings: { apiToken: Option.some(Redacted.make("s3cret")) }
        })
        const denied = yield* Effect.promise(() =>
          client(url, "wrong").models.list().then(() => undefined, (e: unknown) => e)
        )
        assert.instanceOf(denied, OpenAI.AuthenticationError)
        assert.strictEqual((denied as InstanceType<typeof OpenAI.AuthenticationError>).code, "invalid_api_key")
        const reply = yield* Effect.promise(() =>
          client(url, "s3cret").chat.completions.create({
            model: "react-agent",
            messages: [{ role: "user", content: "2+3?" }]
          })
        )
        assert.strictEqual(reply.choices[0].message.content, "The sum is 5.")
      }),
    30_000
  )

  it.scopedLive(
    "react-agent-dag runs DAG mode: the plan and steps are in reasoning_content",
    () =>
      Effect.gen(function*() {
        const model = ScriptedLlm.makeUnsafe(dagResponder({
          plan: () => planReply([{ id: 1, task: "find A" }, { id: 2, task: "find B", dependencies: [1] }]),
          step: (id) => stepText(`result of ${id}`),
          answer: () => ScriptedLlm.text("A then B.")
        }))
        const url = yield* startInteropServer({ llm: model.layer })
        const reply = yield* Effect.promise(() =>
          client(url).chat.completions.create({
            model: "react-agent-dag",
            messages: [{ role: "user", content: "A and B?" }]
          })
        )
        assert.strictEqual(reply.choices[0].message.content, "A then B.")
        const reasoning = (reply.choices[0].message as { reasoning_content?: string }).reasoning_content ?? ""
        assert.include(reasoning, "Plan (round 1): 1. find A; 2. find B")
        assert.include(reasoning, "Step 2: done")
      }),
    30_000
  )
})

describe("the agent as the model of another agent (OpenAiLlm)", () => {
  it.scopedLive(
    "the outer run's usage is the inner run's: its one streamed loop call (synthesis auto) runs the agent once",
    () =>
      Effect.gen(function*() {
        const inner = innerModel("The sum is 5.")
        const url = yield* startInteropServer({ llm: inner.layer, tools: [addTool] })
        const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "What is 2+3?" }))
          .pipe(
            Effect.provide(outerAgent(url))
          )
        assert.isUndefined(result.error)
        assert.strictEqual(result.answer, "The sum is 5.")
        // the outer agent's one loop call (streamed, the answer) is one inner run of 3 scripted calls
        assert.strictEqual(inner.requests.length, 3)
        const perRun = Usage.make(RUN_USAGE.prompt_tokens, RUN_USAGE.completion_tokens)
        assert.deepStrictEqual(result.usage.by_phase, { loop: perRun })
        assert.strictEqual(result.usage.total_tokens, RUN_USAGE.total_tokens)
      }),
    30_000
  )

  it.scopedLive(
    "cancelling the outer run aborts its request, and the inner run is cancelled (its tool interrupted)",
    () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const interrupted = yield* Deferred.make<void>()
        const stuck = Tool.make({
          name: "stuck",
          description: "Never ends",
          parameters: Schema.Struct({}),
          handler: () =>
            Deferred.succeed(started, undefined).pipe(
              Effect.zipRight(Effect.never),
              Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined))
            )
        })
        const inner = ScriptedLlm.makeUnsafe((
          request
        ) => (hasToolResult(request) ? ScriptedLlm.text("never") : ScriptedLlm.toolCall("stuck", {})))
        const url = yield* startInteropServer({ llm: inner.layer, tools: [stuck] })
        const cancel = yield* Deferred.make<void>()
        const outer = yield* Effect.flatMap(
          ReactAgent.ReactAgent,
          (a) => a.runCollect({ query: "go", cancel: Deferred.await(cancel) })
        ).pipe(
          Effect.provide(outerAgent(url)),
          Effect.fork
        )
        yield* Deferred.await(started)
        yield* Deferred.succeed(cancel, undefined)
        const result = yield* outer.await.pipe(Effect.flatten)
        assert.strictEqual(result.answer, "")
        yield* Deferred.await(interrupted).pipe(
          Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => "the inner run was not cancelled" })
        )
      }),
    30_000
  )

  it.scopedLive("a streaming client that hangs up cancels its run", () =>
    Effect.gen(function*() {
      const interrupted = yield* Deferred.make<void>()
      const stuck = Tool.make({
        name: "stuck",
        description: "Never ends",
        parameters: Schema.Struct({}),
        handler: () => Effect.never.pipe(Effect.onInterrupt(() => Deferred.succeed(interrupted, undefined)))
      })
      const inner = ScriptedLlm.makeUnsafe(() => ScriptedLlm.toolCall("stuck", {}))
      const url = yield* startInteropServer({ llm: inner.layer, tools: [stuck] })
      const seen = yield* Effect.promise(async () => {
        const stream = await client(url).chat.completions.create({
          model: "react-agent",
          stream: true,
          messages: [{ role: "user", content: "go" }]
        })
        for await (const chunk of stream) {
          const reasoning =
            (chunk.choices[0]?.delta as { reasoning_content?: string } | undefined)?.reasoning_content ?? ""
          if (reasoning.startsWith("→ stuck")) {
            stream.controller.abort()
            return reasoning
          }
        }
        return "ended"
      })
      assert.strictEqual(seen, "→ stuck({})\n")
      yield* Deferred.await(interrupted).pipe(
        Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => "the run was not cancelled" })
      )
    }), 30_000)
})
