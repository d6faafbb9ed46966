/**
 * A run's events as A2A task events (SPEC §27): what the A2A server's agent
 * executor publishes for a task while its durable run goes on. Only the run's
 * own events make the answer (a sub-agent's are not it: `RunEvent.isOwn`).
 *
 * - the answer, as it streams: `artifactUpdate`s of the artifact `answer`
 *   (appended chunks; after an `AnswerReset` the next chunk replaces what was
 *   sent), held until the loop knows it is the answer (`settledAnswers`);
 * - progress: a `working` `statusUpdate` with a short agent message when the run
 *   calls a tool, delegates to a sub-agent, waits for an approval or resumes
 *   after a restart; a `submitted` one while it waits for a free slot (`Queued`);
 * - the end (`Done`): the whole answer as the artifact's last chunk, then the
 *   final status — `completed`, `failed` (the run's error as the message) or
 *   `canceled`.
 *
 * Pure and synchronous: one instance per task, fed in order.
 *
 * @internal
 */
import type { Message, Part, Task } from "@a2a-js/sdk"
import { Role, TaskState } from "@a2a-js/sdk"
import type { AgentExecutionEvent } from "@a2a-js/sdk/server"
import { randomUUID } from "node:crypto"
import type { RunEvent } from "../../RunEvent.js"
import { isOwn, settledAnswers } from "../../RunEvent.js"

/** The id of the artifact that carries a task's answer. */
export const ANSWER_ARTIFACT = "answer"

/** A text part. */
export const textPart = (text: string): Part => ({
  content: { $case: "text", value: text },
  metadata: undefined,
  filename: "",
  mediaType: "text/plain"
})

/** An agent message of a task. */
export const agentMessage = (
  taskId: string,
  contextId: string,
  text: string,
  metadata?: Record<string, unknown>
): Message => ({
  messageId: randomUUID(),
  contextId,
  taskId,
  role: Role.ROLE_AGENT,
  parts: [textPart(text)],
  metadata,
  extensions: [],
  referenceTaskIds: []
})

/** The text of a message's text parts. */
export const textOf = (message: Message | undefined): string =>
  (message?.parts ?? []).flatMap((p) => (p.content?.$case === "text" ? [p.content.value] : [])).join("\n")

/** A task as it starts: submitted, the user's message its history. */
export const submitted = (taskId: string, contextId: string, user: Message): Task => ({
  id: taskId,
  contextId,
  status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
  artifacts: [],
  history: [user],
  metadata: undefined
})

/** How a run ended, for its task's final status. */
export interface Ending {
  readonly answer: string
  readonly cancelled: boolean
  /** The run's error (its `RunFailed`), when it failed. */
  readonly failure: string | undefined
}

/** The final events of a task whose run ended so. */
export const finalEvents = (taskId: string, contextId: string, ending: Ending): ReadonlyArray<AgentExecutionEvent> => {
  const timestamp = new Date().toISOString()
  const status = (state: TaskState, text?: string): AgentExecutionEvent => ({
    kind: "statusUpdate",
    data: {
      taskId,
      contextId,
      status: { state, message: text === undefined ? undefined : agentMessage(taskId, contextId, text), timestamp },
      metadata: undefined
    }
  })
  if (ending.cancelled) return [status(TaskState.TASK_STATE_CANCELED, "The run was cancelled")]
  if (ending.failure !== undefined) return [status(TaskState.TASK_STATE_FAILED, ending.failure)]
  return [answerChunk(taskId, contextId, ending.answer, false, true), status(TaskState.TASK_STATE_COMPLETED)]
}

const answerChunk = (
  taskId: string,
  contextId: string,
  text: string,
  append: boolean,
  lastChunk: boolean
): AgentExecutionEvent => ({
  kind: "artifactUpdate",
  data: {
    taskId,
    contextId,
    artifact: {
      artifactId: ANSWER_ARTIFACT,
      name: "answer",
      description: "The agent's answer",
      parts: [textPart(text)],
      metadata: undefined,
      extensions: []
    },
    append,
    lastChunk,
    metadata: undefined
  }
})

/** What a run's event says of its progress, as a status message (none for most events). */
const progressOf = (
  event: RunEvent
): { readonly text: string; readonly metadata: Record<string, unknown>; readonly state?: TaskState } | undefined => {
  switch (event._tag) {
    case "Queued":
      // accepted, not started: the task stays submitted
      return isOwn(event)
        ? {
          text: `Waiting for a free slot (${event.position} ahead)`,
          metadata: { position: event.position },
          state: TaskState.TASK_STATE_SUBMITTED
        }
        : undefined
    case "ToolStart":
      return isOwn(event)
        ? { text: `Calling ${event.tool_name}`, metadata: { tool_name: event.tool_name, iteration: event.iteration } }
        : undefined
    case "AgentStart":
      return { text: `Sub-agent ${event.agent.name} working`, metadata: { agent: event.agent.name } }
    case "ApprovalRequested":
      return { text: `Waiting for a person to approve ${event.tool_name}`, metadata: { tool_name: event.tool_name } }
    case "Resumed":
      return isOwn(event) ? { text: "Resumed after a server restart", metadata: {} } : undefined
    default:
      return undefined
  }
}

/**
 * The encoder of one task: `push` each run event in order; `end` when the
 * run's `Done` came (`cancelled`: the run was stopped), for the final events.
 */
export const make = (taskId: string, contextId: string) => {
  const settle = settledAnswers()
  let replace = true
  let failure: string | undefined
  const encode = (event: RunEvent): ReadonlyArray<AgentExecutionEvent> => {
    if (isOwn(event)) {
      if (event._tag === "AnswerDelta" && event.content !== "") {
        const chunk = answerChunk(taskId, contextId, event.content, !replace, false)
        replace = false
        return [chunk]
      }
      if (event._tag === "AnswerReset") replace = true
      if (event._tag === "RunFailed") failure = event.message
    }
    const progress = progressOf(event)
    if (progress === undefined) return []
    return [{
      kind: "statusUpdate",
      data: {
        taskId,
        contextId,
        status: {
          state: progress.state ?? TaskState.TASK_STATE_WORKING,
          message: agentMessage(taskId, contextId, progress.text, progress.metadata),
          timestamp: new Date().toISOString()
        },
        metadata: undefined
      }
    }]
  }
  return {
    push: (event: RunEvent): ReadonlyArray<AgentExecutionEvent> =>
      event._tag === "Done" ? [] : settle(event).flatMap(encode),
    end: (done: { readonly answer: string; readonly cancelled: boolean }): ReadonlyArray<AgentExecutionEvent> =>
      finalEvents(taskId, contextId, { answer: done.answer, cancelled: done.cancelled, failure })
  }
}
