/**
 * What a provider module needs to build an `Llm` (shared by the provider
 * modules, which are imported only when configured).
 *
 * @internal
 */
import type * as Duration from "effect/Duration"
import type * as Redacted from "effect/Redacted"
import type { Abilities } from "../../Llm.js"

export interface ProviderConnection {
  readonly model: string
  readonly baseURL?: string | undefined
  readonly apiKey?: Redacted.Redacted<string> | undefined
  readonly temperature?: number | undefined
  readonly abilities: Partial<Abilities>
  readonly contextSize?: number | undefined
  readonly maxOutputTokens?: number | undefined
  readonly maxRetries?: number | undefined
  readonly retryBaseDelay?: Duration.DurationInput | undefined
  readonly timeout?: Duration.DurationInput | undefined
  readonly totalTimeout?: Duration.DurationInput | undefined
  readonly promptCache: "auto" | "off"
}
