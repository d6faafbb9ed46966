/**
 * The ReAct tool loop: one loop LLM call per iteration, in either mode, until a
 * final answer, the iteration cap or the turn token budget. Per iteration:
 * context guard → LLM call → the mode's step (tools, harness checks,
 * interrupts).
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import type { LlmError } from "../../Llm.js"
import * as Budget from "./budget.js"
import type { LoopEnv } from "./env.js"
import { callLlm, drainIfDue, guardThen } from "./harness.js"
import { jsonRequest, jsonStep, refreshSystemPrompt } from "./json.js"
import { nativeRequest, nativeStep } from "./native.js"
import * as Prompts from "./prompts.js"
import * as State from "./state.js"
import type { StateRef } from "./state.js"

/**
 * Runs the loop; on return the state's `answer` holds the loop's answer (a
 * summary of the steps when it stopped without one). Fails only with the
 * LLM's error. The interrupt drain after a tool round is carried by the next
 * call's activity (`callLlm`), or made on its own when the loop stops before
 * another call.
 */
export const runLoop = (env: LoopEnv, state: StateRef): Effect.Effect<void, LlmError> =>
  Effect.suspend(() => {
    const request = env.native ? nativeRequest(env) : jsonRequest(env)
    const step = env.native ? nativeStep : jsonStep
    const turnBudget = env.options.maxTurnTokens
    // the loop stops: the drain the last tool round left due is made first, on its own
    const stopping = (stop: Effect.Effect<void>) => Effect.zipRight(drainIfDue(env, state), stop)
    const stopWith = (reason: "max_iterations" | "token_budget", limit: number) =>
      stopping(Ref.update(state, (s) => State.finish(s, Prompts.stoppedSummary(reason, limit, s.steps), reason)))
    const iterate: Effect.Effect<void, LlmError> = Effect.flatMap(Ref.get(state), (current) => {
      if (current.iterations >= env.maxIterations) return stopWith("max_iterations", env.maxIterations)
      if (turnBudget > 0 && current.loopTokens >= turnBudget) return stopWith("token_budget", turnBudget)
      const s = env.native ? current : refreshSystemPrompt(env, current)
      if (!Budget.affordable(env, s, request)) {
        // calls of parallel runs in flight may free room; else policy `ask`: a person may extend
        // the budget (the check runs again), else the loop stops
        return Effect.zipRight(
          Ref.set(state, s),
          Effect.flatMap(Budget.roomFreed(env), (freed) =>
            freed
              ? iterate
              : Effect.flatMap(
                Budget.askMore(env, state),
                (extended) => (extended ? iterate : stopping(Budget.stop(env, state)))
              ))
        )
      }
      const [iteration, started] = State.beginIteration(s)
      const think = Effect.flatMap(env.journal.emit({ _tag: "ThinkingStart", iteration }), () =>
        Effect.flatMap(
          // a call the ledger refused (a parallel call took the room first) stops the loop like the check
          Effect.catchIf(callLlm(env, state, iteration, request), (e) => e.reason === "Budget", () =>
            Effect.succeed(undefined)),
          (response) =>
            response === undefined
              ? stopping(Budget.stop(env, state))
              : Effect.flatMap(step(env, state, response, iteration), (done) => (done ? Effect.void : iterate))
        ))
      return Effect.zipRight(
        Ref.set(state, started),
        guardThen(env, state, `guard/${iteration}`, { hint: "react_iteration" }, think)
      )
    })
    return iterate
  })
