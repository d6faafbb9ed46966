/**
 * The agent the example eval suite (examples/evals/) runs on, in process: the offline demo
 * model with no delays and the built-in tools, as `npm run eval` has them with no LLM_* set.
 */
import type * as ConfigError from "effect/ConfigError"
import * as Layer from "effect/Layer"
import * as BuiltinTools from "../../src/BuiltinTools.js"
import * as ContextGuard from "../../src/ContextGuard.js"
import * as DemoLlm from "../../src/DemoLlm.js"
import * as Hooks from "../../src/Hooks.js"
import * as Interrupts from "../../src/Interrupts.js"
import * as ReactAgent from "../../src/ReactAgent.js"
import * as Toolkit from "../../src/Toolkit.js"

export const demoLlm = DemoLlm.makeUnsafe({ thinkDelay: 0, chunkDelay: 0 })

export const demoAgentLayer: Layer.Layer<ReactAgent.ReactAgent, ConfigError.ConfigError> = ReactAgent.layer().pipe(
  Layer.provide(Layer.mergeAll(
    DemoLlm.layer({ thinkDelay: 0, chunkDelay: 0 }),
    Toolkit.layer(BuiltinTools.tools),
    Hooks.layerNoop,
    ContextGuard.layer(),
    Interrupts.layerMemory
  ))
)
