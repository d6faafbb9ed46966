/**
 * Tools that return images (SPEC §24): an MCP tool's `image` content is stored
 * (once, by hash) and reaches the model's next request — the OpenAI-compatible
 * chat in one `user` message after the round's tool messages, naming the call;
 * a library tool's rich result `files` the same way. A real MCP server over
 * Streamable HTTP, the real `openai` SDK against the fake.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Attachments from "../../src/Attachments.js"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as Hooks from "../../src/Hooks.js"
import * as Interrupts from "../../src/Interrupts.js"
import * as McpTools from "../../src/McpTools.js"
import * as Message from "../../src/Message.js"
import * as OpenAiLlm from "../../src/OpenAiLlm.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import * as Tool from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"
import * as Files from "../utils/attachmentFiles.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { mcpHttpServerWith } from "../utils/mcpHttpServer.js"

/** The test MCP server plus `chart`, whose image content is a real PNG. */
const chartServer = mcpHttpServerWith((server) =>
  server.registerTool("chart", { description: "Draws a chart (a real 32×16 PNG)" }, async () => ({
    content: [
      { type: "text", text: "the chart" },
      { type: "image", data: Buffer.from(Files.png(32, 16, [10, 120, 200])).toString("base64"), mimeType: "image/png" }
    ]
  }))
)

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

/** Calls `tool` once (fresh ids per request), then answers. */
const callsThenAnswers = (tool: string): FakeOpenAi.FakeResponder => (body, index) =>
  body.messages.some((m: any) => m.role === "tool")
    ? FakeOpenAi.completion({ content: "It is a blue chart." })
    : FakeOpenAi.completion({
      content: null,
      toolCalls: [{ id: FakeOpenAi.freshCallId(index), name: tool, arguments: "{}" }]
    })

const agentOver = (
  url: string,
  tools: Layer.Layer<Toolkit.Toolkit, never, Attachments.Attachments>,
  store: Attachments.AttachmentsService
) =>
  ReactAgent.layer({ synthesis: "auto", useNativeTools: true }).pipe(
    Layer.provide(Layer.mergeAll(
      OpenAiLlm.layer({ baseURL: url, apiKey: "k", model: "gpt-test", maxRetries: 0, abilities: { streaming: false } }),
      tools,
      Hooks.layerNoop,
      ContextGuard.layer(),
      Interrupts.layerMemory
    )),
    Layer.provide(Layer.succeed(Attachments.Attachments, store))
  )

describe("tool images", () => {
  it.scoped("an MCP tool's image reaches the next request after the tool message, naming the call", () =>
    Effect.gen(function*() {
      const mcp = yield* chartServer
      const fake = yield* FakeOpenAi.scoped(callsThenAnswers("pics__chart"))
      const store = Attachments.makeMemoryUnsafe()
      const tools = Layer.effect(
        Toolkit.Toolkit,
        Effect.flatMap(McpTools.McpTools, (m) => Effect.orDie(Toolkit.make(m.tools)))
      ).pipe(
        Layer.provide(McpTools.layer({ config: { mcpServers: { pics: { url: mcp.url } } } }))
      )
      const result = yield* Effect.flatMap(
        ReactAgent.ReactAgent,
        (agent) => agent.runCollect({ query: "Draw me the chart." })
      ).pipe(
        Effect.provide(agentOver(fake.url, tools, store))
      )
      assert.strictEqual(result.answer, "It is a blue chart.")
      assert.strictEqual(fake.requests.length, 2)
      const messages = fake.requests[1].body.messages
      assert.deepStrictEqual(messages.map((m: any) => m.role), ["system", "user", "assistant", "tool", "user"])
      assert.strictEqual(messages[3].content, "the chart\n[image: image/png]")
      assert.deepStrictEqual(messages[4].content, [
        { type: "text", text: "The tool call call_1_0 (pics__chart) returned:" },
        { type: "image_url", image_url: { url: `data:image/png;base64,${b64(Files.png(32, 16, [10, 120, 200]))}` } }
      ])
      // stored once, by hash; the run's trace refers to it
      assert.strictEqual(store.count(), 1)
      const toolMessage = result.messages.find((m) => m.role === "tool") as Message.ToolMessage
      assert.deepInclude(toolMessage.files?.[0].file, {
        media_type: "image/png",
        width: 32,
        height: 16,
        name: "chart-1.png"
      })
    }))

  it.scoped("a library tool's files reach the next request; a text-only model reads a note in the tool message", () =>
    Effect.gen(function*() {
      const store = Attachments.makeMemoryUnsafe()
      const screenshot = Tool.make({
        name: "screenshot",
        description: "Takes a screenshot",
        parameters: Schema.Struct({}),
        dependencies: [Attachments.Attachments],
        handler: () =>
          Effect.gen(function*() {
            const files = yield* Attachments.Attachments
            const ref = yield* Effect.orDie(files.put(Files.png(8, 8), { name: "screen.png" }))
            return { content: "took it", contentType: "text" as const, files: [Message.file(ref)] }
          })
      })
      const tools = Toolkit.layer([screenshot])
      for (const modalities of [undefined, ["text"] as const]) {
        const fake = yield* FakeOpenAi.scoped(callsThenAnswers("screenshot"))
        const llm = OpenAiLlm.layer({
          baseURL: fake.url,
          apiKey: "k",
          model: "m",
          maxRetries: 0,
          abilities: { streaming: false },
          ...(modalities !== undefined ? { inputModalities: modalities } : {})
        })
        yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) => agent.runCollect({ query: "Look." })).pipe(
          Effect.provide(
            ReactAgent.layer({ synthesis: "auto" }).pipe(
              Layer.provide(Layer.mergeAll(llm, tools, Hooks.layerNoop, ContextGuard.layer(), Interrupts.layerMemory)),
              Layer.provide(Layer.succeed(Attachments.Attachments, store))
            )
          )
        )
        const messages = fake.requests[1].body.messages
        if (modalities === undefined) {
          assert.strictEqual(messages.at(-1).content[1].image_url.url, `data:image/png;base64,${b64(Files.png(8, 8))}`)
        } else {
          assert.deepStrictEqual(messages.map((m: any) => m.role), ["system", "user", "assistant", "tool"])
          assert.include(messages[3].content, "took it\n[Attachment \"screen.png\" (image/png, 8×8")
        }
      }
      assert.strictEqual(store.count(), 1)
    }))
})
