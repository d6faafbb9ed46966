/**
 * Tool selection for large tool sets (SPEC §5) and the set of tools a run
 * advertises (selected + pinned + the `request_tools` meta-tool).
 *
 * CONTRACT (implementation in progress): the loop calls `selectTools` once before
 * its first iteration when the toolkit has more than `threshold` tools, then uses
 * `makeActiveToolSet` for everything it advertises and every name it resolves.
 *
 * @since 0.1.0
 */
import type * as Effect from "effect/Effect"
import type { LlmService, ToolDefinition } from "./Llm.js"
import type { Tool } from "./Tool.js"
import type { Toolkit } from "./Toolkit.js"
import type { Usage } from "./Usage.js"

/** @since 0.1.0 @category models */
export interface SelectToolsOptions {
  readonly query: string
  readonly toolkit: Toolkit
  /** The model that selects (the `fast` model). */
  readonly llm: LlmService
  /** At most this many tools (default 6). */
  readonly max?: number
}

/** @since 0.1.0 @category models */
export interface Selection {
  /** Selected tool names, or `null` when selection failed and the full set applies. */
  readonly selected: ReadonlyArray<string> | null
  readonly usage: Usage
  readonly llmCalls: number
  /** Why the full set is used (when `selected` is null). */
  readonly fallbackReason?: string
}

/** Runs the selection call; never fails (every failure falls back to the full set). @since 0.1.0 @category models */
export type SelectTools = (options: SelectToolsOptions) => Effect.Effect<Selection>

/** @since 0.1.0 @category models */
export interface ActiveToolSet {
  /** Tools to advertise now (includes `request_tools` while some tools are not loaded). */
  readonly advertised: () => ReadonlyArray<Tool>
  /** OpenAI definitions of `advertised()` (memoized per version). */
  readonly definitions: () => ReadonlyArray<ToolDefinition>
  /** Increments whenever the advertised set changes (JSON mode rebuilds its system prompt). */
  readonly version: () => number
  /**
   * Resolves a tool name for execution: an advertised tool, `request_tools`, or a
   * registered-but-unselected tool (which is loaded as a side effect). Unknown → undefined.
   */
  readonly resolve: (name: string) => Tool | undefined
}
