/**
 * `LLM_PROVIDER=anthropic`: `EffectAiLlm` over `@effect/ai-anthropic` (imported
 * only when configured). The base URL is the API origin, without `/v1` (the
 * client appends `/v1/messages`).
 *
 * @internal
 */
import { AnthropicClient, AnthropicLanguageModel } from "@effect/ai-anthropic"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as EffectAiLlm from "../../EffectAiLlm.js"
import type { LlmService } from "../../Llm.js"
import type { ProviderConnection } from "./connection.js"

/** Anthropic's default output cap for a request when none is configured. */
export const DEFAULT_MAX_TOKENS = 8192

export const make = (c: ProviderConnection): Effect.Effect<LlmService, never, Scope.Scope> =>
  Effect.gen(function*() {
    const client = yield* Layer.build(
      AnthropicClient.layer({ apiKey: c.apiKey, apiUrl: c.baseURL }).pipe(Layer.provide(FetchHttpClient.layer))
    )
    const maxTokens = c.maxOutputTokens ?? DEFAULT_MAX_TOKENS
    const model = yield* AnthropicLanguageModel.make({ model: c.model, config: { max_tokens: maxTokens } }).pipe(
      Effect.provide(client)
    )
    return EffectAiLlm.makeUnsafe(model, {
      model: c.model,
      abilities: c.abilities,
      contextSize: c.contextSize ?? 200_000,
      maxOutputTokens: maxTokens,
      maxRetries: c.maxRetries,
      retryBaseDelay: c.retryBaseDelay,
      timeout: c.timeout,
      totalTimeout: c.totalTimeout,
      temperature: c.temperature,
      inputModalities: c.inputModalities,
      attachments: c.attachments,
      cacheBreakpoints: c.promptCache === "auto" ? "anthropic" : "none",
      endpoint: c.baseURL ?? "https://api.anthropic.com",
      configure: (s) =>
        AnthropicLanguageModel.withConfigOverride({
          ...(s.temperature !== undefined ? { temperature: s.temperature } : {}),
          ...(s.maxTokens !== undefined ? { max_tokens: s.maxTokens } : {})
        })
    })
  })
