/**
 * The state of one run of the ReAct loop as an immutable value, and every
 * change made to it as a pure function from one value to the next. The run
 * holds the current value in a `Ref` (`StateRef`) that only its own fiber
 * updates — never a tool fiber: what a round of parallel calls changes (steps,
 * the tool-result budget, messages) is applied after the round, in request
 * order, so the same replies always give the same state, whichever call
 * finished first. Whatever the run got to when it ends (answered, failed,
 * cancelled) is the `Ref`'s value.
 *
 * `ctx` is what the model is sent (replaced by compaction), `trace` the full
 * run (never compacted).
 *
 * @internal
 */
import type * as Ref from "effect/Ref"
import type { ChatMessage } from "../../Message.js"
import * as Message from "../../Message.js"
import type { Step } from "../../RunEvent.js"
import { estimateText } from "../../TokenEstimator.js"
import type * as Usage from "../../Usage.js"
import * as Prompts from "./prompts.js"

/** Why the loop stopped. */
export type StopReason =
  | "answer"
  /** JSON mode: the model's reply did not parse twice in a row; its raw text is the answer. */
  | "unparsed"
  | "max_iterations"
  | "token_budget"
  /** The run's budget (`budget` option) cannot pay for one more loop call and the answer. */
  | "budget"

/** A run's state. */
export interface RunState {
  readonly ctx: ReadonlyArray<ChatMessage>
  readonly trace: ReadonlyArray<ChatMessage>
  readonly steps: ReadonlyArray<Step>
  /** Contents of the user interrupts taken in, in order. */
  readonly injected: ReadonlyArray<string>
  /** Usage per phase, in the order the phases first spent. */
  readonly usage: Usage.UsageByPhase
  /** How many calls of each identity (name and canonical arguments) the run made. */
  readonly cycles: ReadonlyMap<string, number>
  /** Loop LLM calls made. */
  readonly iterations: number
  /** Tool actions (JSON) / rounds (native), for self-reflection. */
  readonly reflectionCount: number
  readonly checklistDone: boolean
  readonly overflowRetried: boolean
  /**
   * The iteration whose tool round left the interrupt drain due: the next loop
   * call's activity drains first (one stored step for both), or the loop drains
   * on its own when it stops before another call.
   */
  readonly drainDue: number | undefined
  /** Budget waits so far (policy `ask`). */
  readonly budgetWaits: number
  /** Estimated tokens of the observations the model saw (the tool-result budget). */
  readonly obsTokens: number
  /** Tokens used by loop LLM calls (the turn token budget). */
  readonly loopTokens: number
  /** JSON mode: the previous reply did not parse. */
  readonly parseFailed: boolean
  /** JSON mode: the version of the tool set the system prompt was built for. */
  readonly promptVersion: number
  readonly answer: string
  readonly stop: StopReason
  /** The answer reached the user as the loop call streamed it (synthesis policy `auto`). */
  readonly answerStreamed: boolean
}

/** Where the run keeps its current state. */
export type StateRef = Ref.Ref<RunState>

/** A fresh state from the initial messages. */
export const make = (initial: ReadonlyArray<ChatMessage>, promptVersion: number): RunState => ({
  ctx: initial,
  trace: initial,
  steps: [],
  injected: [],
  usage: {},
  cycles: new Map(),
  iterations: 0,
  reflectionCount: 0,
  checklistDone: false,
  overflowRetried: false,
  drainDue: undefined,
  budgetWaits: 0,
  obsTokens: 0,
  loopTokens: 0,
  parseFailed: false,
  promptVersion,
  answer: "",
  stop: "answer",
  answerStreamed: false
})

/** Appends messages to both the model's list and the trace. */
export const append = (state: RunState, ...messages: ReadonlyArray<ChatMessage>): RunState =>
  messages.length === 0 ? state : { ...state, ctx: [...state.ctx, ...messages], trace: [...state.trace, ...messages] }

/** Starts an iteration: its number (1-based), and the state. */
export const beginIteration = (state: RunState): readonly [number, RunState] => {
  const iterations = state.iterations + 1
  return [iterations, { ...state, iterations }]
}

/** The context guard replaced the model's list (the trace keeps everything). */
export const replaceContext = (state: RunState, messages: ReadonlyArray<ChatMessage>): RunState => ({
  ...state,
  ctx: messages
})

/** Replaces the system prompt (JSON mode, after the advertised tools changed). */
export const replaceSystemPrompt = (state: RunState, prompt: string, version: number): RunState => {
  const message = Message.system(prompt)
  const first = (list: ReadonlyArray<ChatMessage>) => list[0]?.role === "system" ? [message, ...list.slice(1)] : list
  return { ...state, promptVersion: version, ctx: first(state.ctx), trace: first(state.trace) }
}

type MutableUsage = { -readonly [F in keyof Usage.Usage]: Usage.Usage[F] }

/** `usage` added to `acc` (a copy of `usage` for the first), fields in the order they first appeared. */
const accumulate = (acc: Usage.Usage | undefined, usage: Usage.Usage): Usage.Usage => {
  if (acc === undefined) return { ...usage }
  const next: MutableUsage = { ...acc }
  next.prompt_tokens += usage.prompt_tokens
  next.completion_tokens += usage.completion_tokens
  next.total_tokens += usage.total_tokens
  next.llm_calls += usage.llm_calls
  if (usage.cached_tokens !== undefined) next.cached_tokens = (next.cached_tokens ?? 0) + usage.cached_tokens
  if (usage.cached_input_tokens !== undefined) {
    next.cached_input_tokens = (next.cached_input_tokens ?? 0) + usage.cached_input_tokens
  }
  if (usage.cache_write_input_tokens !== undefined) {
    next.cache_write_input_tokens = (next.cache_write_input_tokens ?? 0) + usage.cache_write_input_tokens
  }
  return next
}

/** Adds usage to a phase (nothing is counted for an empty usage). */
export const addUsage = (state: RunState, phase: Usage.Phase, usage: Usage.Usage): RunState =>
  usage.llm_calls === 0 && usage.total_tokens === 0
    ? state
    : { ...state, usage: { ...state.usage, [phase]: accumulate(state.usage[phase], usage) } }

/** A loop LLM reply's usage: counted in the `loop` phase and against the turn token budget. */
export const recordLoopUsage = (state: RunState, usage: Usage.Usage): RunState => {
  const counted = addUsage(state, "loop", usage)
  return { ...counted, loopTokens: counted.loopTokens + usage.total_tokens }
}

/** The provider rejected the request as too long once; not again in this run. */
export const markOverflowRetried = (state: RunState): RunState => ({ ...state, overflowRetried: true })

/** A tool round ended: the interrupts are drained before the next loop call. */
export const setDrainDue = (state: RunState, iteration: number): RunState => ({ ...state, drainDue: iteration })

/** The due drain's iteration, if any; it is no longer due. */
export const takeDrainDue = (state: RunState): readonly [number | undefined, RunState] =>
  state.drainDue === undefined ? [undefined, state] : [state.drainDue, { ...state, drainDue: undefined }]

/** JSON mode: whether the last reply failed to parse. */
export const setParseFailed = (state: RunState, failed: boolean): RunState =>
  state.parseFailed === failed ? state : { ...state, parseFailed: failed }

/**
 * Applies the per-run tool-result budget to an observation the model is about
 * to see: within the budget it passes whole (and counts); past it, it is cut to
 * what is left, with a notice.
 */
export const admitObservation = (state: RunState, text: string, budget: number): readonly [string, RunState] => {
  if (budget <= 0) return [text, state]
  const tokens = estimateText(text)
  if (state.obsTokens + tokens <= budget) return [text, { ...state, obsTokens: state.obsTokens + tokens }]
  const remaining = Math.max(0, budget - state.obsTokens)
  const keep = tokens === 0 ? 0 : Math.floor(text.length * (remaining / tokens))
  return [text.slice(0, keep) + Prompts.budgetNotice(budget), { ...state, obsTokens: budget }]
}

/**
 * Records a tool step (events, synthesis trace, the completion checklist's
 * count); LLM usage the tool reported (an agent tool) goes to `subagents`.
 */
export const recordStep = (state: RunState, step: Step): RunState => {
  const recorded = { ...state, steps: [...state.steps, step] }
  return step.usage === undefined ? recorded : addUsage(recorded, "subagents", step.usage)
}

/** Counts one more call with this identity: how many there were, and the state. */
export const countCall = (state: RunState, key: string): readonly [number, RunState] => {
  const count = (state.cycles.get(key) ?? 0) + 1
  const cycles = new Map(state.cycles)
  cycles.set(key, count)
  return [count, { ...state, cycles }]
}

/** Counts one more tool action (JSON) or round (native): the count, and the state. */
export const countReflection = (state: RunState): readonly [number, RunState] => {
  const reflectionCount = state.reflectionCount + 1
  return [reflectionCount, { ...state, reflectionCount }]
}

/** The completion checklist was asked (once per run). */
export const markChecklist = (state: RunState): RunState => ({ ...state, checklistDone: true })

/** User interrupts taken in: one pinned message for all of them. */
export const takeInterrupts = (state: RunState, contents: ReadonlyArray<string>): RunState => {
  const taken = append(state, Message.user(Prompts.interruptMessage(contents), { pinned: true }))
  return { ...taken, injected: [...taken.injected, ...contents] }
}

/** The loop is over with this answer. */
export const finish = (state: RunState, answer: string, stop: StopReason, streamed = false): RunState => ({
  ...state,
  answer,
  stop,
  answerStreamed: streamed
})

/** Synthesis replaced the loop's answer with the one the user received. */
export const setAnswer = (state: RunState, answer: string): RunState => ({ ...state, answer })

/** Numbers the next budget wait of the run (policy `ask`): its number, and the state. */
export const nextBudgetWait = (state: RunState): readonly [number, RunState] => {
  const budgetWaits = state.budgetWaits + 1
  return [budgetWaits, { ...state, budgetWaits }]
}
