/**
 * One run of the agent, from registration in the interrupt channel to `Done`:
 * tool selection, the tool loop, answer synthesis. Never fails: failures become
 * `RunFailed` then `Done`; cancellation ends with `Done` too.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { AgentOptions } from "../../AgentConfig.js"
import { streamAnswer } from "../../AnswerSynthesis.js"
import type { ContextGuardService } from "../../ContextGuard.js"
import type { HooksService } from "../../Hooks.js"
import type { Injection, InterruptsService } from "../../Interrupts.js"
import type { LlmService } from "../../Llm.js"
import { LlmError } from "../../Llm.js"
import * as Message from "../../Message.js"
import type { RunInput } from "../../ReactAgent.js"
import type { RunEvent } from "../../RunEvent.js"
import type { Toolkit } from "../../Toolkit.js"
import * as Usage from "../../Usage.js"
import { runLoop } from "./loop.js"
import type { LoopEnv, RunState } from "./state.js"
import { addUsage, makeState, usageByPhase } from "./state.js"
import { setupToolSet } from "./toolSet.js"
import * as Prompts from "./prompts.js"

/** What the agent was built with. */
export interface AgentServices {
  readonly options: AgentOptions
  readonly llm: LlmService
  readonly fast: Option.Option<LlmService>
  readonly toolkit: Toolkit
  readonly hooks: HooksService
  readonly guard: ContextGuardService
  readonly interrupts: InterruptsService
}

const failureOf = (cause: Cause.Cause<unknown>): { readonly message: string; readonly retryable: boolean } => {
  const error = Cause.squash(cause)
  if (error instanceof LlmError) return { message: `LLM error (${error.reason}): ${error.message}`, retryable: error.retryable }
  const message = error instanceof Error ? error.message : String(error)
  return { message: `Internal error: ${message}`, retryable: false }
}

const effectiveMax = (requested: number | undefined, fallback: number): number =>
  requested !== undefined && Number.isInteger(requested) && requested >= 1 ? requested : fallback

/** Runs one request, emitting every event; always ends with `Done`. */
export const execute = (
  services: AgentServices,
  input: RunInput,
  emit: (event: RunEvent) => void
): Effect.Effect<void> =>
  Effect.gen(function*() {
    const { guard, hooks, interrupts, llm, options, toolkit } = services
    const started = yield* Clock.currentTimeMillis
    const conversationId = input.conversationId ?? crypto.randomUUID()
    const goal = Message.textOf(input.query)
    const native = options.useNativeTools && llm.abilities.toolCall
    const maxIterations = effectiveMax(input.maxIterations, options.maxIterations)
    let state: RunState | undefined
    let selectionUsage = Usage.empty
    let failure: { readonly message: string; readonly retryable: boolean } | undefined

    let pending: ReadonlyArray<Injection> | undefined
    const release = Effect.suspend(() =>
      pending !== undefined ? Effect.void : Effect.map(interrupts.unregister(conversationId), (left) => {
        pending = left
      })
    )

    const body = Effect.gen(function*() {
      const selected = yield* setupToolSet({
        toolkit,
        query: goal,
        threshold: options.toolSelectionThreshold,
        max: options.toolSelectionMax,
        llm: Option.getOrElse(services.fast, () => llm),
        emit
      })
      selectionUsage = selected.usage
      const tools = selected.tools
      const system = native
        ? Prompts.nativeSystemPrompt(options.systemPrompt)
        : Prompts.jsonSystemPrompt(tools.advertised(), options.systemPrompt)
      const history = (input.history ?? []).filter((m) => m.role !== "system")
      state = makeState([Message.system(system), ...history, Message.user(input.query, { pinned: true })])
      state.promptVersion = tools.version()
      const env: LoopEnv = {
        llm,
        hooks,
        guard,
        interrupts,
        options,
        maxIterations,
        tools,
        conversationId,
        goal,
        native,
        emit
      }
      yield* runLoop(env, state)
      emit({ _tag: "AnswerSignal" })
      const st = state
      const synthesis = yield* streamAnswer(llm, {
        question: input.query,
        steps: st.steps,
        loopAnswer: st.answer,
        history,
        interrupts: st.injected,
        toolObsTruncation: options.toolObsTruncation
      }, emit)
      addUsage(st, "synthesis", synthesis.usage)
      st.answer = synthesis.answer
    }).pipe(
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : Effect.sync(() => {
          failure = failureOf(cause)
        })
      )
    )

    let cancelled = false
    const guarded = input.cancel === undefined ? body : Effect.raceFirst(
      body,
      Effect.zipRight(input.cancel, Effect.sync(() => {
        cancelled = true
      }))
    )
    const finish = Effect.gen(function*() {
      const exit = yield* Effect.exit(guarded)
      // Still running here: not interrupted from outside, so an interruption in the
      // exit came from inside the run (e.g. a tool interrupting itself) — a failure.
      if (exit._tag === "Failure" && failure === undefined && !cancelled) failure = failureOf(exit.cause)
      yield* release
    })
    yield* Effect.acquireUseRelease(interrupts.register(conversationId), () => finish, () => release)
    if (failure !== undefined) emit({ _tag: "RunFailed", message: failure.message, retryable: failure.retryable })
    let byPhase: Usage.UsageByPhase = state ? usageByPhase(state) : {}
    if (selectionUsage.llm_calls > 0 || selectionUsage.total_tokens > 0) {
      byPhase = Usage.addToPhase(byPhase, "selection", selectionUsage)
    }
    const finished = yield* Clock.currentTimeMillis
    emit({
      _tag: "Done",
      answer: failure !== undefined || cancelled ? "" : state?.answer ?? "",
      iterations: state?.iterations ?? 0,
      usage: Usage.fromPhases(byPhase),
      elapsed: (finished - started) / 1000,
      conversation_id: conversationId,
      pending_injections: (pending ?? []).map((p) => ({ id: p.id, content: p.content })),
      steps: state?.steps ?? [],
      messages: state?.trace ?? []
    })
  })
