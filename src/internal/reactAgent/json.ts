/**
 * JSON mode (for models without native function calling): the protocol is in the system prompt, the model answers
 * with one JSON object per reply, observations come back as `Observation: …` user
 * messages, one tool per iteration.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import { extractJson } from "../../ExtractJson.js"
import type { ChatRequest } from "../../Llm.js"
import * as Message from "../../Message.js"
import type { LoopReply } from "./answerStream.js"
import type { LoopEnv } from "./env.js"
import { observation } from "./files.js"
import { cycleCheck, drainAfterReply, finalAnswer, reflectionCheck } from "./harness.js"
import * as Prompts from "./prompts.js"
import { runCalls } from "./round.js"
import * as State from "./state.js"
import type { RunState, StateRef } from "./state.js"
import type { CallRequest } from "./toolCall.js"
import { emitStart, observationOf, stepOf } from "./toolCall.js"

/** A parsed JSON-mode reply. */
export type Action =
  | { readonly _tag: "Tool"; readonly call: CallRequest; readonly reasoning: string }
  | { readonly _tag: "Final"; readonly answer: string; readonly reasoning: string }
  | { readonly _tag: "Invalid" }

const kindOf = (u: unknown): string => (u === null ? "null" : Array.isArray(u) ? "an array" : typeof u)

/** Parses a JSON-mode reply with `extractJson`. */
export const parseAction = (raw: string): Action => {
  const found = extractJson(raw)
  if (Option.isNone(found)) return { _tag: "Invalid" }
  const obj = found.value
  const reasoning = typeof obj.reasoning === "string" ? obj.reasoning : ""
  if (obj.type === "tool_call") {
    const name = obj.tool_name
    if (typeof name !== "string" || name.trim() === "") return { _tag: "Invalid" }
    const rawArgs = obj.tool_args
    const args: Either.Either<Record<string, unknown>, string> = rawArgs === undefined || rawArgs === null
      ? Either.right({})
      : typeof rawArgs === "object" && !Array.isArray(rawArgs)
      ? Either.right(rawArgs as Record<string, unknown>)
      : Either.left(`tool_args must be a JSON object, got ${kindOf(rawArgs)}`)
    const shownArgs = Either.isRight(args) ? args.right : rawArgs
    return { _tag: "Tool", call: { name: name.trim(), args, shownArgs }, reasoning }
  }
  const answer = obj.answer
  return {
    _tag: "Final",
    answer: typeof answer === "string"
      ? answer
      : answer === undefined || answer === null
      ? raw
      : JSON.stringify(answer),
    reasoning
  }
}

/** Rebuilds the system prompt when the advertised tool set changed. */
export const refreshSystemPrompt = (env: LoopEnv, state: RunState): RunState => {
  const version = env.tools.version()
  if (version === state.promptVersion) return state
  return State.replaceSystemPrompt(
    state,
    Prompts.jsonSystemPrompt(env.tools.advertised(), env.options.systemPrompt),
    version
  )
}

/** The JSON-mode request for a message list. */
export const jsonRequest = (env: LoopEnv) => (messages: ReadonlyArray<Message.ChatMessage>): ChatRequest =>
  env.llm.abilities.jsonMode ? { messages, responseFormat: { type: "json_object" } } : { messages }

/** Handles one JSON-mode reply; true when the loop is finished. */
export const jsonStep = (
  env: LoopEnv,
  state: StateRef,
  reply: LoopReply,
  iteration: number
): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    const { response } = reply
    const raw = response.content
    yield* Ref.update(state, (s) => State.append(s, Message.assistant(raw)))
    const action = parseAction(raw)
    const reasoning = (action._tag !== "Invalid" && action.reasoning) || response.reasoning || ""
    yield* env.journal.emit({ _tag: "ThinkingDone", iteration, reasoning })
    // JSON mode drains right after the assistant message, for tool calls and answers alike (the reply's activity drains)
    const interrupted = yield* drainAfterReply(env, state, reply, iteration, "reply")
    if (action._tag === "Invalid") {
      if ((yield* Ref.get(state)).parseFailed && !interrupted) {
        return yield* finalAnswer(env, state, iteration, raw, { unparsed: true })
      }
      yield* Ref.update(state, (s) => {
        const failed = State.setParseFailed(s, true)
        return interrupted ? failed : State.append(failed, Message.user(Prompts.REFORMAT_REQUEST))
      })
      return false
    }
    yield* Ref.update(state, (s) => State.setParseFailed(s, false))
    if (action._tag === "Final") return interrupted ? false : yield* finalAnswer(env, state, iteration, action.answer)
    const call = action.call
    yield* emitStart(env, call, iteration)
    const [outcome] = yield* runCalls(
      env,
      [call],
      iteration,
      () => Ref.update(state, (s) => State.append(s, Message.user("Observation: Error: interrupted")))
    )
    yield* Ref.update(state, (s) => {
      const recorded = State.recordStep(s, stepOf(call, iteration, outcome))
      const seen = observationOf(outcome)
      const [text, admitted] = seen.budgeted
        ? State.admitObservation(recorded, seen.text, env.options.toolResultBudget)
        : [seen.text, recorded]
      return reflectionCheck(
        env,
        cycleCheck(env, State.append(admitted, observation(`Observation: ${text}`, outcome)), [call]),
        iteration
      )
    })
    return false
  })
