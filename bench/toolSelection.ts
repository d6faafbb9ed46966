/**
 * Tool selection benchmark: what the tool definitions cost per loop
 * LLM call with the 40-tool catalogue, with and without selection, and what the
 * selection call itself costs. Token figures use the engine's estimator
 * (`estimateText(JSON.stringify(definitions))`), the same one the context guard
 * uses; engine CPU time is measured on a zero-latency scripted model.
 *
 *   npx tsx bench/toolSelection.ts
 *
 * @since 0.1.0
 */
import { Effect } from "effect"
import {
  ScriptedLlm,
  TokenEstimator as TokenEstimatorModule,
  ToolSelection as ToolSelectionModule
} from "effect-react-engine"
import { pathToFileURL } from "node:url"
import { catalogueToolkit } from "../test/utils/catalogue.js"

const { estimateMessages, estimateText } = TokenEstimatorModule
const { makeActiveToolSet, selectTools } = ToolSelectionModule

/** @since 0.1.0 */
export interface ToolSelectionFigures {
  readonly totalTools: number
  readonly pinnedTools: number
  readonly selected: ReadonlyArray<string>
  /** Tokens of the tool definitions sent with every loop call, all 40 tools. */
  readonly fullDefinitionTokens: number
  /** Same with selection: selected + pinned + `request_tools`. */
  readonly selectedDefinitionTokens: number
  /** Of which the `request_tools` meta-tool. */
  readonly requestToolsTokens: number
  readonly savedPerCall: number
  /** The selection call's prompt: messages + the forced `select_tools` definition. */
  readonly selectorPromptTokens: number
  /** Loop calls after which selection has paid for itself. */
  readonly breakEvenCalls: number
  /** Engine CPU time of one selection (catalogue, call, decode, active set), µs, median. */
  readonly selectionMicros: number
}

const query =
  "Find recent news about the Rust 2024 edition, read the release notes page and save a summary to notes/rust.md"
const chosen = ["web_search", "fetch_url", "extract_links", "read_file", "write_file", "create_document"]

const tokensOf = (value: unknown) => estimateText(JSON.stringify(value))

/** Runs the measurements and returns the figures. @since 0.1.0 */
export const run = async (options: { readonly samples?: number } = {}): Promise<ToolSelectionFigures> => {
  const toolkit = catalogueToolkit
  const full = makeActiveToolSet(toolkit, null)
  const fullDefinitionTokens = tokensOf(full.definitions())

  const llm = ScriptedLlm.makeUnsafe([ScriptedLlm.toolCall("select_tools", { tools: chosen })], {
    onExhausted: "repeatLast"
  })
  const selection = await Effect.runPromise(selectTools({ query, toolkit, llm: llm.service, max: 6 }))
  if (selection.selected === null) throw new Error(`selection fell back: ${selection.fallbackReason}`)
  const request = llm.requests[0].request
  const selectorPromptTokens = estimateMessages(request.messages) + tokensOf(request.tools ?? [])

  const active = makeActiveToolSet(toolkit, selection.selected)
  const definitions = active.definitions()
  const selectedDefinitionTokens = tokensOf(definitions)
  const requestToolsTokens = tokensOf(definitions.filter((d) => d.function.name === "request_tools"))
  const savedPerCall = fullDefinitionTokens - selectedDefinitionTokens

  // engine CPU per selection on a zero-latency model (recording off)
  const quiet = ScriptedLlm.makeUnsafe([ScriptedLlm.toolCall("select_tools", { tools: chosen })], {
    onExhausted: "repeatLast",
    record: false
  })
  const once = selectTools({ query, toolkit, llm: quiet.service, max: 6 }).pipe(
    Effect.map((s) => makeActiveToolSet(toolkit, s.selected).definitions())
  )
  const samples = options.samples ?? 300
  for (let i = 0; i < 50; i++) Effect.runSync(once)
  const times: Array<number> = []
  for (let i = 0; i < samples; i++) {
    const t0 = process.hrtime.bigint()
    Effect.runSync(once)
    times.push(Number(process.hrtime.bigint() - t0) / 1000)
  }
  times.sort((a, b) => a - b)

  return {
    totalTools: toolkit.size,
    pinnedTools: toolkit.tools.filter((t) => t.pinned).length,
    selected: selection.selected,
    fullDefinitionTokens,
    selectedDefinitionTokens,
    requestToolsTokens,
    savedPerCall,
    selectorPromptTokens,
    breakEvenCalls: Math.ceil(selectorPromptTokens / Math.max(1, savedPerCall)),
    selectionMicros: Math.round(times[Math.floor(times.length / 2)])
  }
}

/** A Markdown table of the figures. @since 0.1.0 */
export const render = (f: ToolSelectionFigures): string => {
  const rows: Array<[string, string]> = [
    [`Tool definitions per loop call, all ${f.totalTools} tools`, `${f.fullDefinitionTokens} tokens`],
    [
      `Tool definitions per loop call, with selection (${f.selected.length} selected + ${f.pinnedTools} pinned + request_tools)`,
      `${f.selectedDefinitionTokens} tokens (request_tools: ${f.requestToolsTokens})`
    ],
    [
      "Saved per loop call",
      `${f.savedPerCall} tokens (${Math.round((100 * f.savedPerCall) / f.fullDefinitionTokens)} %)`
    ],
    [
      "Selection call prompt (catalogue + query + select_tools schema)",
      `${f.selectorPromptTokens} tokens, once per run`
    ],
    ["Break-even", `${f.breakEvenCalls} loop call(s)`],
    ["Engine CPU per selection (zero-latency model, median)", `${f.selectionMicros} µs`]
  ]
  return ["| Measure | Value |", "|---|---|", ...rows.map(([a, b]) => `| ${a} | ${b} |`)].join("\n")
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run().then((figures) => {
    console.log("Tool selection (40-tool catalogue)\n")
    console.log(render(figures))
  })
}
