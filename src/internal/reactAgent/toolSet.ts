/**
 * The tools a run advertises: the whole toolkit, or — when it has more tools than
 * the selection threshold — the tools chosen by `selectTools` (SPEC §5).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { LlmService } from "../../Llm.js"
import type { RunEvent } from "../../RunEvent.js"
import type { Toolkit } from "../../Toolkit.js"
import type { ActiveToolSet } from "../../ToolSelection.js"
import * as ToolSelection from "../../ToolSelection.js"
import * as Usage from "../../Usage.js"

/** Every tool of the toolkit, unchanged for the whole run. */
export const fullToolSet = (toolkit: Toolkit): ActiveToolSet => ({
  advertised: () => toolkit.tools,
  definitions: toolkit.definitions,
  version: () => 0,
  resolve: toolkit.get
})

/** Selects the run's tools when the toolkit is over the threshold; never fails. */
export const setupToolSet = (options: {
  readonly toolkit: Toolkit
  readonly query: string
  readonly threshold: number
  readonly max: number
  readonly llm: LlmService
  readonly emit: (event: RunEvent) => void
}): Effect.Effect<{ readonly tools: ActiveToolSet; readonly usage: Usage.Usage }> => {
  const { toolkit } = options
  if (toolkit.size <= options.threshold) return Effect.succeed({ tools: fullToolSet(toolkit), usage: Usage.empty })
  return Effect.gen(function*() {
    options.emit({ _tag: "PhaseChange", phase: "selecting_tools", total_tools: toolkit.size })
    const selection = yield* ToolSelection.selectTools({
      query: options.query,
      toolkit,
      llm: options.llm,
      max: options.max
    })
    return { tools: ToolSelection.makeActiveToolSet(toolkit, selection.selected), usage: selection.usage }
  }).pipe(Effect.catchAllDefect(() => Effect.succeed({ tools: fullToolSet(toolkit), usage: Usage.empty })))
}
