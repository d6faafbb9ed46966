/**
 * `EffectAiLlm` over the real `@effect/ai-anthropic` client and the fake
 * Anthropic Messages API: the shared `Llm` contract, and what is Anthropic's own
 * (wire shape, thinking, stream errors, cache usage).
 */
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import { NodeHttpClient } from "@effect/platform-node"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as EffectAiLlm from "../src/EffectAiLlm.js"
import type { LlmService } from "../src/Llm.js"
import * as FakeAnthropic from "./utils/fakeAnthropicServer.js"
import type { ContractBackend, ContractReply } from "./utils/llmContract.js"
import { contract } from "./utils/llmContract.js"

/** The real client over the fake, as an `Llm`. */
export const anthropicLlm = (
  url: string,
  options?: Partial<EffectAiLlm.EffectAiLlmOptions>
): Effect.Effect<LlmService, never, Scope.Scope> =>
  // the HTTP client lives as long as the caller's scope (Effect.provide of a layer would close it at once)
  Effect.flatMap(
    Layer.build(AnthropicClient.layer({ apiKey: Redacted.make("sk-ant-test"), apiUrl: url }).pipe(Layer.provide(NodeHttpClient.layerUndici))),
    (context) => AnthropicLanguageModel.make({ model: "claude-test" }).pipe(
    Effect.map((model) =>
      EffectAiLlm.make(model, {
        model: "claude-test",
        retryBaseDelay: "5 millis",
        cacheBreakpoints: "anthropic",
        configure: (s) =>
          AnthropicLanguageModel.withConfigOverride({
            ...(s.temperature !== undefined ? { temperature: s.temperature } : {}),
            ...(s.maxTokens !== undefined ? { max_tokens: s.maxTokens } : {})
          }),
        ...options
      })
    ),
    Effect.provide(context)
  ))

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
          return FakeAnthropic.error(r.status, "rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit", headers)
        case "overloaded":
          return FakeAnthropic.error(r.status, "overloaded_error", "Overloaded")
        case "overflow":
          return FakeAnthropic.error(r.status, "invalid_request_error", "prompt is too long: 213456 tokens > 200000 maximum")
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
        advertised: (i) => (server.requests[i].body.tools ?? []).map((t: any) => ({ name: t.name, schema: t.input_schema })),
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
