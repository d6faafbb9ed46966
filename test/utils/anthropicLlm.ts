/**
 * `EffectAiLlm` over the real `@effect/ai-anthropic` client talking to a fake
 * Messages API at `url` (tests and benchmarks).
 */
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import { NodeHttpClient } from "@effect/platform-node"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import * as EffectAiLlm from "../../src/EffectAiLlm.js"
import type { LlmService } from "../../src/Llm.js"

/** The real client over the fake, as an `Llm`. */
export const anthropicLlm = (
  url: string,
  options?: Partial<EffectAiLlm.EffectAiLlmOptions>
): Effect.Effect<LlmService, never, Scope.Scope> =>
  // the HTTP client lives as long as the caller's scope (Effect.provide of a layer would close it at once)
  Effect.flatMap(
    Layer.build(
      AnthropicClient.layer({ apiKey: Redacted.make("sk-ant-test"), apiUrl: url }).pipe(
        Layer.provide(NodeHttpClient.layerUndici)
      )
    ),
    (context) =>
      AnthropicLanguageModel.make({ model: "claude-test" }).pipe(
        Effect.map((model) =>
          EffectAiLlm.makeUnsafe(model, {
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
      )
  )
