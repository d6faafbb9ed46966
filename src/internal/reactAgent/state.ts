/**
 * The state of one run of the ReAct loop: loop-local mutable arrays (no per-step
 * copies of the history) and counters, plus the services the loop uses.
 *
 * @internal
 */
import type { AgentOptions } from "../../AgentConfig.js"
import type { ContextGuardService } from "../../ContextGuard.js"
import type { HooksService } from "../../Hooks.js"
import type { InterruptsService } from "../../Interrupts.js"
import type { LlmService } from "../../Llm.js"
import type { ChatMessage } from "../../Message.js"
import type { RunEvent, Step } from "../../RunEvent.js"
import type { ActiveToolSet } from "../../ToolSelection.js"
import * as Usage from "../../Usage.js"

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
  /** Usage per phase, accumulated in place (see `usageByPhase`). */
  readonly usage: { [K in Usage.Phase]?: { -readonly [F in keyof Usage.Usage]: Usage.Usage[F] } }
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
  usage: {},
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

/** Adds usage to a phase (in place; nothing is counted for an empty usage). */
export const addUsage = (state: RunState, phase: Usage.Phase, usage: Usage.Usage): void => {
  if (usage.llm_calls === 0 && usage.total_tokens === 0) return
  const acc = state.usage[phase]
  if (acc === undefined) {
    state.usage[phase] = { ...usage }
    return
  }
  acc.prompt_tokens += usage.prompt_tokens
  acc.completion_tokens += usage.completion_tokens
  acc.total_tokens += usage.total_tokens
  acc.llm_calls += usage.llm_calls
  if (usage.cached_tokens !== undefined) acc.cached_tokens = (acc.cached_tokens ?? 0) + usage.cached_tokens
}

/** The per-phase breakdown (copies). */
export const usageByPhase = (state: RunState): Usage.UsageByPhase => {
  const out: { [K in Usage.Phase]?: Usage.Usage } = {}
  for (const phase of Object.keys(state.usage) as Array<Usage.Phase>) out[phase] = { ...state.usage[phase]! }
  return out
}
