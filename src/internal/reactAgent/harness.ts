/**
 * Harness features of the ReAct loop: the context guard, the loop LLM call with
 * context-overflow recovery, user interrupts, cycle detection, self-reflection
 * and the completion checklist. What is not deterministic (the guard's
 * compaction, the LLM's reply, what the user injected) is a journal activity.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as Schema from "effect/Schema"
import { CHECKLIST_MAX_ANSWER_CHARS } from "../../AgentConfig.js"
import type { CheckOptions } from "../../ContextGuard.js"
import type { ChatRequest, LlmError } from "../../Llm.js"
import * as Message from "../../Message.js"
import { Usage } from "../../Usage.js"
import type { LoopReply } from "./answerStream.js"
import type { LoopEnv } from "./env.js"
import { Injections, loopCall, takeIn } from "./loopCall.js"
import * as Prompts from "./prompts.js"
import * as State from "./state.js"
import type { RunState, StateRef } from "./state.js"
import type { CallRequest } from "./toolCall.js"
import { cycleKey } from "./toolCall.js"

/** A guard check as a durable run stores it: the new list only when it changed. */
const GuardResult = Schema.Struct({
  messages: Schema.optional(Schema.Array(Message.ChatMessage)),
  originalMessages: Schema.Number,
  keptMessages: Schema.Number,
  usage: Usage
})

/**
 * Runs the context guard on the model's list (emits `Compact` and counts its
 * usage), then `next`. A list the guard says fits is left as it is without a
 * journal entry (the check is a pure function of the list): only checks that
 * may change it are stored.
 */
export const guardThen = <A, E>(
  env: LoopEnv,
  state: StateRef,
  name: string,
  options: CheckOptions,
  next: Effect.Effect<A, E>
): Effect.Effect<A, E> =>
  Effect.flatMap(
    Ref.get(state),
    (s) => env.guard.fits(s.ctx, options) ? next : Effect.zipRight(compact(env, state, s.ctx, name, options), next)
  )

/** The guard's check of a list that may not fit, as a journal activity. */
const compact = (
  env: LoopEnv,
  state: StateRef,
  ctx: ReadonlyArray<Message.ChatMessage>,
  name: string,
  options: CheckOptions
): Effect.Effect<void> =>
  env.journal.activity({
    name,
    success: GuardResult,
    execute: () =>
      Effect.map(env.guard.checkAndCompact(ctx, options), (result) => ({
        ...(result.compacted ? { messages: result.messages } : {}),
        originalMessages: result.originalMessages,
        keptMessages: result.keptMessages,
        usage: result.usage
      }))
  }).pipe(
    Effect.flatMap((result) =>
      Effect.zipRight(
        Ref.update(state, (s) => {
          const counted = State.addUsage(s, "compaction", result.usage)
          return result.messages === undefined ? counted : State.replaceContext(counted, result.messages)
        }),
        result.messages === undefined ? Effect.void : env.journal.emit({
          _tag: "Compact",
          original_messages: result.originalMessages,
          kept_messages: result.keptMessages
        })
      )
    )
  )

/**
 * Whether a final answer from this iteration would be held back for the
 * completion checklist (once per run, after ≥ N tool calls, not on the last
 * iteration; answers over 800 chars skip it).
 */
const checklistDue = (env: LoopEnv, state: RunState, iteration: number): boolean => {
  const o = env.options
  return o.completionCheck && !state.checklistDone && state.steps.length > 0 &&
    state.steps.length >= o.completionCheckMinTools && iteration < env.maxIterations
}

/**
 * Synthesis policy `auto` in native mode: the call is streamed and its text
 * shown as the answer while it is written — except when the checklist would
 * hold back a final answer from it (that reply is no answer yet).
 */
const streamsAnswer = (env: LoopEnv, state: RunState, iteration: number): boolean =>
  env.native && env.options.synthesis === "auto" && !checklistDue(env, state, iteration)

/**
 * One loop LLM call. When the provider rejects the request as too long,
 * force-compact to 50 % of the guard's budget and retry, once per run. A drain
 * left due by the last tool round is carried by the call's activity
 * (`loopCall.ts`); when it took messages in, they join the list first and the
 * model is asked in an activity of its own.
 */
export const callLlm = (
  env: LoopEnv,
  state: StateRef,
  iteration: number,
  request: (messages: ReadonlyArray<Message.ChatMessage>) => ChatRequest
): Effect.Effect<LoopReply, LlmError> => {
  const counted = (reply: LoopReply) =>
    Effect.as(Ref.update(state, (s) => State.recordLoopUsage(s, reply.response.usage)), reply)
  const ask = (name: string, drainBefore: boolean): Effect.Effect<LoopReply, LlmError> =>
    Effect.flatMap(
      Effect.flatMap(Ref.get(state), (s) =>
        loopCall(env, name, request(s.ctx), iteration, { stream: streamsAnswer(env, s, iteration), drainBefore })),
      (call) =>
        call._tag === "Reply"
          ? Effect.succeed(call.reply)
          : Effect.zipRight(takeIn(env, state, call.drained), ask(`${name}/drained`, false))
    )
  return Effect.flatMap(
    Ref.modify(state, State.takeDrainDue),
    (due) =>
      Effect.matchEffect(ask(`llm/${iteration}`, due !== undefined), {
        onFailure: (e) =>
          Effect.flatMap(Ref.get(state), (s) => {
            if (e.reason !== "ContextOverflow" || s.overflowRetried) return Effect.fail(e)
            const budget = Math.max(1, Math.floor(env.guard.budget / 2))
            const retry = Effect.suspend(() => ask(`llm/${iteration}/retry`, false))
            return Effect.zipRight(
              Ref.set(state, State.markOverflowRetried(s)),
              Effect.flatMap(
                guardThen(env, state, `guard/${iteration}/overflow`, { budget, hint: "react_iteration" }, retry),
                counted
              )
            )
          }),
        onSuccess: counted
      })
  )
}

/**
 * Drains the conversation's interrupts as a step of its own (`takeIn`). True
 * when anything was drained. `point` names the drain point within the
 * iteration (a durable run stores what each drain took).
 */
export const drainInterrupts = (
  env: LoopEnv,
  state: StateRef,
  iteration: number,
  point: string
): Effect.Effect<boolean> => {
  const name = `drain/${iteration}/${point}`
  return env.journal.activity({
    name,
    success: Injections,
    execute: () => env.interrupts.drain(env.conversationId, { key: env.journal.idempotencyKey?.(name) })
  }).pipe(Effect.flatMap((items) => takeIn(env, state, items)))
}

/**
 * The drain after a reply: carried by the reply's activity (`LoopReply.drained`),
 * or a step of its own for a reply stored by an earlier version.
 */
export const drainAfterReply = (
  env: LoopEnv,
  state: StateRef,
  reply: LoopReply,
  iteration: number,
  point: string
): Effect.Effect<boolean> =>
  reply.drained !== undefined ? takeIn(env, state, reply.drained) : drainInterrupts(env, state, iteration, point)

/** A stop of the loop with the drain of the last tool round still due: it is made on its own. */
export const drainIfDue = (env: LoopEnv, state: StateRef): Effect.Effect<void> =>
  Effect.flatMap(
    Ref.modify(state, State.takeDrainDue),
    (due) => due === undefined ? Effect.void : Effect.asVoid(drainInterrupts(env, state, due, "tools"))
  )

/** Counts identical calls; appends the warning when a key reaches the threshold (and at every further one). */
export const cycleCheck = (env: LoopEnv, state: RunState, calls: ReadonlyArray<CallRequest>): RunState => {
  const threshold = env.options.cycleDetectionThreshold
  let s = state
  for (const call of calls) {
    const [count, counted] = State.countCall(s, cycleKey(call))
    s = count >= threshold ? State.append(counted, Message.user(Prompts.cycleWarning(call.name, count))) : counted
  }
  return s
}

/** Self-reflection every N tool actions (JSON) / rounds (native), not on the last iteration. */
export const reflectionCheck = (env: LoopEnv, state: RunState, iteration: number): RunState => {
  const [count, counted] = State.countReflection(state)
  const every = env.options.selfReflectionInterval
  return every > 0 && count % every === 0 && iteration < env.maxIterations
    ? State.append(counted, Message.user(Prompts.reflectionPrompt(env.goal)))
    : counted
}

/**
 * The final path once interrupts are handled: the completion checklist (once per
 * run, ≥ N tool calls, not on the last iteration, answers ≤ 800 chars), else
 * accept. True when the loop is finished.
 */
export const finalAnswer = (
  env: LoopEnv,
  state: StateRef,
  iteration: number,
  answer: string,
  options?: { readonly unparsed?: boolean; readonly streamed?: boolean }
): Effect.Effect<boolean> =>
  Ref.modify(state, (s): readonly [boolean, RunState] => {
    if (!options?.unparsed && checklistDue(env, s, iteration) && answer.length <= CHECKLIST_MAX_ANSWER_CHARS) {
      return [false, State.append(State.markChecklist(s), Message.user(Prompts.CHECKLIST_PROMPT))]
    }
    return [true, State.finish(s, answer, options?.unparsed ? "unparsed" : "answer", options?.streamed ?? false)]
  })
