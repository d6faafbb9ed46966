/**
 * Native function-calling mode: tools in the `tools` parameter, the reply's
 * calls run concurrently, then one `tool` message per call in request order
 * right after the assistant message, before anything else.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import type { ChatRequest, ResponseToolCall } from "../../Llm.js"
import * as Message from "../../Message.js"
import type { LoopReply } from "./answerStream.js"
import type { LoopEnv } from "./env.js"
import { filesOf } from "./files.js"
import { cycleCheck, drainAfterReply, finalAnswer, reflectionCheck } from "./harness.js"
import { runCalls } from "./round.js"
import * as State from "./state.js"
import type { RunState, StateRef } from "./state.js"
import type { CallOutcome, CallRequest } from "./toolCall.js"
import { emitStart, observationOf, stepOf } from "./toolCall.js"

/** The native request for a message list (`tools` and `tool_choice` omitted when no tools). */
export const nativeRequest = (env: LoopEnv) => (messages: ReadonlyArray<Message.ChatMessage>): ChatRequest => {
  const tools = env.tools.definitions()
  return tools.length > 0 ? { messages, tools, toolChoice: "auto" } : { messages }
}

/** Unique, non-empty ids (a provider quirk must not break the pairing of calls and results). */
const normaliseIds = (
  calls: ReadonlyArray<ResponseToolCall>,
  iteration: number
): Array<CallRequest & { readonly id: string }> => {
  const seen = new Set<string>()
  return calls.map((c, n) => {
    let id = c.id
    // deterministic (a replay renames alike) and unique also when the model sent an id of this very form
    for (let k = 0; id === "" || seen.has(id); k++) id = `call_${iteration}_${n}${k === 0 ? "" : `_${k}`}_${c.id}`
    seen.add(id)
    const shownArgs = c.parsed._tag === "Right" ? c.parsed.right : c.arguments
    return { name: c.name, args: c.parsed, shownArgs, id }
  })
}

/**
 * What a round changes, applied in request order once every call is over: the
 * step, the observation within the tool-result budget, the tool message.
 */
const applyRound = (
  env: LoopEnv,
  state: RunState,
  calls: ReadonlyArray<CallRequest & { readonly id: string }>,
  outcomes: ReadonlyArray<CallOutcome>,
  iteration: number
): RunState => {
  let s = state
  for (let i = 0; i < calls.length; i++) {
    const call = calls[i]
    const outcome = outcomes[i]
    s = State.recordStep(s, stepOf(call, iteration, outcome))
    const seen = observationOf(outcome)
    const [text, admitted] = seen.budgeted
      ? State.admitObservation(s, seen.text, env.options.toolResultBudget)
      : [seen.text, s]
    s = State.append(admitted, Message.tool(call.id, text, call.name, filesOf(outcome)))
  }
  return s
}

/**
 * Handles one native reply; true when the loop is finished. A reply whose text
 * was shown as it streamed (synthesis policy `auto`) is retracted with
 * `AnswerReset` when it turns out not to be the answer: it calls tools, or an
 * interrupt suppresses it.
 */
export const nativeStep = (
  env: LoopEnv,
  state: StateRef,
  reply: LoopReply,
  iteration: number
): Effect.Effect<boolean> =>
  reply.response.toolCalls.length === 0 ? answerStep(env, state, reply, iteration) : Effect.suspend(() => {
    const { response, shown } = reply
    const calls = normaliseIds(response.toolCalls, iteration)
    const asked = Message.assistant(response.content === "" ? null : response.content, {
      toolCalls: calls.map((c, i) => Message.toolCall(c.id, c.name, response.toolCalls[i].arguments))
    })
    const round = Effect.flatMap(
      // cancelled mid-round: every call already sent to the model still gets its tool message
      runCalls(
        env,
        calls,
        iteration,
        () =>
          Ref.update(
            state,
            (s) => State.append(s, ...calls.map((call) => Message.tool(call.id, "Error: interrupted", call.name)))
          )
      ),
      (outcomes) =>
        Effect.as(
          Ref.update(state, (s) => {
            const applied = reflectionCheck(
              env,
              cycleCheck(env, applyRound(env, s, calls, outcomes, iteration), calls),
              iteration
            )
            // drained by the next loop call's activity (or on its own if the loop stops first)
            return State.setDrainDue(applied, iteration)
          }),
          false
        )
    )
    // the events before the round, in order: the shown text retracted, ThinkingDone, each call's ToolStart
    const starts = (i: number): Effect.Effect<boolean> =>
      i === calls.length ? round : Effect.flatMap(emitStart(env, calls[i], iteration), () => starts(i + 1))
    const thinkingDone = Effect.flatMap(
      env.journal.emit({ _tag: "ThinkingDone", iteration, reasoning: response.reasoning || response.content }),
      () => starts(0)
    )
    return Effect.zipRight(
      Ref.update(state, (s) => State.append(s, asked)),
      shown ? Effect.flatMap(env.journal.emit({ _tag: "AnswerReset" }), () => thinkingDone) : thinkingDone
    )
  })

/** A reply without tool calls: the answer, unless an interrupt or the completion checklist holds it back. */
const answerStep = (env: LoopEnv, state: StateRef, reply: LoopReply, iteration: number): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const { response, shown } = reply
    yield* Ref.update(state, (s) => State.append(s, Message.assistant(response.content)))
    yield* env.journal.emit({ _tag: "ThinkingDone", iteration, reasoning: response.reasoning ?? "" })
    const interrupted = yield* drainAfterReply(env, state, reply, iteration, "final")
    const finished = !interrupted && (yield* finalAnswer(env, state, iteration, response.content, { streamed: shown }))
    if (!finished && shown) yield* env.journal.emit({ _tag: "AnswerReset" })
    return finished
  })
