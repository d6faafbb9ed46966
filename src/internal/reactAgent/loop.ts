/**
 * The ReAct tool loop (SPEC §3.4): one loop LLM call per iteration, in either mode,
 * until a final answer, the iteration cap or the turn token budget.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type { LlmError } from "../../Llm.js"
import { callLlm, guardCheck } from "./harness.js"
import { jsonRequest, jsonStep, refreshSystemPrompt } from "./json.js"
import { nativeRequest, nativeStep } from "./native.js"
import type { LoopEnv, RunState } from "./state.js"
import * as Prompts from "./prompts.js"

/**
 * Runs the loop; on return `state.answer` holds the loop's answer (a summary of the
 * steps when it stopped without one). Fails only with the LLM's error.
 */
export const runLoop = (env: LoopEnv, state: RunState): Effect.Effect<void, LlmError> =>
  Effect.gen(function*() {
    const request = env.native ? nativeRequest(env) : jsonRequest(env)
    // The run's runtime (context and fiber refs) for the tool fibers, fetched once.
    const runtime = yield* Effect.runtime<never>()
    const turnBudget = env.options.maxTurnTokens
    while (true) {
      if (state.iterations >= env.maxIterations) {
        state.stop = "max_iterations"
        state.answer = Prompts.stoppedSummary("max_iterations", env.maxIterations, state.steps)
        return
      }
      if (turnBudget > 0 && state.loopTokens >= turnBudget) {
        state.stop = "token_budget"
        state.answer = Prompts.stoppedSummary("token_budget", turnBudget, state.steps)
        return
      }
      const iteration = ++state.iterations
      if (!env.native) refreshSystemPrompt(env, state)
      yield* guardCheck(env, state, { hint: "react_iteration" })
      env.emit({ _tag: "ThinkingStart", iteration })
      const response = yield* callLlm(env, state, request)
      const done = env.native
        ? yield* nativeStep(env, state, response, iteration, runtime)
        : yield* jsonStep(env, state, response, iteration, runtime)
      if (done) return
    }
  })
