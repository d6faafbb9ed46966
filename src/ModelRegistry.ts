/**
 * Named models: `main` and `fast` (which falls back to `main`), resolved by hint.
 *
 * CONTRACT; layers are built by the LLM work (config-based) — see OpenAiLlm.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { LlmService } from "./Llm.js"
import { Llm } from "./Llm.js"

/** @since 0.1.0 @category models */
export interface ModelRegistryService {
  readonly main: LlmService
  /** The fast model, or `main` when none is configured. */
  readonly fast: LlmService
  readonly hasFast: boolean
  /** Resolves a hint (`main`, `fast`, or another registered name) to a model; unknown hints give `main`. */
  readonly resolve: (hint?: string) => LlmService
  readonly names: ReadonlyArray<string>
}

/** @since 0.1.0 @category constructors */
export const make = (models: { readonly main: LlmService; readonly fast?: LlmService; readonly [name: string]: LlmService | undefined }): ModelRegistryService => {
  const table = new Map<string, LlmService>()
  for (const [name, llm] of Object.entries(models)) if (llm) table.set(name, llm)
  const fast = models.fast ?? models.main
  return {
    main: models.main,
    fast,
    hasFast: models.fast !== undefined,
    resolve: (hint) => (hint === "fast" ? fast : (hint && table.get(hint)) || models.main),
    names: [...table.keys()]
  }
}

/** @since 0.1.0 @category Context */
export class ModelRegistry extends Context.Tag("react-engine/ModelRegistry")<ModelRegistry, ModelRegistryService>() {
  /** A registry with the `Llm` in context as `main` (and as `fast`). @since 0.1.0 */
  static readonly fromLlm: Layer.Layer<ModelRegistry, never, Llm> = Layer.effect(
    ModelRegistry,
    Effect.map(Llm, (main) => make({ main }))
  )
  /** @since 0.1.0 */
  static readonly layer = (models: Parameters<typeof make>[0]): Layer.Layer<ModelRegistry> =>
    Layer.succeed(ModelRegistry, make(models))
}
