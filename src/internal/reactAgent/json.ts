/**
 * JSON mode (SPEC §3.2): the protocol is in the system prompt, the model answers
 * with one JSON object per reply, observations come back as `Observation: …` user
 * messages, one tool per iteration.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type * as Runtime from "effect/Runtime"
import { extractJson } from "../../ExtractJson.js"
import type { ChatRequest, ChatResponse } from "../../Llm.js"
import * as Message from "../../Message.js"
import { cycleCheck, drainInterrupts, finalAnswer, reflectionCheck } from "./harness.js"
import type { LoopEnv, RunState } from "./state.js"
import { append } from "./state.js"
import { chain, isDone } from "./timeout.js"
import type { CallRequest, CallResult } from "./toolCall.js"
import { emitStart, executeCall } from "./toolCall.js"
import * as Prompts from "./prompts.js"

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
    answer: typeof answer === "string" ? answer : answer === undefined || answer === null ? raw : JSON.stringify(answer),
    reasoning
  }
}

/** Rebuilds the system prompt when the advertised tool set changed. */
export const refreshSystemPrompt = (env: LoopEnv, state: RunState): void => {
  const version = env.tools.version()
  if (version === state.promptVersion) return
  state.promptVersion = version
  const prompt = Message.system(Prompts.jsonSystemPrompt(env.tools.advertised(), env.options.systemPrompt))
  if (state.ctx[0]?.role === "system") state.ctx[0] = prompt
  if (state.trace[0]?.role === "system") state.trace[0] = prompt
}

/** The JSON-mode request for a message list. */
export const jsonRequest = (env: LoopEnv) => (messages: ReadonlyArray<Message.ChatMessage>): ChatRequest =>
  env.llm.abilities.jsonMode ? { messages, responseFormat: { type: "json_object" } } : { messages }

/** Handles one JSON-mode reply; true when the loop is finished. */
export const jsonStep = (
  env: LoopEnv,
  state: RunState,
  response: ChatResponse,
  iteration: number,
  runtime: Runtime.Runtime<never>
): Effect.Effect<boolean> => {
  const raw = response.content
  append(state, Message.assistant(raw))
  const action = parseAction(raw)
  const reasoning = (action._tag !== "Invalid" && action.reasoning) || response.reasoning || ""
  env.emit({ _tag: "ThinkingDone", iteration, reasoning })
  return chain(drainInterrupts(env, state), (interrupted): Effect.Effect<boolean> => {
    if (action._tag === "Invalid") {
      if (state.parseFailed && !interrupted) {
        return Effect.succeed(finalAnswer(env, state, iteration, raw, { skipChecklist: true }))
      }
      state.parseFailed = true
      if (!interrupted) append(state, Message.user(Prompts.REFORMAT_REQUEST))
      return Effect.succeed(false)
    }
    state.parseFailed = false
    if (action._tag === "Final") {
      return Effect.succeed(interrupted ? false : finalAnswer(env, state, iteration, action.answer))
    }
    const call = action.call
    emitStart(env, call, iteration)
    const after = (result: CallResult): Effect.Effect<boolean> => {
      state.steps.push(result.step)
      append(state, Message.user(`Observation: ${result.modelText}`))
      cycleCheck(env, state, [call])
      reflectionCheck(env, state, iteration)
      return Effect.succeed(false)
    }
    const execution = executeCall(env, state, call, iteration, runtime)
    return isDone(execution) ? after(execution.value) : Effect.flatMap(
      Effect.onInterrupt(execution, () => Effect.sync(() => append(state, Message.user("Observation: Error: interrupted")))),
      after
    )
  })
}
