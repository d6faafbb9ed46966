/**
 * The tools a run advertises: the whole toolkit, or — when it has more tools
 * than the selection threshold — the tools a selection call chose (plus pinned
 * tools and the `request_tools` meta-tool).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { LlmService } from "../../Llm.js"
import type { RunJournal } from "../../RunJournal.js"
import type { ToolkitService } from "../../Toolkit.js"
import type { ActiveToolSet } from "../../ToolSelection.js"
import * as ToolSelection from "../../ToolSelection.js"
import * as Usage from "../../Usage.js"

/** A selection as a durable run stores it. */
const StoredSelection = Schema.Struct({
  selected: Schema.NullOr(Schema.Array(Schema.String)),
  usage: Usage.Usage
})

/** Selects the run's tools when the toolkit is over the threshold; never fails (a failure means every tool). */
export const setupToolSet = (options: {
  readonly toolkit: ToolkitService
  readonly query: string
  readonly threshold: number
  readonly max: number
  readonly llm: LlmService
  readonly journal: RunJournal
}): Effect.Effect<{ readonly tools: ActiveToolSet; readonly usage: Usage.Usage }> => {
  const { journal, toolkit } = options
  if (toolkit.size <= options.threshold) {
    return Effect.succeed({ tools: ToolSelection.makeActiveToolSet(toolkit, null), usage: Usage.empty })
  }
  return Effect.zipRight(
    journal.emit({ _tag: "PhaseChange", phase: "selecting_tools", total_tools: toolkit.size }),
    journal.activity({
      name: "selection",
      success: StoredSelection,
      execute: () =>
        ToolSelection.selectTools({ query: options.query, toolkit, llm: options.llm, max: options.max }).pipe(
          Effect.map((s) => ({ selected: s.selected, usage: s.usage })),
          Effect.catchAllDefect(() => Effect.succeed({ selected: null, usage: Usage.empty }))
        )
    })
  ).pipe(Effect.map((s) => ({ tools: ToolSelection.makeActiveToolSet(toolkit, s.selected), usage: s.usage })))
}
