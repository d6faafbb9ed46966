/**
 * The state of one run of the ReAct loop: loop-local mutable arrays (no per-step
 * copies of the history) and counters, plus the services the loop uses.
 *
 * @internal
 */
import type { AgentOptions } from "../AgentConfig.js"
import type { ContextGuardService } from "../ContextGuard.js"
import type { HooksService } from "../Hooks.js"
import type { InterruptsService } from "../Interrupts.js"
import type { LlmService } from "../Llm.js"
import type { ChatMessage } from "../Message.js"
import type { RunEvent, Step } from "../RunEvent.js"
import type { ActiveToolSet } from "../ToolSelection.js"
import * as Usage from "../Usage.js"

/** Services and settings of one run. */
export interface LoopEnv {
  readonly llm: LlmService
  readonly hooks: HooksService
  readonly guard: ContextGuardService
  readonly interrupts: InterruptsService
  readonly options: AgentOptions
  readonly maxIterations: number
  readonly tools: ActiveToolSet
  readonly conversationId: string
  /** The query as text (quoted by self-reflection). */
  readonly goal: string
  readonly native: boolean
  readonly emit: (event: RunEvent) => void
}

/** Why the loop stopped. */
export type StopReason = "answer" | "max_iterations" | "token_budget"

/** Mutable per-run state, owned by the run fiber. */
export interface RunState {
  /** What the loop sends to the model (replaced when the context guard compacts). */
  ctx: Array<ChatMessage>
  /** The full trace of the run (never compacted). */
  readonly trace: Array<ChatMessage>
  readonly steps: Array<Step>
  /** Contents of the user interrupts taken in, in order. */
  readonly injected: Array<string>
  byPhase: Usage.UsageByPhase
  /** Loop LLM calls made. */
  iterations: number
  /** Tool actions (JSON) / rounds (native) since the run started, for self-reflection. */
  reflectionCount: number
  readonly cycles: Map<string, number>
  checklistDone: boolean
  overflowRetried: boolean
  /** Estimated tokens of the observations the model saw. */
  obsTokens: number
  /** Tokens used by loop LLM calls. */
  loopTokens: number
  /** JSON mode: the previous reply did not parse. */
  parseFailed: boolean
  /** JSON mode: the version of the active tool set the system prompt was built for. */
  promptVersion: number
  answer: string
  stop: StopReason
}

/** A fresh state from the initial messages. */
export const makeState = (initial: ReadonlyArray<ChatMessage>): RunState => ({
  ctx: initial.slice(),
  trace: initial.slice(),
  steps: [],
  injected: [],
  byPhase: {},
  iterations: 0,
  reflectionCount: 0,
  cycles: new Map(),
  checklistDone: false,
  overflowRetried: false,
  obsTokens: 0,
  loopTokens: 0,
  parseFailed: false,
  promptVersion: -1,
  answer: "",
  stop: "answer"
})

/** Appends a message to both the model's list and the trace. */
export const append = (state: RunState, message: ChatMessage): void => {
  state.ctx.push(message)
  state.trace.push(message)
}

/** Adds usage to a phase (calls with no usage and no tokens are still counted when `llm_calls > 0`). */
export const addUsage = (state: RunState, phase: Usage.Phase, usage: Usage.Usage): void => {
  if (usage.llm_calls === 0 && usage.total_tokens === 0) return
  state.byPhase = Usage.addToPhase(state.byPhase, phase, usage)
}
