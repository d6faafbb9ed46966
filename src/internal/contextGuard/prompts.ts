/**
 * Compaction prompts (one per hint) and the transcript the compaction model reads.
 *
 * @internal
 */
import type { CompactHint } from "../../ContextGuard.js"
import type { ChatRequest } from "../../Llm.js"
import type { ChatMessage, Content } from "../../Message.js"
import { estimateText } from "../../TokenEstimator.js"
import type { Unit } from "./compact.js"

const COMMON = [
  "You compress the earlier part of a conversation so that it can continue with less context.",
  "Write the summary in the same language as the conversation.",
  "Keep exactly as written: numbers, amounts, dates, identifiers (ids, names, URLs, file paths, commands),",
  "error messages and every fact or requirement the user stated. Never invent or guess anything.",
  "Be concise: no preamble, no advice, no addressing the user; output only the summary."
].join(" ")

/** The hint-specific part of the compaction instructions. @internal */
export const HINT_PROMPTS: Readonly<Record<CompactHint, string>> = {
  react_iteration: [
    "The conversation is a tool-using agent's working session: its reasoning, the tools it called and their results.",
    "Keep the reasoning chain: the goal, each tool called with its key arguments and what it returned",
    "(the facts found, with their exact values), what failed and why, what has already been tried",
    "(so it is not repeated), and what remains to be done."
  ].join(" "),
  planner_input: [
    "The summary is the input of a planner that will break the user's request into steps.",
    "Keep the user's goals, constraints, preferences and acceptance criteria, decisions already made,",
    "and the information and resources already available; drop small talk."
  ].join(" "),
  step_dependency: [
    "The summary carries the results of earlier steps of a plan to the steps that depend on them.",
    "For each step, keep its outcome (success or failure and why) and every result a later step may need:",
    "data, figures, lists, ids, paths. Use a short list, one entry per step."
  ].join(" "),
  general: [
    "Keep the topics discussed, the user's requests and preferences, the decisions and answers given,",
    "and the questions still open."
  ].join(" ")
}

/** The system prompt of a compaction call. @internal */
export const systemPrompt = (hint: CompactHint, summaryTokens: number): string =>
  `${COMMON}\n\n${HINT_PROMPTS[hint]}\n\nStay under about ${summaryTokens} tokens.`

const ENTRY_HEAD = 6000
const ENTRY_TAIL = 2000

const clip = (text: string): string =>
  text.length <= ENTRY_HEAD + ENTRY_TAIL + 100
    ? text
    : `${text.slice(0, ENTRY_HEAD)}\n…[${text.length - ENTRY_HEAD - ENTRY_TAIL} characters omitted]…\n${
      text.slice(-ENTRY_TAIL)
    }`

const contentText = (content: Content | null): string => {
  if (content === null) return ""
  if (typeof content === "string") return content
  return content.map((p) => (p.type === "text" ? p.text : "[image]")).join("")
}

/** One transcript entry per message. @internal */
export const renderMessage = (message: ChatMessage): string => {
  switch (message.role) {
    case "system":
      return `System: ${clip(message.content)}`
    case "user":
      return `User: ${clip(contentText(message.content))}`
    case "tool":
      return `Tool result${message.name ? ` (${message.name})` : ""} [${message.tool_call_id}]: ${
        clip(message.content)
      }`
    case "assistant": {
      const lines: Array<string> = []
      if (message.content) lines.push(`Assistant: ${clip(message.content)}`)
      for (const call of message.tool_calls ?? []) {
        lines.push(`Assistant called ${call.function.name} [${call.id}] with ${clip(call.function.arguments)}`)
      }
      return lines.length > 0 ? lines.join("\n") : "Assistant: (no content)"
    }
  }
}

/**
 * The transcript of the units to summarise, at most `maxTokens` (estimated): when
 * it is longer, the oldest entries are left out with a note saying how many.
 *
 * @internal
 */
export const transcript = (units: ReadonlyArray<Unit>, maxTokens: number): string => {
  const entries: Array<string> = []
  for (const u of units) for (const m of u.messages) entries.push(renderMessage(m))
  let tokens = 0
  let first = entries.length
  while (first > 0) {
    const t = estimateText(entries[first - 1]) + 1
    if (tokens + t > maxTokens && first < entries.length) break
    tokens += t
    first--
  }
  const kept = entries.slice(first)
  if (first > 0) kept.unshift(`[${first} earlier message(s) omitted]`)
  return kept.join("\n\n")
}

/** The compaction request. @internal */
export const request = (
  units: ReadonlyArray<Unit>,
  hint: CompactHint,
  summaryTokens: number,
  transcriptTokens: number
): ChatRequest => ({
  messages: [
    { role: "system", content: systemPrompt(hint, summaryTokens) },
    {
      role: "user",
      content: `Summarise this conversation:\n\n<conversation>\n${transcript(units, transcriptTokens)}\n</conversation>`
    }
  ],
  maxTokens: summaryTokens
})
