/**
 * What a sub-agent's child run gets of its caller's conversation (the history
 * hand-off of `AgentTool.Options.history`):
 *
 * - `none`: nothing; the child starts from the call's `query` alone.
 * - `summary`: one user message that sums up the caller's thread without a
 *   model call (so a replay computes the same one): the user's question, the
 *   caller's earlier turns' user messages, and each tool call it made so far
 *   with its result cut to `SUMMARY_RESULT_CHARS`.
 * - `thread`: the caller's thread as plain user / assistant messages: its
 *   user messages, its assistant texts, and each tool call with its result as
 *   assistant text (a tool message belongs to the caller's own call ids, which
 *   the child's model never saw; and the caller's last reply, the one making
 *   this call, has no result yet).
 *
 * @internal
 */
import * as Message from "../../Message.js"
import type { ChatMessage } from "../../Message.js"

/** How much of the caller's thread the child run gets. */
export type HistoryHandoff = "none" | "summary" | "thread"

/** A tool result in a summary is cut to this many characters. */
export const SUMMARY_RESULT_CHARS = 500

const cut = (text: string, max: number): string => (text.length <= max ? text : `${text.slice(0, max)}…`)

/** The calls of an assistant message, by id: `name(arguments)`. */
const callsOf = (thread: ReadonlyArray<ChatMessage>): Map<string, string> => {
  const calls = new Map<string, string>()
  for (const m of thread) {
    if (m.role === "assistant") {
      for (const c of m.tool_calls ?? []) calls.set(c.id, `${c.function.name}(${c.function.arguments})`)
    }
  }
  return calls
}

/** The caller's thread without its system prompt and without its last reply's unanswered calls. */
const answered = (thread: ReadonlyArray<ChatMessage>): ReadonlyArray<ChatMessage> => {
  const results = new Set(thread.flatMap((m) => (m.role === "tool" ? [m.tool_call_id] : [])))
  return thread.filter((m) =>
    m.role !== "system" &&
    !(m.role === "assistant" && (m.tool_calls ?? []).some((c) => !results.has(c.id)) &&
      Message.textOf(m.content) === "")
  )
}

/** The caller's thread as user / assistant messages (see the module comment). */
export const thread = (caller: ReadonlyArray<ChatMessage>): ReadonlyArray<ChatMessage> => {
  const messages = answered(caller)
  const calls = callsOf(messages)
  const out: Array<ChatMessage> = []
  const say = (role: "user" | "assistant", text: string) => {
    const last = out[out.length - 1]
    if (last !== undefined && last.role === role && role === "assistant") {
      out[out.length - 1] = Message.assistant(`${Message.textOf(last.content)}\n\n${text}`)
    } else {
      out.push(role === "user" ? Message.user(text) : Message.assistant(text))
    }
  }
  for (const m of messages) {
    if (m.role === "user") say("user", Message.textOf(m.content))
    else if (m.role === "assistant") {
      const text = Message.textOf(m.content)
      if (text !== "") say("assistant", text)
    } else if (m.role === "tool") {
      say("assistant", `Called ${calls.get(m.tool_call_id) ?? m.name ?? "a tool"}; result:\n${m.content}`)
    }
  }
  // a thread ends on the caller's side: the child's own query follows as the next user message
  while (out.length > 0 && out[0].role !== "user") out.shift()
  return out
}

/** One user message summing up the caller's thread (see the module comment); none for an empty thread. */
export const summary = (caller: ReadonlyArray<ChatMessage>): ReadonlyArray<ChatMessage> => {
  const messages = answered(caller)
  const calls = callsOf(messages)
  const asked = messages.flatMap((m) => (m.role === "user" ? [Message.textOf(m.content)] : []))
  if (asked.length === 0) return []
  const lines = [
    "Context from the agent that delegates this task to you.",
    "",
    `Its user asked: ${asked[asked.length - 1]}`
  ]
  if (asked.length > 1) {
    lines.push("Earlier in that conversation the user asked:")
    for (const q of asked.slice(0, -1)) lines.push(`- ${q}`)
  }
  const results = messages.flatMap((m) => (m.role === "tool" ? [m] : []))
  if (results.length > 0) {
    lines.push("", "What it found so far:")
    for (const r of results) {
      lines.push(`- ${calls.get(r.tool_call_id) ?? r.name ?? "a tool"} → ${cut(r.content, SUMMARY_RESULT_CHARS)}`)
    }
  }
  return [Message.user(lines.join("\n")), Message.assistant("Understood.")]
}

/** The child run's history for a hand-off. */
export const historyFor = (handoff: HistoryHandoff, caller: ReadonlyArray<ChatMessage>): ReadonlyArray<ChatMessage> =>
  handoff === "none" ? [] : handoff === "summary" ? summary(caller) : thread(caller)
