/**
 * Prompt texts of the ReAct loop and the answer synthesiser (concise English; the
 * model answers in the user's language).
 *
 * @internal
 */
import type { Tool } from "../../Tool.js"

const BASE = `You are a capable assistant that solves the user's task step by step, using tools when they help.
Think about what is needed, call tools to gather facts or act, read their results, and stop when you can answer.
Answer in the user's language.`

/** System prompt of native function-calling mode. */
export const nativeSystemPrompt = (extra: string | undefined): string =>
  `${BASE}
When you need a tool, call it; you may call several independent tools at once. When you have enough information, reply with the final answer as plain text, without calling tools.${
    extra ? `\n\n${extra}` : ""
  }`

const toolBlock = (tool: Tool): string =>
  `- ${tool.name}: ${tool.description}\n  parameters: ${JSON.stringify(tool.jsonSchema)}`

/** System prompt of JSON mode: the protocol and every advertised tool with its JSON Schema. */
export const jsonSystemPrompt = (tools: ReadonlyArray<Tool>, extra: string | undefined): string =>
  `${BASE}

Reply with exactly one JSON object and nothing else, in one of these two shapes:
{"type":"tool_call","reasoning":"why this tool","tool_name":"<tool name>","tool_args":{...}}
{"type":"final_answer","reasoning":"why you can answer now","answer":"<the answer>"}
Call one tool per reply. Tool results come back as "Observation: ..." messages.

Available tools:
${tools.length > 0 ? tools.map(toolBlock).join("\n") : "(none: answer directly with a final_answer)"}${
    extra ? `\n\n${extra}` : ""
  }`

/** JSON mode: the reply did not parse. */
export const REFORMAT_REQUEST =
  `Your previous reply could not be parsed as JSON. Reply again with exactly one JSON object, either {"type":"tool_call","reasoning":"...","tool_name":"...","tool_args":{...}} or {"type":"final_answer","reasoning":"...","answer":"..."}.`

/** Cycle detection warning. */
export const cycleWarning = (tool: string, count: number): string =>
  `You have called \`${tool}\` with identical arguments ${count} times and received the same result. Please try a different approach or tool.`

/** Self-reflection prompt, quoting the original goal. */
export const reflectionPrompt = (goal: string): string =>
  `Pause and reflect before your next step. The original goal was: "${goal}"
- Are you still on track for this goal?
- Have you been repeating similar actions or going in circles?
- What is the most direct next step to finish?
- Do you already have enough to answer now? If so, give the final answer.`

/** Completion checklist (once per run). */
export const CHECKLIST_PROMPT = `Before you finish, verify your answer:
1. Does it fully address the original question?
2. Are the key facts verified by the tool results?
3. Are there contradictions in the information you gathered?
If everything checks out, give your final answer again (complete, not a reference to the previous one). If something is missing, continue with the tools.`

/** ONE pinned message for everything drained at once. */
export const interruptMessage = (contents: ReadonlyArray<string>): string =>
  contents.length === 1
    ? `[USER INTERRUPT] The user sent a new message while you were working:\n${
      contents[0]
    }\nTake it into account before continuing.`
    : `[USER INTERRUPT] The user sent new messages while you were working:\n${
      contents.map((c, i) => `${i + 1}. ${c}`).join("\n")
    }\nTake them into account before continuing.`

/** What the model sees instead of an html/markdown result that produced artifacts. */
export const artifactSummary = (names: ReadonlyArray<string>): string =>
  `[Artifact generated: ${
    names.join(", ")
  }] The content is rendered as a preview in the UI and available for download. Do not paste the raw source in your answer.`

/** Appended to an observation cut by the tool-result budget. */
export const budgetNotice = (budget: number): string =>
  `\n[Truncated: the tool-result budget of ${budget} tokens for this run is exhausted. Work with what you have or answer now.]`

/** The loop answer when it stopped without a final answer. */
export const stoppedSummary = (
  reason: "max_iterations" | "token_budget" | "budget",
  limit: number,
  steps: ReadonlyArray<{ readonly tool_name: string; readonly error: string | null }>
): string => {
  const head = reason === "max_iterations"
    ? `I reached the maximum number of iterations (${limit}) before finishing.`
    : reason === "budget"
    ? `I reached this run's budget before finishing.`
    : `I reached the token budget of this turn (${limit} tokens) before finishing.`
  if (steps.length === 0) return `${head} No tools were called.`
  const lines = steps.map((s, i) => `${i + 1}. ${s.tool_name}: ${s.error === null ? "OK" : `error (${s.error})`}`)
  return `${head} Steps taken:\n${lines.join("\n")}`
}
