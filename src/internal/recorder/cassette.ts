/**
 * How a finished recording becomes a cassette (`Recorder.toCassette`): the
 * request and the model as plain JSON data, the tools as the cassette
 * describes them, the approval decisions read from the run's events.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Cassette from "../../Cassette.js"
import type { ChatRequest, LlmService } from "../../Llm.js"
import type { ChatMessage } from "../../Message.js"
import type { RunInput } from "../../ReactAgent.js"
import type { Recording } from "../../Recorder.js"
import { isEphemeral, type RunEvent } from "../../RunEvent.js"
import type { Tool } from "../../Tool.js"

/** The request as plain JSON data (what a cassette stores and compares). */
export const requestJson = (request: ChatRequest): Cassette.ModelCall["request"] =>
  JSON.parse(JSON.stringify({
    messages: request.messages,
    ...(request.tools !== undefined ? { tools: request.tools } : {}),
    ...(request.toolChoice !== undefined ? { toolChoice: request.toolChoice } : {}),
    ...(request.responseFormat !== undefined ? { responseFormat: request.responseFormat } : {}),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.maxTokens !== undefined ? { maxTokens: request.maxTokens } : {})
  }))

/** The model as a cassette describes it. */
export const modelOf = (llm: Pick<LlmService, "model" | "abilities" | "contextSize">): Cassette.Cassette["model"] => ({
  name: llm.model,
  abilities: llm.abilities,
  ...(llm.contextSize !== undefined ? { context_size: llm.contextSize } : {})
})

/** A tool as a cassette describes it (re-exported by Recorder.ts). */
export const toolSpec = (tool: Tool): Cassette.ToolSpec => ({
  name: tool.name,
  description: tool.description,
  parameters: JSON.parse(JSON.stringify(tool.jsonSchema)),
  read_only: tool.readOnly,
  pinned: tool.pinned,
  idempotent: tool.idempotent,
  ...(tool.timeout !== undefined ? { timeout_ms: Duration.toMillis(Duration.decode(tool.timeout)) } : {}),
  needs_approval: tool.needsApproval === undefined ? "never" : tool.needsApproval === true ? "always" : "conditional"
})

/** The approval decisions of a run, from its events (re-exported by Recorder.ts). */
export const approvalsOf = (events: ReadonlyArray<RunEvent>): Array<Cassette.ApprovalDecision> => {
  const requested = new Map<string, Extract<RunEvent, { _tag: "ApprovalRequested" }>>()
  const out: Array<Cassette.ApprovalDecision> = []
  for (const event of events) {
    if (event._tag === "ApprovalRequested") requested.set(event.approval_id, event)
    else if (event._tag === "ApprovalDecided") {
      const asked = requested.get(event.approval_id)
      out.push({
        ...(asked?.tool_call_id !== undefined ? { tool_call_id: asked.tool_call_id } : {}),
        ...(asked?.tool_name !== undefined ? { tool_name: asked.tool_name } : {}),
        ...(asked?.iteration !== undefined ? { iteration: asked.iteration } : {}),
        decision: event.status === "approved" ? "approve" : "deny",
        ...(event.reason !== undefined ? { reason: event.reason } : {})
      })
    }
  }
  return out
}

/** Builds a cassette from a finished recording (re-exported by Recorder.ts). */
export const toCassette = (options: {
  readonly recording: Recording
  readonly llm: Pick<LlmService, "model" | "abilities" | "contextSize">
  readonly tools: ReadonlyArray<Tool> | ReadonlyArray<Cassette.ToolSpec>
  readonly input: RunInput & { readonly conversationId: string }
  readonly events: ReadonlyArray<RunEvent>
  readonly agentOptions?: Record<string, unknown>
  readonly runId?: string
  readonly source?: "in-process" | "server"
  readonly recordedAt?: Date
}): Cassette.Cassette => ({
  format: Cassette.FORMAT,
  version: Cassette.CURRENT_VERSION,
  run_id: options.runId ?? `run_${crypto.randomUUID()}`,
  recorded_at: (options.recordedAt ?? new Date()).toISOString(),
  source: options.source ?? "in-process",
  model: options.recording.model ?? modelOf(options.llm),
  input: {
    query: options.input.query,
    conversation_id: options.input.conversationId,
    history: (options.input.history ?? []) as ReadonlyArray<ChatMessage>,
    options: JSON.parse(JSON.stringify(options.agentOptions ?? {})),
    tools: options.tools.map((t) => ("handler" in t ? toolSpec(t) : t)),
    ...(options.input.maxIterations !== undefined ? { max_iterations: options.input.maxIterations } : {}),
    ...(options.input.userId !== undefined ? { user_id: options.input.userId } : {})
  },
  model_calls: options.recording.modelCalls,
  tool_calls: options.recording.toolCalls,
  drains: options.recording.drains,
  approvals: approvalsOf(options.events),
  // live-only events (tool progress, partial output) are not part of what a run is
  events: options.events.filter((event) => !isEphemeral(event)),
  ...(options.recording.memory !== undefined ? { memory: options.recording.memory } : {})
})
