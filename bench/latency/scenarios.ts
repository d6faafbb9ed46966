/**
 * The latency benchmark's scenarios and the fake model's behaviour.
 *
 * The model is driven by the request alone (which tools are offered, whether a
 * function is forced, how many tool results the conversation already holds, the
 * question), never by a per-engine script, so every engine meets the same model:
 *
 * - a forced `select_tools` call (our engine's tool selection, a `structuredCall`
 *   at its native level) is answered with the scenario's relevant tool, `lookup`;
 *   the same request in JSON mode (the `select_tools` instruction in the system
 *   prompt, no tools) gets the same object as text;
 * - a request offering `lookup` gets one `lookup` call while the conversation holds
 *   fewer tool results than the question needs, else the answer text;
 * - a request offering no tools gets the answer text; it is labelled `synthesis`
 *   when its system prompt asks for the final answer (our answer-synthesis call),
 *   for the per-run call breakdown only: the reply is the same.
 *
 * @since 0.1.0
 */
import { Tool } from "effect-react-engine"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { catalogueTools } from "../../test/utils/catalogue.js"

/** The answer every scenario ends with: 60 tokens as the fake provider counts them (one per word). @since 0.1.0 */
export const ANSWER =
  "Both records are in good order. Record 1 is active and was last updated on 2 March 2026; record 2 is active as well and was updated on 5 March. Neither record has open issues or pending changes, so nothing needs doing now. If you like, I can check their audit history or remind you to review them next month."

/** @since 0.1.0 */
export const LOOKUP = "lookup"

/** The function name of our engine's tool-selection call (src/internal/toolSelection/prompt.ts). */
const SELECT_TOOLS = "select_tools"

/** @since 0.1.0 */
export const SYSTEM_PROMPT = "You are a helpful assistant. Use the tools when they help, then answer the user."

/** @since 0.1.0 */
export interface LatencyScenario {
  readonly id: "a" | "b" | "c"
  readonly title: string
  readonly query: string
  /** `lookup` calls the model makes, one per turn, before it answers. */
  readonly rounds: number
  /** The tools every engine is given (the same definitions for all). */
  readonly tools: ReadonlyArray<Tool.Tool>
}

/** `lookup(index)`: the tool of every scenario. @since 0.1.0 */
export const lookupTool: Tool.Tool = Tool.make({
  name: LOOKUP,
  description: "Looks up one record by its index and returns its status.",
  parameters: Schema.Struct({ index: Schema.Number }),
  handler: (args) => Effect.sync(() => lookupResult(args.index))
})

/** What `lookup` returns (peers call this too). @since 0.1.0 */
export const lookupResult = (index: number): string =>
  `record ${index}: status active, updated 2026-03-0${index % 10}, no open issues`

/** 20 tools: `lookup` and 19 unpinned tools of test/utils/catalogue.ts (above our selection threshold of 12). */
const catalogue20: ReadonlyArray<Tool.Tool> = [lookupTool, ...catalogueTools.filter((t) => !t.pinned).slice(0, 19)]

const NO_TOOLS_QUERY =
  "Are records 1 and 2 in good order? Answer from what you already know, without looking anything up."
const TWO_ROUNDS_QUERY = "Look up record 1, then record 2, and tell me whether they are in good order."

/** @since 0.1.0 */
export const scenarios: ReadonlyArray<LatencyScenario> = [
  { id: "a", title: "(a) answer without tools", query: NO_TOOLS_QUERY, rounds: 0, tools: [lookupTool] },
  { id: "b", title: "(b) two tool rounds, then the answer", query: TWO_ROUNDS_QUERY, rounds: 2, tools: [lookupTool] },
  { id: "c", title: "(c) as (b), 20-tool catalogue", query: TWO_ROUNDS_QUERY, rounds: 2, tools: catalogue20 }
]

// ---------------------------------------------------------------------------
// The model's behaviour

/** A tool call the model makes. @since 0.1.0 */
export interface PlannedCall {
  readonly id: string
  readonly name: string
  readonly arguments: string
}

/** What the model replies, and why (for the per-run call breakdown). @since 0.1.0 */
export type Plan =
  | { readonly kind: "selection"; readonly content?: string; readonly toolCalls?: ReadonlyArray<PlannedCall> }
  | { readonly kind: "tool"; readonly toolCalls: ReadonlyArray<PlannedCall> }
  | { readonly kind: "answer" | "synthesis"; readonly content: string }

/** @since 0.1.0 */
export type PlanKind = Plan["kind"]

const textOf = (content: unknown): string => {
  if (typeof content === "string") return content
  if (Array.isArray(content)) {
    return content.map((p) => (p && typeof p === "object" && typeof p.text === "string" ? p.text : "")).join("")
  }
  return ""
}

/** The number of `lookup` rounds the conversation's question needs (by its text). */
const roundsFor = (messages: ReadonlyArray<any>): number => {
  const question = textOf(messages.find((m) => m?.role === "user")?.content)
  return scenarios.find((s) => question.includes(s.query))?.rounds ?? 0
}

let callSeq = 0

/**
 * The model: a reply plan for one chat-completions request body. Throws on a
 * request it does not expect (the server answers 400, the run fails verification).
 *
 * @since 0.1.0
 */
export const behaviour = (body: any): Plan => {
  const messages: ReadonlyArray<any> = Array.isArray(body?.messages) ? body.messages : []
  const tools: ReadonlyArray<any> = Array.isArray(body?.tools) ? body.tools : []
  const offered = new Set(tools.map((t) => t?.function?.name))
  const forced: unknown = body?.tool_choice?.function?.name
  const selection = JSON.stringify({ tools: [LOOKUP] })
  if (forced === SELECT_TOOLS) {
    return { kind: "selection", toolCalls: [{ id: `call_sel_${++callSeq}`, name: SELECT_TOOLS, arguments: selection }] }
  }
  if (forced !== undefined) throw new Error(`unexpected forced function ${String(forced)}`)
  const system = messages.filter((m) => m?.role === "system").map((m) => textOf(m.content)).join("\n")
  if (tools.length === 0 && system.includes(`\`${SELECT_TOOLS}\``)) return { kind: "selection", content: selection }
  if (offered.has(LOOKUP)) {
    const done = messages.filter((m) => m?.role === "tool").length
    if (done < roundsFor(messages)) {
      return {
        kind: "tool",
        toolCalls: [{ id: `call_${++callSeq}`, name: LOOKUP, arguments: JSON.stringify({ index: done + 1 }) }]
      }
    }
  }
  const synthesis = tools.length === 0 && /write the final answer/i.test(system)
  return { kind: synthesis ? "synthesis" : "answer", content: ANSWER }
}
