/**
 * The state of one run of the ReAct loop, and every change made to it. Only the
 * transitions below write to it, and only the run's own fiber calls them —
 * never a tool fiber: what a round of parallel calls changes (steps, the
 * tool-result budget, messages) is applied after the round, in request order,
 * so the same replies always give the same state, whichever call finished first.
 *
 * The message lists are loop-local arrays appended in place (no per-step copy
 * of the history); `ctx` is what the model is sent (replaced by compaction),
 * `trace` the full run (never compacted).
 *
 * @internal
 */
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

type MutableUsage = { -readonly [F in keyof Usage.Usage]: Usage.Usage[F] }

/** A run's state, read-only outside this module. */
export interface RunState {
  readonly ctx: ReadonlyArray<ChatMessage>
  readonly trace: ReadonlyArray<ChatMessage>
  readonly steps: ReadonlyArray<Step>
  /** Contents of the user interrupts taken in, in order. */
  readonly injected: ReadonlyArray<string>
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

interface Mutable {
  ctx: Array<ChatMessage>
  trace: Array<ChatMessage>
  steps: Array<Step>
  injected: Array<string>
  usage: { [K in Usage.Phase]?: MutableUsage }
  cycles: Map<string, number>
  iterations: number
  reflectionCount: number
  checklistDone: boolean
  overflowRetried: boolean
  drainDue: number | undefined
  budgetWaits: number
  obsTokens: number
  loopTokens: number
  parseFailed: boolean
  promptVersion: number
  answer: string
  stop: StopReason
  answerStreamed: boolean
}

const mutable = (state: RunState): Mutable => state as unknown as Mutable

/** A fresh state from the initial messages. */
export const make = (initial: ReadonlyArray<ChatMessage>, promptVersion: number): RunState => {
  const state: Mutable = {
    ctx: initial.slice(),
    trace: initial.slice(),
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
  }
  return state as unknown as RunState
}

/** Appends a message to both the model's list and the trace. */
export const append = (state: RunState, message: ChatMessage): void => {
  const s = mutable(state)
  s.ctx.push(message)
  s.trace.push(message)
}

/** Starts an iteration; returns its number (1-based). */
export const beginIteration = (state: RunState): number => ++mutable(state).iterations

/** The context guard replaced the model's list (the trace keeps everything). */
export const replaceContext = (state: RunState, messages: ReadonlyArray<ChatMessage>): void => {
  mutable(state).ctx = messages.slice()
}

/** Replaces the system prompt (JSON mode, after the advertised tools changed). */
export const replaceSystemPrompt = (state: RunState, prompt: string, version: number): void => {
  const s = mutable(state)
  s.promptVersion = version
  const message = Message.system(prompt)
  if (s.ctx[0]?.role === "system") s.ctx[0] = message
  if (s.trace[0]?.role === "system") s.trace[0] = message
}

/** Adds usage to a phase (nothing is counted for an empty usage). */
export const addUsage = (state: RunState, phase: Usage.Phase, usage: Usage.Usage): void => {
  if (usage.llm_calls === 0 && usage.total_tokens === 0) return
  const s = mutable(state)
  const acc = s.usage[phase]
  if (acc === undefined) {
    s.usage[phase] = { ...usage }
    return
  }
  acc.prompt_tokens += usage.prompt_tokens
  acc.completion_tokens += usage.completion_tokens
  acc.total_tokens += usage.total_tokens
  acc.llm_calls += usage.llm_calls
  if (usage.cached_tokens !== undefined) acc.cached_tokens = (acc.cached_tokens ?? 0) + usage.cached_tokens
  if (usage.cached_input_tokens !== undefined) acc.cached_input_tokens = (acc.cached_input_tokens ?? 0) + usage.cached_input_tokens
  if (usage.cache_write_input_tokens !== undefined) {
    acc.cache_write_input_tokens = (acc.cache_write_input_tokens ?? 0) + usage.cache_write_input_tokens
  }
}

/** A loop LLM reply's usage: counted in the `loop` phase and against the turn token budget. */
export const recordLoopUsage = (state: RunState, usage: Usage.Usage): void => {
  addUsage(state, "loop", usage)
  mutable(state).loopTokens += usage.total_tokens
}

/** The per-phase breakdown (copies). */
export const usageByPhase = (state: RunState): Usage.UsageByPhase => {
  const out: { [K in Usage.Phase]?: Usage.Usage } = {}
  const usage = mutable(state).usage
  for (const phase of Object.keys(usage) as Array<Usage.Phase>) out[phase] = { ...usage[phase]! }
  return out
}

/** The provider rejected the request as too long once; not again in this run. */
export const markOverflowRetried = (state: RunState): void => {
  mutable(state).overflowRetried = true
}

/** A tool round ended: the interrupts are drained before the next loop call. */
export const setDrainDue = (state: RunState, iteration: number): void => {
  mutable(state).drainDue = iteration
}

/** The due drain's iteration, if any; it is no longer due. */
export const takeDrainDue = (state: RunState): number | undefined => {
  const due = state.drainDue
  mutable(state).drainDue = undefined
  return due
}

/** JSON mode: whether the last reply failed to parse. */
export const setParseFailed = (state: RunState, failed: boolean): void => {
  mutable(state).parseFailed = failed
}

/**
 * Applies the per-run tool-result budget to an observation the model is about
 * to see: within the budget it passes whole (and counts); past it, it is cut to
 * what is left, with a notice.
 */
export const admitObservation = (state: RunState, text: string, budget: number): string => {
  if (budget <= 0) return text
  const s = mutable(state)
  const tokens = estimateText(text)
  if (s.obsTokens + tokens <= budget) {
    s.obsTokens += tokens
    return text
  }
  const remaining = Math.max(0, budget - s.obsTokens)
  s.obsTokens = budget
  const keep = tokens === 0 ? 0 : Math.floor(text.length * (remaining / tokens))
  return text.slice(0, keep) + Prompts.budgetNotice(budget)
}

/**
 * Records a tool step (events, synthesis trace, the completion checklist's
 * count); LLM usage the tool reported (an agent tool) goes to `subagents`.
 */
export const recordStep = (state: RunState, step: Step): void => {
  mutable(state).steps.push(step)
  if (step.usage !== undefined) addUsage(state, "subagents", step.usage)
}

/** Counts one more call with this identity; returns how many there were. */
export const countCall = (state: RunState, key: string): number => {
  const cycles = mutable(state).cycles
  const count = (cycles.get(key) ?? 0) + 1
  cycles.set(key, count)
  return count
}

/** Counts one more tool action (JSON) or round (native); returns the count. */
export const countReflection = (state: RunState): number => ++mutable(state).reflectionCount

/** The completion checklist was asked (once per run). */
export const markChecklist = (state: RunState): void => {
  mutable(state).checklistDone = true
}

/** User interrupts taken in: one pinned message for all of them. */
export const takeInterrupts = (state: RunState, contents: ReadonlyArray<string>): void => {
  append(state, Message.user(Prompts.interruptMessage(contents), { pinned: true }))
  mutable(state).injected.push(...contents)
}

/** The loop is over with this answer. */
export const finish = (state: RunState, answer: string, stop: StopReason, streamed = false): void => {
  const s = mutable(state)
  s.answer = answer
  s.stop = stop
  s.answerStreamed = streamed
}

/** Synthesis replaced the loop's answer with the one the user received. */
export const setAnswer = (state: RunState, answer: string): void => {
  mutable(state).answer = answer
}

/** Numbers the next budget wait of the run (policy `ask`). */
export const nextBudgetWait = (state: RunState): number => ++mutable(state).budgetWaits
