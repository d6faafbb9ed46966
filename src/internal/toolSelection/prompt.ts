/**
 * The compact tool catalogue and the selection prompt.
 *
 * @internal
 */
import type { ChatMessage } from "../../Message.js"
import type { Tool } from "../../Tool.js"

/** Collapses whitespace (newlines included) and cuts to `max` characters, "..." included. @internal */
export const shorten = (text: string, max: number): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  if (flat.length <= max) return flat
  let end = Math.max(0, max - 3)
  if (end > 0 && (flat.charCodeAt(end - 1) & 0xfc00) === 0xd800) end--
  return flat.slice(0, end) + "..."
}

/** Description length in the selection catalogue. @internal */
export const CATALOGUE_DESCRIPTION_MAX = 80

/** One catalogue line: `- name: description` (description cut to 80 chars). @internal */
export const catalogueLine = (tool: Tool): string => {
  const description = shorten(tool.description, CATALOGUE_DESCRIPTION_MAX)
  return description === "" ? `- ${tool.name}` : `- ${tool.name}: ${description}`
}

/** The catalogue: one line per tool, no schemas. @internal */
export const catalogue = (tools: ReadonlyArray<Tool>): string => tools.map(catalogueLine).join("\n")

/** @internal */
export const FUNCTION_NAME = "select_tools"

/** @internal */
export const FUNCTION_DESCRIPTION = "Return the names of the tools needed for the request, most relevant first."

/** The query is cut to this many characters in the selection prompt. @internal */
export const QUERY_MAX = 4000

/** The selection conversation. @internal */
export const selectionMessages = (
  query: string,
  tools: ReadonlyArray<Tool>,
  max: number
): ReadonlyArray<ChatMessage> => [
  {
    role: "system",
    content: [
      "You choose the tools an AI agent will be given to handle a user's request.",
      `From the catalogue, select at most ${max} tools that are most likely needed, most relevant first.`,
      "Use the exact tool names from the catalogue. Prefer fewer tools when fewer are enough.",
      `Answer with a JSON object: {"tools": ["tool_name", ...]}.`
    ].join(" ")
  },
  {
    role: "user",
    content: `Tool catalogue:\n${catalogue(tools)}\n\nUser request:\n${
      query.length > QUERY_MAX ? query.slice(0, QUERY_MAX - 3) + "..." : query
    }`
  }
]
