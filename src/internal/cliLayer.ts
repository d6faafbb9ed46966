/**
 * The CLI's services: the same composition as the server (`App.make`), on the
 * configured LLM, or on the offline demo model when no `LLM_MODEL` is set.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as App from "../App.js"
import * as DemoLlm from "../DemoLlm.js"

/** @internal */
export const layer = Layer.unwrapEffect(
  Effect.map(App.isDemo, (demo) => App.make(demo ? DemoLlm.layer : App.LlmLayer, { demo }))
)
