/**
 * What a provider module needs to build an `Llm` (shared by the provider
 * modules, which are imported only when configured).
 *
 * @internal
 */
import type * as Redacted from "effect/Redacted"
import type { EffectAiLlmOptions } from "../../EffectAiLlm.js"
import type { Abilities } from "../../Llm.js"

/** The options every `Llm` takes (see `EffectAiLlmOptions`), with the connection and the prompt-cache mode. */
export interface ProviderConnection
  extends Omit<EffectAiLlmOptions, "abilities" | "promptCacheKey" | "cacheBreakpoints" | "configure" | "endpoint">
{
  readonly baseURL?: string | undefined
  readonly apiKey?: Redacted.Redacted<string> | undefined
  readonly abilities: Partial<Abilities>
  readonly promptCache: "auto" | "off"
}
