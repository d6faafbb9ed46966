import { assert, describe, it } from "@effect/vitest"
import {
  DefaultChatTransport,
  parseJsonEventStream,
  readUIMessageStream,
  type UIMessage,
  type UIMessageChunk,
  uiMessageChunkSchema
} from "ai"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { readFileSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import type { ChatRequest } from "../../src/Llm.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import * as Tool from "../../src/Tool.js"
import { addTool } from "../utils/agentLayers.js"
import { dagResponder, planReply, stepText } from "../utils/dagLayers.js"
import { startInteropServer } from "../utils/interopServer.js"
import { postJson } from "../utils/sse.js"

const hasToolResult = (request: ChatRequest) => request.messages.some((m) => m.role === "tool")
const u = (prompt: number, completion: number) => ({ usage: { prompt, completion } })

/** Reasons, calls `add` (id call_add), answers; the synthesis streams in three chunks. */
const addModel = () =>
  ScriptedLlm.makeUnsafe((request, _i, method) =>
    method === "stream"
      ? ScriptedLlm.text("2 + 3 = **5**", { chunks: ["2 + 3 ", "= ", "**5**"], ...u(30, 6) })
      : hasToolResult(request)
      ? ScriptedLlm.text("5", u(20, 1))
      : ScriptedLlm.toolCall("add", { a: 2, b: 3 }, { id: "call_add", reasoning: "Adding with the tool.", ...u(10, 4) })
  )

const userMessage = (text: string, id = "u1"): UIMessage => ({ id, role: "user", parts: [{ type: "text", text }] })

/** POSTs a useChat body and returns the response. */
const postChat = (url: string, body: unknown, signal?: AbortSignal) =>
  fetch(`${url}/api/chat`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: signal ?? null
  })

/** The AI SDK's parser: SSE → validated chunks → the assembled message (the last state). */
const assemble = async (chunks: ReadableStream<UIMessageChunk>): Promise<UIMessage> => {
  let last: UIMessage | undefined
  for await (const message of readUIMessageStream({ stream: chunks, terminateOnError: true })) last = message
  if (last === undefined) throw new Error("no message")
  return structuredClone(last)
}

const chunksOf = (body: ReadableStream<Uint8Array>): ReadableStream<UIMessageChunk> =>
  parseJsonEventStream({ stream: body, schema: uiMessageChunkSchema }).pipeThrough(
    new TransformStream({
      transform(result, controller) {
        if (!result.success) throw result.error
        controller.enqueue(result.value)
      }
    })
  )

const golden = fileURLToPath(new URL("./golden/chat-ui-stream.txt", import.meta.url))

describe("POST /api/chat (AI SDK UI message stream)", () => {
  it.scopedLive(
    "the AI SDK's parser assembles the message: reasoning, the tool part with input and output, the text, metadata",
    () =>
      Effect.gen(function*() {
        const url = yield* startInteropServer({ llm: addModel().layer, tools: [addTool] })
        const response = yield* Effect.promise(() =>
          postChat(url, { id: "chat-1", messages: [userMessage("What is 2+3?")], trigger: "submit-message" })
        )
        assert.strictEqual(response.status, 200)
        assert.strictEqual(response.headers.get("x-vercel-ai-ui-message-stream"), "v1")
        assert.strictEqual(response.headers.get("content-type"), "text/event-stream")
        const message = yield* Effect.promise(() => assemble(chunksOf(response.body!)))
        assert.strictEqual(message.role, "assistant")
        const types = message.parts.map((p) => p.type)
        assert.deepStrictEqual(types, ["step-start", "reasoning", "dynamic-tool", "step-start", "text"])
        const tool = message.parts[2] as Extract<UIMessage["parts"][number], { type: "dynamic-tool" }>
        assert.deepStrictEqual(
          {
            toolName: tool.toolName,
            toolCallId: tool.toolCallId,
            state: tool.state,
            input: tool.input,
            output: tool.output
          },
          { toolName: "add", toolCallId: "call_add", state: "output-available", input: { a: 2, b: 3 }, output: "5" }
        )
        const { text: reasoning, state: reasoningState } = message.parts[1] as { text: string; state: string }
        assert.deepStrictEqual([reasoning, reasoningState], ["Adding with the tool.", "done"])
        const { text, state: textState } = message.parts[4] as { text: string; state: string }
        assert.deepStrictEqual([text, textState], ["2 + 3 = **5**", "done"])
        const metadata = message.metadata as {
          conversation_id: string
          iterations: number
          usage: { total_tokens: number }
        }
        assert.strictEqual(metadata.conversation_id, "chat-1")
        assert.strictEqual(metadata.iterations, 2)
        assert.strictEqual(metadata.usage.total_tokens, 14 + 21 + 36)
      }),
    30_000
  )

  it.scopedLive(
    "synthesis auto: the answer streams from the loop; text written before the tool call stays that step's text, marked reset",
    () =>
      Effect.gen(function*() {
        const llm = ScriptedLlm.makeUnsafe((request) =>
          hasToolResult(request)
            ? ScriptedLlm.text("2 + 3 = **5**", { chunks: ["2 + 3 ", "= ", "**5**"] })
            : ScriptedLlm.toolCall("add", { a: 2, b: 3 }, { id: "call_add", content: "Let me add." })
        )
        const url = yield* startInteropServer({ llm: llm.layer, tools: [addTool], synthesis: "auto" })
        const response = yield* Effect.promise(() =>
          postChat(url, { id: "chat-auto", messages: [userMessage("What is 2+3?")], trigger: "submit-message" })
        )
        const message = yield* Effect.promise(() => assemble(chunksOf(response.body!)))
        const types = message.parts.map((p) => p.type)
        assert.deepStrictEqual(types, [
          "step-start",
          "text",
          "data-answer",
          "reasoning",
          "dynamic-tool",
          "step-start",
          "text"
        ])
        assert.deepStrictEqual((message.parts[2] as { data: unknown }).data, { status: "reset" })
        assert.strictEqual((message.parts[1] as { text: string }).text, "Let me add.")
        assert.strictEqual((message.parts[6] as { text: string }).text, "2 + 3 = **5**")
        assert.deepStrictEqual(llm.requests.map((r) => r.method), ["stream", "stream"])
      }),
    30_000
  )

  it.scopedLive("golden transcript of the stream (elapsed and run id normalised)", () =>
    Effect.gen(function*() {
      const url = yield* startInteropServer({ llm: addModel().layer, tools: [addTool] })
      const text = yield* Effect.promise(() =>
        postChat(url, { id: "chat-golden", messages: [userMessage("What is 2+3?")] }).then((r) => r.text())
      )
      const transcript = text.split("\n\n").filter((frame) => frame !== "" && !frame.startsWith(":"))
        .map((frame) =>
          frame.replace(/"elapsed":[0-9.]+/, "\"elapsed\":0").replace(
            /"run_id":"run_[0-9a-f-]+"/,
            "\"run_id\":\"<run_id>\""
          )
        )
        .join("\n")
      // UPDATE_GOLDEN=1 rewrites the file (review the diff)
      if (process.env.UPDATE_GOLDEN === "1") writeFileSync(golden, transcript + "\n")
      assert.strictEqual(transcript + "\n", readFileSync(golden, "utf8"))
    }), 30_000)

  it.scopedLive(
    "data parts for our own events (DAG mode: dag, phase), and the chat continues the stored conversation",
    () =>
      Effect.gen(function*() {
        const model = ScriptedLlm.makeUnsafe(dagResponder({
          plan: () => planReply([{ id: 1, task: "find A" }]),
          step: (id) => stepText(`result of ${id}`),
          answer: () => ScriptedLlm.text("A found."),
          react: (_turn, method, text) =>
            ScriptedLlm.text(text.includes("A found.") ? "It was A." : method === "stream" ? "react" : "react")
        }))
        const url = yield* startInteropServer({ llm: model.layer })
        const first = yield* Effect.promise(() =>
          postChat(url, { id: "chat-dag", mode: "dag", messages: [userMessage("Find A")] }).then((r) =>
            assemble(chunksOf(r.body!))
          )
        )
        const dataTypes = first.parts.filter((p) => p.type.startsWith("data-")).map((
          p
        ) => [p.type, (p as { data: any }).data.type ?? (p as { data: any }).data.phase])
        assert.deepStrictEqual(dataTypes.slice(0, 2), [["data-phase", "planning"], ["data-dag", "plan"]])
        assert.includeDeepMembers(dataTypes, [["data-dag", "step"], ["data-phase", "analyzing"]])
        assert.deepStrictEqual(first.parts.filter((p) => p.type === "text").map((p) => (p as { text: string }).text), [
          "A found."
        ])
        // a second turn on the same chat id: the server's stored turn is the history
        const second = yield* Effect.promise(() =>
          postChat(url, {
            id: "chat-dag",
            messages: [userMessage("Find A"), {
              id: "a1",
              role: "assistant",
              parts: [{ type: "text", text: "A found." }]
            }, userMessage("Which?", "u2")]
          }).then((r) => assemble(chunksOf(r.body!)))
        )
        assert.strictEqual((second.parts.find((p) => p.type === "text") as { text: string }).text, "It was A.")
      }),
    30_000
  )

  it.scopedLive(
    "validation and conflicts: 400 naming the field, 409 while the chat runs, 204 when there is nothing to resume",
    () =>
      Effect.gen(function*() {
        const started = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const gate = Tool.make({
          name: "gate",
          description: "Waits",
          parameters: Schema.Struct({}),
          handler: () =>
            Effect.zipRight(Deferred.succeed(started, undefined), Effect.as(Deferred.await(release), "opened"))
        })
        const model = ScriptedLlm.makeUnsafe((request, _i, method) =>
          method === "stream"
            ? ScriptedLlm.text("Opened.")
            : hasToolResult(request)
            ? ScriptedLlm.text("Opened.")
            : ScriptedLlm.toolCall("gate", {}, { id: "call_gate" })
        )
        const url = yield* startInteropServer({ llm: model.layer, tools: [gate] })
        const bad = yield* Effect.promise(() =>
          postJson(`${url}/api/chat`, { id: "c", messages: [{ id: "x", role: "assistant", parts: [] }] })
        )
        assert.strictEqual(bad.status, 400)
        assert.deepStrictEqual(bad.body.issues, [{
          path: "messages.0.role",
          message: "The last message must be the user's"
        }])
        const badId = yield* Effect.promise(() =>
          postJson(`${url}/api/chat`, { id: "..", messages: [userMessage("x")] })
        )
        assert.strictEqual(badId.body.issues[0].path, "id")
        assert.strictEqual((yield* Effect.promise(() => fetch(`${url}/api/chat/nothing/stream`))).status, 204)

        // the first request's client goes away mid-run; the run goes on (detach grace)
        const controller = new AbortController()
        const response = yield* Effect.promise(() =>
          postChat(url, { id: "chat-r", messages: [userMessage("open")] }, controller.signal)
        )
        yield* Deferred.await(started)
        controller.abort()
        const conflict = yield* Effect.promise(() =>
          postJson(`${url}/api/chat`, { id: "chat-r", messages: [userMessage("again")] })
        )
        assert.strictEqual(conflict.status, 409)
        assert.strictEqual(response.status, 200)

        // resume with the AI SDK's own transport: a replay from the first event, then live
        const transport = new DefaultChatTransport<UIMessage>({ api: `${url}/api/chat` })
        const resumed = yield* Effect.promise(() => transport.reconnectToStream({ chatId: "chat-r" }))
        assert.isNotNull(resumed)
        yield* Deferred.succeed(release, undefined)
        const message = yield* Effect.promise(() => assemble(resumed!))
        assert.deepStrictEqual(message.parts.map((p) => p.type), ["step-start", "dynamic-tool", "step-start", "text"])
        assert.strictEqual((message.parts[1] as { output?: unknown }).output, "opened")
        assert.strictEqual((message.parts[3] as { text: string }).text, "Opened.")
        // over: nothing to resume
        assert.isNull(yield* Effect.promise(() => transport.reconnectToStream({ chatId: "chat-r" })))
      }),
    30_000
  )

  it.scopedLive(
    "sent through DefaultChatTransport.sendMessages (the body useChat sends)",
    () =>
      Effect.gen(function*() {
        const url = yield* startInteropServer({ llm: addModel().layer, tools: [addTool] })
        const transport = new DefaultChatTransport<UIMessage>({ api: `${url}/api/chat` })
        const chunks = yield* Effect.promise(() =>
          transport.sendMessages({
            trigger: "submit-message",
            chatId: "chat-t",
            messageId: undefined,
            messages: [userMessage("What is 2+3?")],
            abortSignal: undefined
          })
        )
        const message = yield* Effect.promise(() => assemble(chunks))
        assert.strictEqual((message.parts.find((p) => p.type === "text") as { text: string }).text, "2 + 3 = **5**")
      }),
    30_000
  )
})
