/**
 * Events back from their wire form (`RunEvent.toWire`): what the server stores
 * in its run log, read again for a cassette. `undefined` for a payload that is
 * no known event.
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { RunEvent } from "../../RunEvent.js"

const decode = Schema.decodeUnknownEither(RunEvent)

const tagOf = (channel: string, data: Record<string, unknown>): string | undefined => {
  const { type, status, phase } = data
  switch (channel) {
    case "step":
      if (type === "thinking") return status === "start" ? "ThinkingStart" : "ThinkingDone"
      if (type === "iteration") return status === "start" ? "ToolStart" : "ToolDone"
      if (type === "answer") return "AnswerSignal"
      return undefined
    case "answer":
      return status === "start" ? "AnswerStart" : status === "delta" ? "AnswerDelta" : status === "done" ? "AnswerDone" : "AnswerReset"
    case "compact":
      return "Compact"
    case "phase":
      if (phase === "selecting_tools") return "PhaseChange"
      if (phase === "resumed") return "Resumed"
      if (phase === "retrying") return "LlmRetry"
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
    default:
      return undefined
  }
}

/** The event of a stored `(channel, data)` pair. */
export const fromWire = (channel: string, data: Record<string, unknown>): RunEvent | undefined => {
  const tag = tagOf(channel, data)
  if (tag === undefined) return undefined
  const { type: _type, ...rest } = data
  const fields: Record<string, unknown> = { ...rest, _tag: tag }
  if (tag !== "ApprovalDecided" && tag !== "DagStep") delete fields.status
  if (tag === "DagPhase" || tag === "PhaseChange") fields.phase = data.phase
  if (tag === "LlmRetry" || tag === "Resumed") delete fields.phase
  if (tag === "DagStep") fields.status = data.status
  const decoded = decode(fields)
  return Either.isRight(decoded) ? decoded.right : undefined
}
