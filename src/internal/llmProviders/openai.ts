/**
 * `LLM_PROVIDER=openai`: `EffectAiLlm` over `@effect/ai-openai` (the Responses
 * API; imported only when configured). The base URL includes `/v1`.
 *
 * @internal
 */
import { OpenAiClient, OpenAiLanguageModel } from "@effect/ai-openai"
import * as FetchHttpClient from "@effect/platform/FetchHttpClient"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import * as EffectAiLlm from "../../EffectAiLlm.js"
import type { LlmService } from "../../Llm.js"
import type { ProviderConnection } from "./connection.js"

export const make = (c: ProviderConnection): Effect.Effect<LlmService, never, Scope.Scope> =>
  Effect.gen(function*() {
    const client = yield* Layer.build(
      OpenAiClient.layer({ apiKey: c.apiKey, apiUrl: c.baseURL }).pipe(Layer.provide(FetchHttpClient.layer))
    )
    const model = yield* OpenAiLanguageModel.make({ model: c.model }).pipe(Effect.provide(client))
    return EffectAiLlm.makeUnsafe(model, {
      model: c.model,
      abilities: c.abilities,
      contextSize: c.contextSize,
      maxOutputTokens: c.maxOutputTokens,
      maxRetries: c.maxRetries,
      retryBaseDelay: c.retryBaseDelay,
      timeout: c.timeout,
      totalTimeout: c.totalTimeout,
      temperature: c.temperature,
      inputModalities: c.inputModalities,
      attachments: c.attachments,
      promptCacheKey: c.promptCache === "auto",
      endpoint: c.baseURL ?? "https://api.openai.com/v1",
      configure: (s) =>
        OpenAiLanguageModel.withConfigOverride({
          ...(s.temperature !== undefined ? { temperature: s.temperature } : {}),
          ...(s.maxTokens !== undefined ? { max_output_tokens: s.maxTokens } : {}),
          ...(s.promptCacheKey !== undefined ? { prompt_cache_key: s.promptCacheKey } : {})
        })
    })
  })
