/**
 * Native function-calling mode (SPEC §3.3): tools in the `tools` parameter, the
 * reply's calls executed concurrently, one `tool` message per call in request order
 * right after the assistant message, before anything else.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { ChatRequest, ChatResponse, ResponseToolCall } from "../Llm.js"
import * as Message from "../Message.js"
import { cycleCheck, drainInterrupts, finalAnswer, reflectionCheck } from "./loopHarness.js"
import type { LoopEnv, RunState } from "./loopState.js"
import { append } from "./loopState.js"
import type { CallRequest } from "./loopTools.js"
import { emitStart, executeCall } from "./loopTools.js"

/** The native request for a message list (`tools` and `tool_choice` omitted when no tools). */
export const nativeRequest = (env: LoopEnv) => (messages: ReadonlyArray<Message.ChatMessage>): ChatRequest => {
  const tools = env.tools.definitions()
  return tools.length > 0 ? { messages, tools, toolChoice: "auto" } : { messages }
}

/** Unique, non-empty ids (a provider quirk must not break the pairing of calls and results). */
const normaliseIds = (calls: ReadonlyArray<ResponseToolCall>, iteration: number): Array<CallRequest> => {
  const seen = new Set<string>()
  return calls.map((c, n) => {
    let id = c.id
    if (id === "" || seen.has(id)) id = `call_${iteration}_${n}_${c.id}`
    seen.add(id)
    const shownArgs = c.parsed._tag === "Right" ? c.parsed.right : c.arguments
    return { name: c.name, args: c.parsed, shownArgs, id }
  })
}

/** Handles one native reply; true when the loop is finished. */
export const nativeStep = (
  env: LoopEnv,
  state: RunState,
  response: ChatResponse,
  iteration: number
): Effect.Effect<boolean> =>
  Effect.gen(function*() {
    if (response.toolCalls.length === 0) {
      append(state, Message.assistant(response.content))
      env.emit({ _tag: "ThinkingDone", iteration, reasoning: response.reasoning ?? "" })
      if (yield* drainInterrupts(env, state)) return false
      return finalAnswer(env, state, iteration, response.content)
    }
    const calls = normaliseIds(response.toolCalls, iteration)
    append(
      state,
      Message.assistant(response.content === "" ? null : response.content, {
        toolCalls: calls.map((c, i) => Message.toolCall(c.id!, c.name, response.toolCalls[i].arguments))
      })
    )
    env.emit({ _tag: "ThinkingDone", iteration, reasoning: response.reasoning || response.content })
    for (const call of calls) emitStart(env, call, iteration)
    const round = calls.length === 1
      ? Effect.map(executeCall(env, state, calls[0], iteration), (r) => [r])
      : Effect.forEach(calls, (call) => executeCall(env, state, call, iteration), { concurrency: "unbounded" })
    const results = yield* round.pipe(
      Effect.onInterrupt(() =>
        Effect.sync(() => {
          for (const call of calls) append(state, Message.tool(call.id!, "Error: interrupted", call.name))
        })
      )
    )
    for (let i = 0; i < calls.length; i++) {
      state.steps.push(results[i].step)
      append(state, Message.tool(calls[i].id!, results[i].modelText, calls[i].name))
    }
    cycleCheck(env, state, calls)
    reflectionCheck(env, state, iteration)
    yield* drainInterrupts(env, state)
    return false
  })
