/**
 * Tool selection for large tool sets and the set of tools a run
 * advertises (selected + pinned + the `request_tools` meta-tool).
 *
 * CONTRACT: the loop calls `selectTools` once before its first iteration when the
 * toolkit has more than `threshold` tools, then uses `makeActiveToolSet` for
 * everything it advertises and every name it resolves.
 *
 * Selection is one `structuredCall` (schema `{ tools: string[] }`) over a compact
 * catalogue — one line per tool, `- name: description` with the description cut
 * to 80 characters, no schemas — and the query. Every failure (no parseable
 * answer, an empty list, only unknown names, an LLM error, a defect) falls back
 * to the full tool set: selection never stops a run. See docs/context.md.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as active from "./internal/toolSelection/active.js"
import * as prompt from "./internal/toolSelection/prompt.js"
import type { LlmService, ToolDefinition } from "./Llm.js"
import { structuredCallWith } from "./StructuredCall.js"
import type { Tool } from "./Tool.js"
import type { ToolkitService } from "./Toolkit.js"
import * as UsageModule from "./Usage.js"

type Usage = UsageModule.Usage

/**
 * @since 0.1.0
 * @category models
 */
export interface SelectToolsOptions {
  readonly query: string
  readonly toolkit: ToolkitService
  /** The model that selects (the `fast` model). */
  readonly llm: LlmService
  /** At most this many tools (default 6). */
  readonly max?: number
}

/**
 * @since 0.1.0
 * @category models
 */
export interface Selection {
  /** Selected tool names, or `null` when selection failed and the full set applies. */
  readonly selected: ReadonlyArray<string> | null
  readonly usage: Usage
  readonly llmCalls: number
  /** Why the full set is used (when `selected` is null). */
  readonly fallbackReason?: string
}

/**
 * Runs the selection call; never fails (every failure falls back to the full set).
 *
 * @since 0.1.0
 * @category models
 */
export type SelectTools = (options: SelectToolsOptions) => Effect.Effect<Selection>

/**
 * @since 0.1.0
 * @category models
 */
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

// ---------------------------------------------------------------------------
// implementation

/**
 * Tool selection runs when more than this many tools are registered.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_THRESHOLD = 12
/**
 * At most this many tools are selected.
 *
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_MAX = 6
/**
 * The name of the meta-tool that loads unselected tools.
 *
 * @since 0.1.0
 * @category constants
 */
export const REQUEST_TOOLS: string = active.REQUEST_TOOLS

/**
 * Does a toolkit of this size call for selection?
 *
 * @since 0.1.0
 * @category utils
 */
export const shouldSelect = (toolkit: ToolkitService, threshold: number = DEFAULT_THRESHOLD): boolean =>
  toolkit.size > threshold

/**
 * One catalogue line: `- name: description`, the description on one line and cut
 * to 80 characters ("..." included when cut).
 *
 * @since 0.1.0
 * @category utils
 */
export const catalogueLine: (tool: Tool) => string = prompt.catalogueLine

/**
 * The compact catalogue of the selectable (unpinned) tools.
 *
 * @since 0.1.0
 * @category utils
 */
export const catalogue = (toolkit: ToolkitService): string => prompt.catalogue(selectable(toolkit))

/**
 * The messages of the selection call.
 *
 * @since 0.1.0
 * @category utils
 */
export const selectionMessages = (query: string, toolkit: ToolkitService, max: number = DEFAULT_MAX) =>
  prompt.selectionMessages(query, selectable(toolkit), max)

/** Pinned tools are always advertised: they are not offered to the selector. */
const selectable = (toolkit: ToolkitService): ReadonlyArray<Tool> => toolkit.tools.filter((t) => !t.pinned)

/**
 * The selector's answer.
 *
 * @since 0.1.0
 * @category models
 */
export const SelectionSchema = Schema.Struct({ tools: Schema.Array(Schema.String) })

const escape = (name: string) => name.replace(/[-]/g, "\\$&")

/**
 * For plain-text replies without a JSON object: the catalogue names the reply
 * mentions, in order of appearance.
 */
const mentionedNames = (tools: ReadonlyArray<Tool>) => {
  const pattern = tools.length === 0
    ? undefined
    : new RegExp(
      `(?<![A-Za-z0-9_-])(${
        [...tools].map((t) => t.name).sort((a, b) => b.length - a.length).map(escape).join("|")
      })(?![A-Za-z0-9_-])`,
      "g"
    )
  return (text: string): unknown => {
    if (pattern === undefined) return undefined
    const found = [...text.matchAll(pattern)].map((m) => m[1])
    return found.length > 0 ? { tools: found } : undefined
  }
}

/**
 * Keeps the known selectable names, in the model's order, deduplicated, at most
 * `max`; exact names first, then a case-insensitive match.
 *
 * @since 0.1.0
 * @category utils
 */
export const knownNames = (names: ReadonlyArray<string>, tools: ReadonlyArray<Tool>, max: number): Array<string> => {
  const exact = new Set(tools.map((t) => t.name))
  const lower = new Map(tools.map((t) => [t.name.toLowerCase(), t.name]))
  const out: Array<string> = []
  for (const raw of names) {
    if (out.length >= max) break
    const name = raw.trim()
    const known = exact.has(name) ? name : lower.get(name.toLowerCase())
    if (known !== undefined && !out.includes(known)) out.push(known)
  }
  return out
}

const fallback = (reason: string, usage: Usage, llmCalls: number): Selection => ({
  selected: null,
  usage,
  llmCalls,
  fallbackReason: reason
})

/**
 * Runs the selection call with `options.llm` (the `fast` model). Never fails:
 * every failure yields `selected: null` and a `fallbackReason`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const selectTools: SelectTools = (options) =>
  Effect.suspend(() => {
    const max = Number.isFinite(options.max) && (options.max ?? 0) >= 1 ? Math.floor(options.max!) : DEFAULT_MAX
    const tools = selectable(options.toolkit)
    if (tools.length === 0) return Effect.succeed(fallback("no selectable tools", UsageModule.empty, 0))
    return structuredCallWith(options.llm, {
      messages: prompt.selectionMessages(options.query, tools, max),
      schema: SelectionSchema,
      functionName: prompt.FUNCTION_NAME,
      functionDescription: prompt.FUNCTION_DESCRIPTION,
      regexFallback: mentionedNames(tools),
      phase: "selection"
    }).pipe(
      Effect.map((result): Selection => {
        if (result.value.tools.length === 0) {
          return fallback("the selector returned no tools", result.usage, result.llmCalls)
        }
        const selected = knownNames(result.value.tools, tools, max)
        if (selected.length === 0) {
          return fallback(
            `the selector returned only unknown tool names: ${result.value.tools.slice(0, 10).join(", ")}`,
            result.usage,
            result.llmCalls
          )
        }
        return { selected, usage: result.usage, llmCalls: result.llmCalls }
      }),
      Effect.catchTag("StructuredOutputError", (error) =>
        Effect.succeed(
          fallback(`no usable selection: ${error.message}`, error.usage ?? UsageModule.empty, error.llmCalls)
        )),
      Effect.catchAllDefect((defect) =>
        Effect.succeed(fallback(`selection failed: ${String(defect)}`, UsageModule.empty, 0))
      ),
      Effect.tap((selection) =>
        selection.selected === null
          ? Effect.logWarning(
            `Tool selection fell back to all ${options.toolkit.size} tools: ${selection.fallbackReason}`
          )
          : Effect.void
      ),
      Effect.withSpan("tool_selection", {
        attributes: {
          "react_engine.tools.total": options.toolkit.size,
          "react_engine.tools.max": max,
          "gen_ai.request.model": options.llm.model
        },
        captureStackTrace: false
      })
    )
  })

/**
 * The tools a run advertises. With a selection: the selected and pinned tools,
 * plus `request_tools` while some registered tools are not loaded; resolving a
 * registered but unselected tool loads it. With `null`: every tool, no meta-tool.
 *
 * @since 0.1.0
 * @category constructors
 */
export const makeActiveToolSet: (toolkit: ToolkitService, selected: ReadonlyArray<string> | null) => ActiveToolSet =
  active.make
