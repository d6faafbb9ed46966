/**
 * Native function-calling mode (SPEC §3.3): tools in the `tools` parameter, the
 * reply's calls executed concurrently, one `tool` message per call in request order
 * right after the assistant message, before anything else.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Runtime from "effect/Runtime"
import type { ChatRequest, ChatResponse, ResponseToolCall } from "../../Llm.js"
import * as Message from "../../Message.js"
import { cycleCheck, drainInterrupts, finalAnswer, reflectionCheck } from "./harness.js"
import type { LoopEnv, RunState } from "./state.js"
import { append } from "./state.js"
import { isDone } from "./timeout.js"
import type { CallRequest, CallResult } from "./toolCall.js"
import { emitStart, executeCall } from "./toolCall.js"

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

/**
 * Runs a round's calls concurrently, results in request order. Each call runs as far
 * as it can at once (see `executeCall`); only a call that suspends gets a fiber (and
 * its tool its own), and the round waits for those with one `Effect.async`. When the
 * round is interrupted, the pending calls are interrupted and awaited.
 */
const runRound = (
  env: LoopEnv,
  state: RunState,
  calls: ReadonlyArray<CallRequest>,
  iteration: number,
  runtime: Runtime.Runtime<never>
): Effect.Effect<Array<CallResult>> => {
  const n = calls.length
  const results = new Array<CallResult>(n)
  let pending: Array<Fiber.RuntimeFiber<CallResult>> | undefined
  let pendingAt: Array<number> | undefined
  for (let i = 0; i < n; i++) {
    const effect = executeCall(env, state, calls[i], iteration, runtime)
    if (isDone(effect)) {
      results[i] = effect.value
      continue
    }
    const fiber = Runtime.runFork(runtime)(effect)
    const exit = fiber.unsafePoll()
    if (exit !== null && exit._tag === "Success") {
      results[i] = exit.value
      continue
    }
    ;(pending ??= []).push(fiber)
    ;(pendingAt ??= []).push(i)
  }
  if (pending === undefined) return Effect.succeed(results)
  const fibers = pending
  const at = pendingAt!
  const waitAll = Effect.async<void>((resume) => {
    let left = fibers.length
    const observer = () => {
      if (--left === 0) resume(Effect.void)
    }
    for (const fiber of fibers) fiber.addObserver(observer)
    return Effect.sync(() => {
      for (const fiber of fibers) fiber.removeObserver(observer)
    })
  })
  return waitAll.pipe(
    Effect.onInterrupt(() => Fiber.interruptAll(fibers)),
    Effect.flatMap(() => {
      for (let k = 0; k < fibers.length; k++) {
        const exit = fibers[k].unsafePoll()!
        if (exit._tag === "Failure") return Effect.failCause(exit.cause)
        results[at[k]] = exit.value
      }
      return Effect.succeed(results)
    })
  )
}

/** Handles one native reply; true when the loop is finished. */
export const nativeStep = (
  env: LoopEnv,
  state: RunState,
  response: ChatResponse,
  iteration: number,
  runtime: Runtime.Runtime<never>
): Effect.Effect<boolean> => {
  if (response.toolCalls.length === 0) {
    append(state, Message.assistant(response.content))
    env.emit({ _tag: "ThinkingDone", iteration, reasoning: response.reasoning ?? "" })
    return Effect.map(
      drainInterrupts(env, state),
      (interrupted) => interrupted ? false : finalAnswer(env, state, iteration, response.content)
    )
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
  const onInterrupt = () =>
    Effect.sync(() => {
      for (const call of calls) append(state, Message.tool(call.id!, "Error: interrupted", call.name))
    })
  const after = (results: ReadonlyArray<CallResult>): Effect.Effect<boolean> => {
    for (let i = 0; i < calls.length; i++) {
      state.steps.push(results[i].step)
      append(state, Message.tool(calls[i].id!, results[i].modelText, calls[i].name))
    }
    cycleCheck(env, state, calls)
    reflectionCheck(env, state, iteration)
    return Effect.as(drainInterrupts(env, state), false)
  }
  let round: Effect.Effect<Array<CallResult>>
  try {
    round = runRound(env, state, calls, iteration, runtime)
  } catch (defect) {
    round = Effect.die(defect)
  }
  return isDone(round) ? after(round.value) : Effect.flatMap(Effect.onInterrupt(round, onInterrupt), after)
}
