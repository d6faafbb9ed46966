/**
 * `EffectAiLlm` over the real `@effect/ai-openai` client (the Responses API,
 * `LLM_PROVIDER=openai`) and a fake of that API: the shared `Llm` contract, and
 * `prompt_cache_key` on the wire.
 */
import { assert, describe, it } from "@effect/vitest"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Redacted from "effect/Redacted"
import { make as makeOpenAi } from "../src/internal/llmProviders/openai.js"
import * as Message from "../src/Message.js"
import * as FakeResponses from "./utils/fakeOpenAiResponsesServer.js"
import type { ContractBackend, ContractReply } from "./utils/llmContract.js"
import { contract } from "./utils/llmContract.js"

const llmOver = (url: string, o: { readonly maxRetries?: number; readonly timeout?: Duration.DurationInput }) =>
  makeOpenAi({
    model: "gpt-test",
    baseURL: url,
    apiKey: Redacted.make("sk-test"),
    abilities: {},
    retryBaseDelay: "5 millis",
    promptCache: "auto",
    ...(o.maxRetries !== undefined ? { maxRetries: o.maxRetries } : {}),
    ...(o.timeout !== undefined ? { timeout: o.timeout } : {})
  })

const toReply = (r: ContractReply): FakeResponses.FakeResponsesReply => {
  switch (r._tag) {
    case "Text":
      return { _tag: "Text", text: r.text }
    case "Tools":
      return { _tag: "Calls", calls: r.calls }
    case "Hang":
      return { _tag: "Hang" }
    case "Error": {
      const headers = r.retryAfterS !== undefined ? { "retry-after": String(r.retryAfterS) } : undefined
      switch (r.kind) {
        case "rate_limit":
          return {
            _tag: "Error",
            status: r.status,
            type: "requests",
            code: "rate_limit_exceeded",
            message: "Rate limit reached",
            ...(headers ? { headers } : {})
          }
        case "overloaded":
          return { _tag: "Error", status: r.status, type: "server_error", message: "The server is overloaded" }
        case "overflow":
          return {
            _tag: "Error",
            status: r.status,
            type: "invalid_request_error",
            code: "context_length_exceeded",
            message: "Your input exceeds the context window of this model."
          }
        case "auth":
          return {
            _tag: "Error",
            status: r.status,
            type: "invalid_request_error",
            code: "invalid_api_key",
            message: "Incorrect API key provided"
          }
        case "bad":
          return { _tag: "Error", status: r.status, type: "invalid_request_error", message: "input: required" }
      }
    }
  }
}

const backend: ContractBackend = {
  name: "EffectAiLlm over @effect/ai-openai (Responses)",
  start: (script) =>
    Effect.map(
      FakeResponses.scoped(
        typeof script === "function"
          ? (b, i) => toReply(script(b, i))
          : (_b, i) => toReply(script[i] ?? { _tag: "Error", status: 500, kind: "overloaded" })
      ),
      (server) => ({
        requests: () => server.requests.length,
        advertised: (i) =>
          (server.requests[i].body.tools ?? []).map((t: any) => ({ name: t.name, schema: t.parameters })),
        streamed: (i) => server.requests[i].body.stream === true,
        llm: (o) => llmOver(server.url, o)
      })
    )
}

contract(backend)

describe("EffectAiLlm over the Responses API", () => {
  it.scopedLive("prompt_cache_key: the same on every request of a conversation", () =>
    Effect.gen(function*() {
      const server = yield* FakeResponses.scoped(() => ({ _tag: "Text", text: "ok" }))
      const llm = yield* llmOver(server.url, {})
      const first = [Message.system("Rules."), Message.user("Plan my trip")]
      yield* llm.chat({ messages: first })
      yield* llm.chat({ messages: [...first, Message.assistant("Where to?"), Message.user("Oslo")] })
      const keys = server.requests.map((r) => r.body.prompt_cache_key)
      assert.match(keys[0], /^ere-[0-9a-f]{8}$/)
      assert.strictEqual(keys[1], keys[0])
    }))
})
