/**
 * What the server remembers of a run while forwarding its events: enough to
 * store a faithful turn when the run is cancelled before its `Done` (every tool
 * call sent to the model gets a tool message), and to cut this turn's loop
 * messages out of `Done.messages`.
 *
 * @internal
 */
import type { ChatMessage, ToolCall, ToolMessage } from "../../Message.js"
import * as Message from "../../Message.js"
import type { RunEvent } from "../../RunEvent.js"

interface CallRecord {
  readonly iteration: number
  readonly id: string
  readonly name: string
  readonly args: unknown
  observation?: string
  error?: string | null
}

/** @internal */
export interface Transcript {
  answer: string
  iterations: number
  failure: string | undefined
  /** Tool calls that asked a person for approval. */
  approvals: number
  readonly calls: Array<CallRecord>
}

/** @internal */
export const make = (): Transcript => ({ answer: "", iterations: 0, failure: undefined, approvals: 0, calls: [] })

/** Folds one event into the transcript. @internal */
export const observe = (t: Transcript, event: RunEvent): void => {
  // a child run's events (a sub-agent's) are not this run's turn
  if ("agent" in event && event.agent !== undefined) return
  switch (event._tag) {
    case "ThinkingStart":
      t.iterations = Math.max(t.iterations, event.iteration)
      return
    case "ToolStart":
      t.calls.push({
        iteration: event.iteration,
        id: event.tool_call_id ?? `call_${event.iteration}_${t.calls.length + 1}`,
        name: event.tool_name,
        args: event.tool_args
      })
      return
    case "ToolDone": {
      const call = t.calls.find((c) =>
        event.tool_call_id !== undefined
          ? c.id === event.tool_call_id
          : c.iteration === event.iteration && c.name === event.tool_name && c.observation === undefined
      )
      if (call) {
        call.observation = event.observation
        call.error = event.error
      }
      return
    }
    case "AnswerDelta":
      t.answer += event.content
      return
    case "RunFailed":
      t.failure = event.message
      return
    case "ApprovalRequested":
      t.approvals++
      return
    default:
      return
  }
}

const CANCELLED = "[Cancelled: the run was stopped before this tool finished]"

const stringify = (args: unknown): string => {
  if (typeof args === "string") return args
  try {
    return JSON.stringify(args ?? {})
  } catch {
    return "{}"
  }
}

/**
 * The tool rounds seen in the events as messages: per iteration one assistant
 * message with its tool calls, then one tool message per call (a cancellation
 * note for calls that never finished).
 *
 * @internal
 */
export const messagesFromEvents = (t: Transcript): Array<ChatMessage> => {
  const out: Array<ChatMessage> = []
  const byIteration = new Map<number, Array<CallRecord>>()
  for (const call of t.calls) {
    const list = byIteration.get(call.iteration)
    if (list) list.push(call)
    else byIteration.set(call.iteration, [call])
  }
  for (const calls of byIteration.values()) {
    out.push(
      Message.assistant(null, { toolCalls: calls.map((c) => Message.toolCall(c.id, c.name, stringify(c.args))) })
    )
    for (const c of calls) {
      const content = c.observation === undefined ? CANCELLED : c.error ? `Error: ${c.error}` : c.observation
      out.push(Message.tool(c.id, content, c.name))
    }
  }
  return out
}

/**
 * Makes sure every tool call of an assistant message is followed by its tool
 * message (a cancellation note is added for the missing ones).
 *
 * @internal
 */
export const closeToolCalls = (messages: ReadonlyArray<ChatMessage>): Array<ChatMessage> => {
  const answered = new Set<string>()
  for (const m of messages) if (m.role === "tool") answered.add(m.tool_call_id)
  const out: Array<ChatMessage> = []
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    out.push(m)
    if (m.role !== "assistant" || !m.tool_calls) continue
    // keep the tool messages that directly follow, then add the missing ones
    while (i + 1 < messages.length && messages[i + 1].role === "tool") out.push(messages[++i])
    const missing: Array<ToolCall> = m.tool_calls.filter((c) => !answered.has(c.id))
    for (const c of missing) out.push(Message.tool(c.id, CANCELLED, c.function.name) satisfies ToolMessage)
  }
  return out
}

/**
 * This turn's loop messages out of a run's full message list: what follows the
 * user's query (system messages and the loop's final assistant reply dropped —
 * the synthesized answer is stored instead —, every tool call closed).
 *
 * @internal
 */
export const loopMessages = (all: ReadonlyArray<ChatMessage>, query: string): Array<ChatMessage> => {
  let start = -1
  for (let i = all.length - 1; i >= 0; i--) {
    const m = all[i]
    if (m.role === "user" && Message.textOf(m.content) === query) {
      start = i
      break
    }
  }
  const rest = all.slice(start + 1).filter((m) => m.role !== "system")
  // the loop's own final answer: the synthesized answer is stored in its place
  while (rest.length > 0) {
    const tail = rest[rest.length - 1]
    if (tail.role !== "assistant" || (tail.tool_calls?.length ?? 0) > 0) break
    rest.pop()
  }
  return closeToolCalls(rest)
}
