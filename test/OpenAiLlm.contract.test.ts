/**
 * The shared `Llm` contract (test/utils/llmContract.ts) for `OpenAiLlm` over the
 * real `openai` SDK and the fake OpenAI-compatible server.
 */
import * as Effect from "effect/Effect"
import * as OpenAiLlm from "../src/OpenAiLlm.js"
import * as FakeOpenAi from "./utils/fakeOpenAiServer.js"
import type { ContractBackend, ContractReply } from "./utils/llmContract.js"
import { contract } from "./utils/llmContract.js"

const usage = { prompt: 20, completion: 5 }

const toReply = (r: ContractReply, body: any, index: number): FakeOpenAi.FakeReply => {
  switch (r._tag) {
    case "Text":
      return body?.stream === true
        ? FakeOpenAi.sseText(r.text, { usage })
        : FakeOpenAi.completion({ content: r.text, usage })
    case "Tools": {
      const calls = r.calls.map((c, k) => ({
        id: FakeOpenAi.freshCallId(index, k),
        name: c.name,
        arguments: JSON.stringify(c.input)
      }))
      if (body?.stream !== true) return FakeOpenAi.completion({ content: null, toolCalls: calls, usage })
      return FakeOpenAi.sse([
        FakeOpenAi.chunk.role(),
        ...calls.flatMap((c, k) => [
          FakeOpenAi.chunk.toolCall(k, { id: c.id, name: c.name, arguments: "" }),
          FakeOpenAi.chunk.toolCall(k, { arguments: c.arguments.slice(0, 5) }),
          FakeOpenAi.chunk.toolCall(k, { arguments: c.arguments.slice(5) })
        ]),
        FakeOpenAi.chunk.finish("tool_calls"),
        FakeOpenAi.chunk.usage(usage.prompt, usage.completion)
      ])
    }
    case "Hang":
      return FakeOpenAi.hang
    case "Error": {
      const headers = r.retryAfterS !== undefined ? { "retry-after": String(r.retryAfterS) } : undefined
      switch (r.kind) {
        case "rate_limit":
          return FakeOpenAi.error(r.status, "Rate limit reached", {
            type: "rate_limit_error",
            ...(headers ? { headers } : {})
          })
        case "overloaded":
          return FakeOpenAi.error(r.status, "The server is overloaded", { type: "server_error" })
        case "overflow":
          return FakeOpenAi.error(r.status, "This model's maximum context length is 128000 tokens", {
            code: "context_length_exceeded"
          })
        case "auth":
          return FakeOpenAi.error(r.status, "Incorrect API key provided", { type: "invalid_request_error" })
        case "bad":
          return FakeOpenAi.error(r.status, "messages: field required")
      }
    }
  }
}

const openAiBackend: ContractBackend = {
  name: "OpenAiLlm over the openai SDK",
  start: (script) =>
    Effect.map(
      FakeOpenAi.scoped((body, index) =>
        toReply(
          typeof script === "function"
            ? script(body, index)
            : script[index] ?? { _tag: "Error", status: 500, kind: "overloaded" },
          body,
          index
        )
      ),
      (server) => ({
        requests: () => server.requests.length,
        advertised: (i) =>
          (server.requests[i].body.tools ?? []).map((t: any) => ({
            name: t.function.name,
            schema: t.function.parameters
          })),
        streamed: (i) => server.requests[i].body.stream === true,
        llm: (o) =>
          Effect.succeed(OpenAiLlm.makeUnsafe({
            model: "fake-model",
            baseURL: server.url,
            apiKey: "sk-test",
            retryBaseDelay: "5 millis",
            ...(o.maxRetries !== undefined ? { maxRetries: o.maxRetries } : {}),
            ...(o.timeout !== undefined ? { timeout: o.timeout } : {})
          }))
      })
    )
}

contract(openAiBackend)
