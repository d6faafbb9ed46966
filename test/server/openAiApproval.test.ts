/**
 * `/v1/chat/completions` and a tool that needs a person's approval (issue 46 item 10): the
 * caller cannot approve (the run lives in the request and has no conversation to approve in),
 * so the run stops at the approval request and the reply says at once what waits —
 * `422 approval_required` naming the tool, the call and the approval id, through the real
 * `openai` SDK; a stream ends with the same error. It hung (no answer after 90 s).
 */
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import OpenAI from "openai"
import * as Tool from "../../src/Tool.js"
import * as FakeOpenAi from "../utils/fakeOpenAiServer.js"
import { startServer } from "../utils/serverHarness.js"

describe("/v1/chat/completions and approvals", () => {
  it.scopedLive(
    "a tool call that needs approval: 422 approval_required at once, the tool never runs",
    () =>
      Effect.gen(function*() {
        const ran: Array<string> = []
        const tool = Tool.make({
          name: "fs__write_file",
          description: "Writes a file",
          parameters: Schema.Struct({ path: Schema.String }),
          handler: ({ path }) => Effect.sync(() => void ran.push(path)).pipe(Effect.as(`wrote ${path}`))
        })
        const fake = yield* FakeOpenAi.scoped((body: { stream?: boolean }, index) =>
          body.stream === true
            ? FakeOpenAi.sseText("Handled.")
            : FakeOpenAi.completion({
              toolCalls: [{
                id: FakeOpenAi.freshCallId(index),
                name: "fs__write_file",
                arguments: "{\"path\":\"notes.txt\"}"
              }]
            })
        )
        const { url } = yield* startServer({
          llmUrl: fake.url,
          tools: [tool],
          provide: Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["REACT_APPROVAL_TOOLS", "fs__write_*"]])))
        })
        const client = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0, timeout: 20_000 })
        const started = Date.now()
        const error = yield* Effect.promise(() =>
          client.chat.completions.create({
            model: "react-agent",
            messages: [{ role: "user", content: "write my notes" }]
          })
            .then(() => undefined, (e: unknown) => e)
        )
        assert.isBelow(Date.now() - started, 15_000, "answered promptly")
        assert.instanceOf(error, OpenAI.APIError)
        const api = error as InstanceType<typeof OpenAI.APIError>
        assert.strictEqual(api.status, 422)
        assert.strictEqual(api.code, "approval_required")
        const approval =
          (api.error as { approval?: { approval_id: string; tool_name: string; tool_call_id: string } }).approval
        assert.strictEqual(approval?.tool_name, "fs__write_file")
        assert.strictEqual(approval?.tool_call_id, "call_1_0")
        assert.match(approval?.approval_id ?? "", /\S/)
        assert.include(api.message, `approval ${approval?.approval_id}`)

        // streamed: the activity so far, then the same error (the SDK raises it)
        const stream = yield* Effect.promise(() =>
          client.chat.completions.create({
            model: "react-agent",
            stream: true,
            messages: [{ role: "user", content: "write my notes" }]
          })
        )
        const streamed = yield* Effect.promise(async () => {
          try {
            for await (const _ of stream) { /* reasoning deltas */ }
            return undefined
          } catch (e) {
            return e
          }
        })
        assert.instanceOf(streamed, OpenAI.APIError)
        assert.include((streamed as Error).message, "needs a person's approval: fs__write_file")
        assert.deepStrictEqual(ran, [], "the tool never ran")
      }),
    60_000
  )
})
