/**
 * Tool progress through the real server (durable runs): a tool's
 * `Tool.progress` reaches the live SSE client as `step {type:"iteration",
 * status:"progress"}` frames without an `id:` (ephemeral), between the call's
 * start and done; it is never stored, so a client resuming from the run log
 * (`Last-Event-ID`) does not get it, and the stored events keep their ids 1, 2, 3…
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
import * as Schema from "effect/Schema"
import type { ChatRequest } from "../../src/Llm.js"
import * as ScriptedLlm from "../../src/ScriptedLlm.js"
import * as Tool from "../../src/Tool.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startInteropServer } from "../utils/interopServer.js"
import { startServer } from "../utils/serverHarness.js"
import { openSse } from "../utils/sse.js"

const work = Tool.make({
  name: "work",
  description: "Works in three steps",
  parameters: Schema.Struct({}),
  handler: () =>
    Effect.gen(function*() {
      for (let i = 1; i <= 3; i++) {
        yield* Effect.sleep("150 millis")
        yield* Tool.progress(`step ${i}`, i / 3)
      }
      return "worked"
    })
})

describe("tool progress on the server", () => {
  it.scopedLive(
    "live frames without an id, between the call's start and done; never stored",
    () =>
      Effect.gen(function*() {
        const fake = yield* FakeOpenAi.scoped([
          FakeOpenAi.completion({ toolCalls: [{ id: "call_w", name: "work", arguments: "{}" }] }),
          FakeOpenAi.completion({ content: "done" }),
          FakeOpenAi.sseText("It worked.")
        ])
        const server = yield* startServer({ llmUrl: fake.url, tools: [work] })
        const run = yield* Effect.promise(() =>
          openSse(`${server.url}/api/react`, { body: { query: "work", conversation_id: "p1" } })
        )
        const progress = run.events.filter((e) => e.event === "step" && e.data.status === "progress")
        assert.deepStrictEqual(progress.map((e) => [e.id, e.data.tool_call_id, e.data.message, e.data.progress]), [
          [undefined, "call_w", "step 1", 1 / 3],
          [undefined, "call_w", "step 2", 2 / 3],
          [undefined, "call_w", "step 3", 1]
        ])
        const kinds = run.events.map((e) => (e.event === "step" ? `${e.data.type}:${e.data.status}` : e.event))
        const start = kinds.indexOf("iteration:start")
        const done = kinds.indexOf("iteration:done")
        assert.isTrue(start < kinds.indexOf("iteration:progress") && kinds.lastIndexOf("iteration:progress") < done)
        // the stored events are numbered without gaps: progress took no number
        const stored = run.events.filter((e) => e.id !== undefined)
        assert.deepStrictEqual(stored.map((e) => Number(e.id)), stored.map((_, i) => i + 1))
        // a client reading the run from the log gets the same stored events, and no progress
        const replay = yield* Effect.promise(() => openSse(`${server.url}/api/react/events?conversation_id=p1`))
        assert.deepStrictEqual(replay.events.map((e) => [e.id, e.event]), stored.map((e) => [e.id, e.event]))
        assert.isFalse(replay.events.some((e) => e.data.status === "progress"))
      }),
    60_000
  )

  it.scopedLive(
    "POST /api/chat: the AI SDK gets the progress as a data part per call, updated in place",
    () =>
      Effect.gen(function*() {
        const hasToolResult = (request: ChatRequest) => request.messages.some((m) => m.role === "tool")
        const llm = ScriptedLlm.makeUnsafe((request, _i, method) =>
          method === "stream"
            ? ScriptedLlm.text("It worked.")
            : hasToolResult(request)
            ? ScriptedLlm.text("done")
            : ScriptedLlm.toolCall("work", {}, { id: "call_w" })
        )
        const url = yield* startInteropServer({ llm: llm.layer, tools: [work] })
        const response = yield* Effect.promise(() =>
          fetch(`${url}/api/chat`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({
              id: "chat-p",
              messages: [{ id: "u1", role: "user", parts: [{ type: "text", text: "work" }] }]
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
        const progress = seen.filter((c) => c.type === "data-progress") as Array<
          { id: string; data: { message: string } }
        >
        assert.deepStrictEqual(progress.map((c) => [c.id, c.data.message]), [
          ["progress-call_w", "step 1"],
          ["progress-call_w", "step 2"],
          ["progress-call_w", "step 3"]
        ])
        // the tool part is not taken for done by a progress report; one data part holds the last report
        const parts = message!.parts
        const tool = parts.find((p) => p.type === "dynamic-tool") as { state: string; output: unknown }
        assert.deepStrictEqual([tool.state, tool.output], ["output-available", "worked"])
        const data = parts.filter((p) => p.type === "data-progress") as Array<
          { data: { message: string; progress: number } }
        >
        assert.deepStrictEqual(data.map((p) => [p.data.message, p.data.progress]), [["step 3", 1]])
      }),
    30_000
  )
})
