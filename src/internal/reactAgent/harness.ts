/**
 * Harness features of the ReAct loop (SPEC §3.5, §8): context guard, loop LLM call
 * with context-overflow recovery, interrupts, cycle detection, self-reflection and
 * the completion checklist.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { CheckOptions } from "../../ContextGuard.js"
import type { ChatRequest, ChatResponse } from "../../Llm.js"
import { LlmError } from "../../Llm.js"
import * as Message from "../../Message.js"
import { CHECKLIST_MAX_ANSWER_CHARS } from "../../AgentConfig.js"
import type { CallRequest } from "./toolCall.js"
import { cycleKey } from "./toolCall.js"
import type { LoopEnv, RunState } from "./state.js"
import { addUsage, append } from "./state.js"
import * as Prompts from "./prompts.js"

/** Runs the context guard on the model's list; emits `Compact` and counts its usage. */
export const guardCheck = (env: LoopEnv, state: RunState, options: CheckOptions): Effect.Effect<void> =>
  Effect.map(env.guard.checkAndCompact(state.ctx, options), (result) => {
    addUsage(state, "compaction", result.usage)
    if (result.compacted) {
      state.ctx = result.messages.slice()
      env.emit({ _tag: "Compact", original_messages: result.originalMessages, kept_messages: result.keptMessages })
    }
  })

/**
 * One loop LLM call. When the provider rejects the request as too long, force-compact
 * to 50 % of the guard's budget and retry once per run.
 */
export const callLlm = (
  env: LoopEnv,
  state: RunState,
  request: (messages: ReadonlyArray<Message.ChatMessage>) => ChatRequest
): Effect.Effect<ChatResponse, LlmError> =>
  env.llm.chat(request(state.ctx.slice())).pipe(
    Effect.catchIf(
      (e): e is LlmError => e instanceof LlmError && e.reason === "ContextOverflow" && !state.overflowRetried,
      () =>
        Effect.gen(function*() {
          state.overflowRetried = true
          yield* guardCheck(env, state, { budget: Math.max(1, Math.floor(env.guard.budget / 2)), hint: "react_iteration" })
          return yield* env.llm.chat(request(state.ctx.slice()))
        })
    ),
    Effect.map((response) => {
      addUsage(state, "loop", response.usage)
      state.loopTokens += response.usage.total_tokens
      return response
    })
  )

/**
 * Drains the conversation's interrupts: everything becomes ONE pinned user message
 * starting `[USER INTERRUPT]`, plus one `Inject` event per message. True when any.
 */
export const drainInterrupts = (env: LoopEnv, state: RunState): Effect.Effect<boolean> =>
  Effect.map(env.interrupts.drain(env.conversationId), (items) => {
    if (items.length === 0) return false
    const contents = items.map((i) => i.content)
    append(state, Message.user(Prompts.interruptMessage(contents), { pinned: true }))
    for (const item of items) {
      state.injected.push(item.content)
      env.emit({ _tag: "Inject", content: item.content, id: item.id })
    }
    return true
  })

/** Counts identical calls; appends the warning when a key reaches the threshold (and at every further one). */
export const cycleCheck = (env: LoopEnv, state: RunState, calls: ReadonlyArray<CallRequest>): void => {
  const threshold = env.options.cycleDetectionThreshold
  for (const call of calls) {
    const key = cycleKey(call)
    const count = (state.cycles.get(key) ?? 0) + 1
    state.cycles.set(key, count)
    if (count >= threshold) append(state, Message.user(Prompts.cycleWarning(call.name, count)))
  }
}

/** Self-reflection every N tool actions (JSON) / rounds (native), not on the last iteration. */
export const reflectionCheck = (env: LoopEnv, state: RunState, iteration: number): void => {
  state.reflectionCount++
  const every = env.options.selfReflectionInterval
  if (every > 0 && state.reflectionCount % every === 0 && iteration < env.maxIterations) {
    append(state, Message.user(Prompts.reflectionPrompt(env.goal)))
  }
}

/**
 * The final path once interrupts are handled: the completion checklist (once per run,
 * ≥ N tool calls, not on the last iteration, answers ≤ 800 chars), else accept.
 * True when the loop is finished.
 */
export const finalAnswer = (
  env: LoopEnv,
  state: RunState,
  iteration: number,
  answer: string,
  options?: { readonly skipChecklist?: boolean }
): boolean => {
  const o = env.options
  if (
    !options?.skipChecklist && o.completionCheck && !state.checklistDone &&
    state.steps.length > 0 && state.steps.length >= o.completionCheckMinTools && iteration < env.maxIterations &&
    answer.length <= CHECKLIST_MAX_ANSWER_CHARS
  ) {
    state.checklistDone = true
    append(state, Message.user(Prompts.CHECKLIST_PROMPT))
    return false
  }
  state.answer = answer
  state.stop = "answer"
  return true
}
