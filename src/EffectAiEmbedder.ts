/**
 * The `@effect/ai` `EmbeddingModel` in context as the run's embedder (subpath
 * `effect-react-engine/EffectAiEmbedder`, apart from the main entry: `@effect/ai`
 * is an optional peer dependency, and this module's types name it).
 *
 * @since 0.1.0
 */
import * as EmbeddingModel from "@effect/ai/EmbeddingModel"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Embedder from "./Embedder.js"

/**
 * The `EmbeddingModel` in context as the embedder; `model` names it (it is
 * stored with each vector).
 *
 * @since 0.1.0
 * @category layers
 */
export const layer = (
  options: { readonly model: string }
): Layer.Layer<Embedder.Embedder, never, EmbeddingModel.EmbeddingModel> =>
  Layer.effect(
    Embedder.Embedder,
    Effect.map(EmbeddingModel.EmbeddingModel, (model) => Embedder.fromEmbeddingModel(model, options))
  )
