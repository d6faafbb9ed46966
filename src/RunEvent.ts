/**
 * Everything a run does, as a tagged union of events. Field names are
 * the wire names, so the server's `EventWire.toWire` only picks the SSE channel
 * and drops in-process-only fields (`steps`, `messages` on `Done`).
 *
 * @since 0.1.0
 */
import * as Schema from "effect/Schema"
import { AgentDone, AgentStart } from "./internal/runEvent/agents.js"
import { AttachmentsReceived } from "./internal/runEvent/attachments.js"
import { BudgetExhausted, BudgetStatus } from "./internal/runEvent/budget.js"
import { DagPhase, DagPlan, DagStep } from "./internal/runEvent/dag.js"
import { agent, step_id } from "./internal/runEvent/fields.js"
import { memoryEvents } from "./internal/runEvent/memory.js"
import { OutputPartial, type RunError, ToolProgress } from "./internal/runEvent/progress.js"
import { Queued } from "./internal/runEvent/queued.js"
import { settledAnswers as internalSettled } from "./internal/runEvent/settledAnswers.js"
import { LlmErrorReason } from "./Llm.js"
import { ChatMessage } from "./Message.js"
import { Artifact, ContentType } from "./Tool.js"
import { RunUsage, Usage } from "./Usage.js"

// Members defined beside this module, one file per family (their docs are there)
export { AgentDone, AgentStart } from "./internal/runEvent/agents.js"
export { AttachmentsReceived } from "./internal/runEvent/attachments.js"
export { BudgetExhausted, BudgetStatus } from "./internal/runEvent/budget.js"
export { DagPhase, DagPlan, DagPlanStep, DagStep } from "./internal/runEvent/dag.js"
export { AgentRef } from "./internal/runEvent/fields.js"
export { MemoryRecalled, MemoryUnavailable, MemoryUpdated } from "./internal/runEvent/memory.js"
export { agentOf, isEphemeral, isOwn } from "./internal/runEvent/predicates.js"
export { OutputPartial, type RunError, ToolProgress } from "./internal/runEvent/progress.js"
export { Queued } from "./internal/runEvent/queued.js"

/**
 * @since 0.1.0
 * @category models
 */
export const ThinkingStart = Schema.TaggedStruct("ThinkingStart", { iteration: Schema.Number, step_id, agent })
/**
 * @since 0.1.0
 * @category models
 */
export const ThinkingDone = Schema.TaggedStruct("ThinkingDone", {
  iteration: Schema.Number,
  reasoning: Schema.String,
  step_id,
  agent
})
/**
 * @since 0.1.0
 * @category models
 */
export const ToolStart = Schema.TaggedStruct("ToolStart", {
  iteration: Schema.Number,
  tool_name: Schema.String,
  tool_args: Schema.Unknown,
  tool_call_id: Schema.optional(Schema.String),
  /**
   * The call's idempotency key (`Tool.CallContext.idempotencyKey`): what its
   * handler gets, the same for every attempt of the call.
   */
  idempotency_key: Schema.optional(Schema.String),
  step_id,
  agent
})
/**
 * @since 0.1.0
 * @category models
 */
export const ToolDone = Schema.TaggedStruct("ToolDone", {
  iteration: Schema.Number,
  tool_name: Schema.String,
  /**
   * The arguments used, only when a PreToolUse hook rewrote them; absent, they are
   * the `ToolStart`'s (large arguments travel and are stored once per call). A
   * `Step` (`RunResult.steps`, `Done.steps`) always has them.
   */
  tool_args: Schema.optional(Schema.Unknown),
  /** The full result (what the UI shows; the model may have seen a summary). */
  observation: Schema.String,
  /** The error message when the call failed (blocked, unknown tool, bad arguments, handler error, timeout). */
  error: Schema.NullOr(Schema.String),
  /** Seconds. */
  iter_elapsed: Schema.Number,
  tool_call_id: Schema.optional(Schema.String),
  content_type: Schema.optional(ContentType),
  artifacts: Schema.optional(Schema.Array(Artifact)),
  /** LLM usage the tool reported spending (an agent tool's sub-run); counted in `by_phase.subagents`. */
  usage: Schema.optional(Usage),
  step_id,
  agent
})
/**
 * @since 0.1.0
 * @category models
 */
export type Step = Omit<typeof ToolDone.Type, "_tag">

/**
 * @since 0.1.0
 * @category models
 */
export const AnswerSignal = Schema.TaggedStruct("AnswerSignal", { agent })
/**
 * @since 0.1.0
 * @category models
 */
export const AnswerStart = Schema.TaggedStruct("AnswerStart", { agent })
/**
 * @since 0.1.0
 * @category models
 */
export const AnswerDelta = Schema.TaggedStruct("AnswerDelta", { content: Schema.String, agent })
/**
 * @since 0.1.0
 * @category models
 */
export const AnswerDone = Schema.TaggedStruct("AnswerDone", { agent })
/**
 * The answer shown so far is void: a loop reply streamed as the answer
 * (synthesis policy `auto`) turned out to call tools or was suppressed by an
 * interrupt, or a synthesis stream cut by a server restart is streamed again
 * from its first token.
 *
 * @since 0.1.0
 * @category models
 */
export const AnswerReset = Schema.TaggedStruct("AnswerReset", { agent })
/**
 * @since 0.1.0
 * @category models
 */
export const Compact = Schema.TaggedStruct("Compact", {
  original_messages: Schema.Number,
  kept_messages: Schema.Number,
  step_id,
  agent
})
/**
 * @since 0.1.0
 * @category models
 */
export const PhaseChange = Schema.TaggedStruct("PhaseChange", {
  phase: Schema.Literal("selecting_tools"),
  total_tools: Schema.Number,
  step_id,
  agent
})
/**
 * @since 0.1.0
 * @category models
 */
export const Inject = Schema.TaggedStruct("Inject", { content: Schema.String, id: Schema.String, agent })

/**
 * A tool call waits for a person: `tool_args` are the arguments that
 * would run (after the PreToolUse hooks), `args_hash` their hash
 * (`Approvals.hashArgs`); answer with `approval_id`.
 *
 * @since 0.1.0
 * @category models
 */
export const ApprovalRequested = Schema.TaggedStruct("ApprovalRequested", {
  approval_id: Schema.String,
  /** Absent in JSON mode. */
  tool_call_id: Schema.optional(Schema.String),
  tool_name: Schema.String,
  tool_args: Schema.Unknown,
  args_hash: Schema.String,
  iteration: Schema.Number,
  step_id,
  agent
})

/**
 * The person's answer to an approval (`reason`: theirs, or `timed out`): approved
 * calls run, denied ones do not.
 *
 * @since 0.1.0
 * @category models
 */
export const ApprovalDecided = Schema.TaggedStruct("ApprovalDecided", {
  approval_id: Schema.String,
  status: Schema.Literal("approved", "denied"),
  reason: Schema.optional(Schema.String),
  tool_call_id: Schema.optional(Schema.String),
  step_id,
  agent
})

/**
 * The run continued after a restart or on another server instance (emitted once
 * per resume, before the run's next events).
 *
 * @since 0.1.0
 * @category models
 */
export const Resumed = Schema.TaggedStruct("Resumed", { agent })

/**
 * A guardrail tripped (docs/guardrails.md): on the input (the run ends with the refusal) or
 * on the answer (it is retracted and replaced with the refusal).
 *
 * @since 0.1.0
 * @category models
 */
export const GuardrailTripped = Schema.TaggedStruct("GuardrailTripped", {
  stage: Schema.Literal("input", "output"),
  name: Schema.String,
  reason: Schema.String,
  step_id,
  agent
})

/**
 * The model call failed and is retried (rate limit, server error, timeout,
 * connection): the run is waiting, not stuck.
 *
 * @since 0.1.0
 * @category models
 */
export const LlmRetry = Schema.TaggedStruct("LlmRetry", {
  attempt: Schema.Number,
  reason: LlmErrorReason,
  /** How long until the retry (ms). */
  delay_ms: Schema.Number,
  agent
})

/**
 * @since 0.1.0
 * @category models
 */
export const PendingInjection = Schema.Struct({ id: Schema.String, content: Schema.String })

/**
 * @since 0.1.0
 * @category models
 */
export const Done = Schema.TaggedStruct("Done", {
  answer: Schema.String,
  iterations: Schema.Number,
  usage: RunUsage,
  /** Seconds. */
  elapsed: Schema.Number,
  conversation_id: Schema.optional(Schema.String),
  /** The run's id (`RunInput.runId` or a fresh `run_…` id; a server run's is its stored run's, listed in `turn_details`). */
  run_id: Schema.optional(Schema.String),
  pending_injections: Schema.Array(PendingInjection),
  /** A server run stopped by a cancel (`POST /api/react/cancel`, the detach grace): `true`; absent otherwise. */
  cancelled: Schema.optional(Schema.Boolean),
  /** In-process only: every tool step of the run. */
  steps: Schema.optional(Schema.Array(Schema.typeSchema(ToolDone).pipe(Schema.omit("_tag")))),
  /** In-process only: the full message list of the run (system prompt, query, loop messages). */
  messages: Schema.optional(Schema.Array(ChatMessage)),
  /** The decoded answer of a run with an output schema (`RunInput.output`), in its encoded (JSON) form. */
  output: Schema.optional(Schema.Unknown)
})
/**
 * @since 0.1.0
 * @category models
 */
export const RunFailed = Schema.TaggedStruct("RunFailed", {
  message: Schema.String,
  retryable: Schema.Boolean,
  /** What failed, when it has a name: `output_invalid` (the answer did not match the output schema). */
  code: Schema.optional(Schema.String)
})

/**
 * @since 0.1.0
 * @category models
 */
export const RunEvent = Schema.Union(
  ThinkingStart,
  ThinkingDone,
  ToolStart,
  ToolDone,
  AnswerSignal,
  AnswerStart,
  AnswerDelta,
  AnswerDone,
  AnswerReset,
  Compact,
  PhaseChange,
  Inject,
  ApprovalRequested,
  ApprovalDecided,
  DagPlan,
  DagStep,
  DagPhase,
  Resumed,
  BudgetExhausted,
  BudgetStatus,
  GuardrailTripped,
  LlmRetry,
  AgentStart,
  AgentDone,
  ToolProgress,
  OutputPartial,
  Queued,
  AttachmentsReceived,
  ...memoryEvents,
  Done,
  RunFailed
)
/**
 * @since 0.1.0
 * @category models
 */
export type RunEvent = typeof RunEvent.Type
/**
 * @since 0.1.0
 * @category models
 */
export type Done = typeof Done.Type

/**
 * The result a run collects to.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunResult {
  readonly answer: string
  readonly steps: ReadonlyArray<Step>
  readonly iterations: number
  readonly usage: typeof RunUsage.Type
  readonly messages: ReadonlyArray<ChatMessage>
  readonly elapsed: number
  readonly pendingInjections: ReadonlyArray<typeof PendingInjection.Type>
  /** The run's id (`Done.run_id`). */
  readonly runId?: string
  /** Set when the run failed (the stream still ended with `Done`). */
  readonly error?: RunError
  /** The typed answer (`Done.output`, encoded) of a run with an output schema. */
  readonly output?: unknown
}

/**
 * For consumers that cannot take text back (an OpenAI-compatible stream, a
 * terminal pipe): holds the answer events a loop streams before it knows they
 * are the answer (synthesis policy `auto`), releasing them at `AnswerSignal` and
 * dropping them at `AnswerReset`. Every other event passes at once, in order
 * after what is held. One instance per run.
 *
 * @since 0.1.0
 * @category combinators
 */
export const settledAnswers: () => (event: RunEvent) => ReadonlyArray<RunEvent> = internalSettled
