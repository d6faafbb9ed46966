/**
 * Run events on the wire: the SSE channel and JSON payload of each event
 * (`toWire`: what a client receives and the run log stores), and the event back
 * from it (`fromWire`: a stored run read again for a cassette). Only the server
 * speaks the wire; in process, events are the `RunEvent` Schema union.
 *
 * @since 0.1.0
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { agentOf, RunEvent } from "../RunEvent.js"

/**
 * SSE channels.
 *
 * @since 0.1.0
 * @category models
 */
export type Channel =
  | "step"
  | "answer"
  | "compact"
  | "phase"
  | "inject"
  | "approval"
  | "dag"
  | "done"
  | "error"
  | "budget"
  | "guardrail"
  | "agent"
  | "input"
  | "memory"

const withStep = (data: Record<string, unknown>, stepId: string | undefined): Record<string, unknown> =>
  stepId === undefined ? data : { ...data, step_id: stepId }

/**
 * The SSE channel and JSON payload of an event. An event forwarded from a child
 * run carries its `agent` in the payload, whatever the channel (SPEC §27).
 *
 * @since 0.1.0
 * @category utils
 */
export const toWire = (event: RunEvent): { readonly channel: Channel; readonly data: Record<string, unknown> } => {
  const wire = payload(event)
  const agent = agentOf(event)
  return agent === undefined || wire.data.agent !== undefined
    ? wire
    : { channel: wire.channel, data: { ...wire.data, agent } }
}

const payload = (event: RunEvent): { readonly channel: Channel; readonly data: Record<string, unknown> } => {
  switch (event._tag) {
    case "ThinkingStart":
      return {
        channel: "step",
        data: withStep({ type: "thinking", status: "start", iteration: event.iteration }, event.step_id)
      }
    case "ThinkingDone":
      return {
        channel: "step",
        data: withStep(
          { type: "thinking", status: "done", iteration: event.iteration, reasoning: event.reasoning },
          event.step_id
        )
      }
    case "ToolStart": {
      const { _tag, ...rest } = event
      return { channel: "step", data: { type: "iteration", status: "start", ...rest } }
    }
    case "ToolDone": {
      const { _tag, ...rest } = event
      return { channel: "step", data: { type: "iteration", status: "done", ...rest } }
    }
    case "AnswerSignal":
      return { channel: "step", data: { type: "answer", status: "start" } }
    case "AnswerStart":
      return { channel: "answer", data: { status: "start" } }
    case "AnswerDelta":
      return { channel: "answer", data: { status: "delta", content: event.content } }
    case "AnswerDone":
      return { channel: "answer", data: { status: "done" } }
    case "AnswerReset":
      return { channel: "answer", data: { status: "reset" } }
    case "Compact":
      return {
        channel: "compact",
        data: withStep(
          { original_messages: event.original_messages, kept_messages: event.kept_messages },
          event.step_id
        )
      }
    case "PhaseChange":
      return { channel: "phase", data: withStep({ phase: event.phase, total_tools: event.total_tools }, event.step_id) }
    case "Inject":
      return { channel: "inject", data: { type: "inject", content: event.content, id: event.id } }
    case "ApprovalRequested": {
      const { _tag, ...rest } = event
      return { channel: "approval", data: { type: "approval", status: "requested", ...rest } }
    }
    case "ApprovalDecided": {
      const { _tag, status, ...rest } = event
      return { channel: "approval", data: { type: "approval", status, ...rest } }
    }
    case "DagPlan":
      return { channel: "dag", data: { type: "plan", round: event.round, steps: event.steps } }
    case "DagStep": {
      const { _tag, ...rest } = event
      return { channel: "dag", data: { type: "step", ...rest } }
    }
    case "DagPhase": {
      const { _tag, ...rest } = event
      return { channel: "phase", data: rest }
    }
    case "Resumed":
      return { channel: "phase", data: { phase: "resumed" } }
    case "Queued":
      return { channel: "phase", data: { phase: "queued", position: event.position } }
    case "BudgetExhausted": {
      const { _tag, ...rest } = event
      return { channel: "phase", data: { phase: "budget_exhausted", ...rest } }
    }
    case "BudgetStatus": {
      const { _tag, ...rest } = event
      return { channel: "budget", data: rest }
    }
    case "GuardrailTripped": {
      const { _tag, step_id: _, ...rest } = event
      return { channel: "guardrail", data: { type: "guardrail", status: "tripped", ...rest } }
    }
    case "LlmRetry":
      return {
        channel: "phase",
        data: { phase: "retrying", attempt: event.attempt, reason: event.reason, delay_ms: event.delay_ms }
      }
    case "AgentStart":
      return { channel: "agent", data: { type: "agent", status: "start", agent: event.agent, query: event.query } }
    case "AgentDone": {
      const { _tag, ...rest } = event
      return { channel: "agent", data: { type: "agent", status: "done", ...rest } }
    }
    case "ToolProgress": {
      const { _tag, ...rest } = event
      return { channel: "step", data: { type: "iteration", status: "progress", ...rest } }
    }
    case "OutputPartial":
      return { channel: "answer", data: { type: "output_partial", value: event.value } }
    case "AttachmentsReceived":
      return { channel: "input", data: { type: "attachments", attachments: event.attachments } }
    case "MemoryRecalled":
      return { channel: "memory", data: { type: "recalled", items: event.items } }
    case "MemoryUpdated":
      return { channel: "memory", data: { type: "updated", keys: event.keys } }
    case "MemoryUnavailable":
      return { channel: "memory", data: { type: "unavailable", reason: event.reason } }
    case "Done": {
      const { _tag, messages: _messages, steps: _steps, ...rest } = event
      return { channel: "done", data: rest }
    }
    case "RunFailed": {
      const code = event.code !== undefined ? { code: event.code } : {}
      return { channel: "error", data: { message: event.message, retryable: event.retryable, ...code } }
    }
  }
}

const decode = Schema.decodeUnknownEither(RunEvent)

const tagOf = (channel: string, data: Record<string, unknown>): string | undefined => {
  const { type, status, phase } = data
  switch (channel) {
    case "step":
      if (type === "thinking") return status === "start" ? "ThinkingStart" : "ThinkingDone"
      if (type === "iteration") {
        return status === "start"
          ? "ToolStart"
          : status === "progress"
          ? "ToolProgress"
          : "ToolDone"
      }
      if (type === "answer") return "AnswerSignal"
      return undefined
    case "answer":
      if (type === "output_partial") return "OutputPartial"
      return status === "start"
        ? "AnswerStart"
        : status === "delta"
        ? "AnswerDelta"
        : status === "done"
        ? "AnswerDone"
        : "AnswerReset"
    case "compact":
      return "Compact"
    case "phase":
      if (phase === "selecting_tools") return "PhaseChange"
      if (phase === "resumed") return "Resumed"
      if (phase === "queued") return "Queued"
      if (phase === "retrying") return "LlmRetry"
      if (phase === "budget_exhausted") return "BudgetExhausted"
      return "DagPhase"
    case "inject":
      return "Inject"
    case "approval":
      return status === "requested" ? "ApprovalRequested" : "ApprovalDecided"
    case "dag":
      return type === "plan" ? "DagPlan" : "DagStep"
    case "done":
      return "Done"
    case "error":
      return "RunFailed"
    case "agent":
      return status === "start" ? "AgentStart" : "AgentDone"
    case "budget":
      return "BudgetStatus"
    case "guardrail":
      return "GuardrailTripped"
    case "input":
      return type === "attachments" ? "AttachmentsReceived" : undefined
    case "memory":
      return type === "recalled"
        ? "MemoryRecalled"
        : type === "updated"
        ? "MemoryUpdated"
        : type === "unavailable"
        ? "MemoryUnavailable"
        : undefined
    default:
      return undefined
  }
}

/**
 * The event of a stored `(channel, data)` pair; `undefined` for a payload that
 * is no known event.
 *
 * @since 0.1.0
 * @category utils
 */
export const fromWire = (channel: string, data: Record<string, unknown>): RunEvent | undefined => {
  const tag = tagOf(channel, data)
  if (tag === undefined) return undefined
  const { type: _type, ...rest } = data
  const fields: Record<string, unknown> = { ...rest, _tag: tag }
  if (tag !== "ApprovalDecided" && tag !== "DagStep" && tag !== "BudgetStatus") delete fields.status
  if (tag === "DagPhase" || tag === "PhaseChange") fields.phase = data.phase
  if (tag === "LlmRetry" || tag === "Resumed" || tag === "BudgetExhausted" || tag === "Queued") delete fields.phase
  const decoded = decode(fields)
  return Either.isRight(decoded) ? decoded.right : undefined
}
