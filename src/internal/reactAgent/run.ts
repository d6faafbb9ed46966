/**
 * One run of the agent, in the run lifecycle (`AgentRun.lifecycle`) and up to
 * `Done`: tool selection, the tool loop, answer synthesis. Never fails: a
 * failure becomes `RunFailed` then `Done`; cancellation ends with `Done` too.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import * as Ref from "effect/Ref"
import type { AgentOptions } from "../../AgentConfig.js"
import * as AgentRun from "../../AgentRun.js"
import {
  buildMessages,
  emitAnswer,
  streamAnswer,
  streamWithFallback,
  SynthesisResultSchema
} from "../../AnswerSynthesis.js"
import type { ApprovalsService } from "../../Approvals.js"
import * as Budget from "../../Budget.js"
import type { ContextGuardService } from "../../ContextGuard.js"
import type { HooksService } from "../../Hooks.js"
import type { InterruptsService } from "../../Interrupts.js"
import type { LlmService } from "../../Llm.js"
import { withRetryObserver } from "../../Llm.js"
import type { MemoryService } from "../../Memory.js"
import * as Message from "../../Message.js"
import type { RunInput } from "../../ReactAgent.js"
import type { RunJournal } from "../../RunJournal.js"
import * as Telemetry from "../../Telemetry.js"
import type { ToolkitService } from "../../Toolkit.js"
import * as Usage from "../../Usage.js"
import { makeGate } from "./approval.js"
import { releaseHold } from "./budget.js"
import type { LoopEnv } from "./env.js"
import { announce } from "./files.js"
import * as Guardrails from "./guardrails.js"
import { runLoop } from "./loop.js"
import * as RunMemory from "./memory.js"
import { typedAnswer } from "./output.js"
import * as Prompts from "./prompts.js"
import * as State from "./state.js"
import type { StateRef } from "./state.js"
import { setupToolSet } from "./toolSet.js"

/** What the agent was built with. */
export interface AgentServices {
  readonly options: AgentOptions
  /** The loop and synthesis model. */
  readonly llm: LlmService
  /** The tool-selection model (the registry's `fast` model, else `llm`). */
  readonly selectionLlm: LlmService
  readonly toolkit: ToolkitService
  readonly hooks: HooksService
  readonly guard: ContextGuardService
  readonly interrupts: InterruptsService
  /** Where calls that need a person's approval wait. */
  readonly approvals: ApprovalsService
  /** The users' memory (a run with a user id reads and writes it). */
  readonly memory?: MemoryService | undefined
}

const effectiveMax = (requested: number | undefined, fallback: number): number =>
  requested !== undefined && Number.isInteger(requested) && requested >= 1 ? requested : fallback

/**
 * What the run got to, as `Done` reports it: written only through `Ref.update`
 * on the run's `Ref` as the run goes (and once when it ended), read once to
 * build `Done`.
 */
interface Progress {
  readonly state?: StateRef
  readonly selectionUsage: Usage.Usage
  /** The run's guardrails (their usage goes to `by_phase.guardrails`). */
  readonly guards?: Guardrails.RunGuardrails | undefined
  /** The answer when no state holds it (an input guardrail tripped). */
  readonly answer?: string
  /** The typed answer (`RunInput.output`), encoded. */
  readonly output?: unknown
}

const note = (progress: Ref.Ref<Progress>, change: Partial<Progress>): Effect.Effect<void> =>
  Ref.update(progress, (p) => ({ ...p, ...change }))

/** Tool selection, the loop and synthesis; notes its progress as it goes. */
const body = (
  services: AgentServices,
  input: RunInput,
  journal: RunJournal,
  conversationId: string,
  progress: Ref.Ref<Progress>,
  account: Budget.Account | undefined
) =>
  Effect.scoped(Effect.gen(function*() {
    yield* announce(journal, input.query)
    const guards = Guardrails.build(services.options.guardrails, services.selectionLlm)
    yield* note(progress, { guards })
    if (guards === undefined || guards.input.length === 0) {
      return yield* work(services, input, journal, conversationId, progress, account, guards, () => Effect.void)
    }
    // the query is checked beside the first model call; nothing is shown and no tool runs before it passed
    const screen = yield* Guardrails.inputScreen(guards, journal, Message.textOf(input.query))
    yield* Effect.forkScoped(screen.checkQuery)
    const trip = yield* Effect.raceFirst(
      Effect.as(
        work(services, input, screen.journal, conversationId, progress, account, guards, screen.screen),
        undefined
      ),
      screen.tripped
    )
    if (trip === undefined) return
    // the run (its model request in flight, its tools) was interrupted by the race
    yield* note(progress, { answer: guards.refusal })
    yield* Guardrails.refuse(journal, guards, trip, screen.shown())
  }))

/** The run once its guardrails are set up. */
const work = (
  services: AgentServices,
  input: RunInput,
  journal: RunJournal,
  conversationId: string,
  progress: Ref.Ref<Progress>,
  account: Budget.Account | undefined,
  guards: Guardrails.RunGuardrails | undefined,
  screen: (text: string) => Effect.Effect<void>
) =>
  Effect.gen(function*() {
    const { guard, hooks, interrupts, llm, options, toolkit } = services
    const goal = Message.textOf(input.query)
    const native = options.useNativeTools && llm.abilities.toolCall
    const selected = yield* setupToolSet({
      toolkit,
      query: goal,
      threshold: options.toolSelectionThreshold,
      max: options.toolSelectionMax,
      llm: services.selectionLlm,
      journal
    })
    yield* note(progress, { selectionUsage: selected.usage })
    const tools = selected.tools
    const system = native
      ? Prompts.nativeSystemPrompt(options.systemPrompt)
      : Prompts.jsonSystemPrompt(tools.advertised(), options.systemPrompt)
    const history = (input.history ?? []).filter((m) => m.role !== "system")
    const state = yield* Ref.make(State.make(
      [Message.system(system), ...history, Message.user(input.query, { pinned: true })],
      tools.version()
    ))
    yield* note(progress, { state })
    const env: LoopEnv = {
      llm,
      hooks,
      guard,
      interrupts,
      // a typed answer is never the loop's prose: no loop reply is streamed as the answer
      options: input.output === undefined ? options : { ...options, synthesis: "always" },
      maxIterations: effectiveMax(input.maxIterations, options.maxIterations),
      tools,
      conversationId,
      approverConversationId: input.approvalConversationId ?? conversationId,
      goal,
      native,
      journal,
      approval: yield* makeGate({
        approvals: services.approvals,
        settings: options,
        journal,
        conversationId,
        approverConversationId: input.approvalConversationId ?? conversationId
      }),
      account,
      holdKey: crypto.randomUUID(),
      answerMessages: (s) =>
        buildMessages({
          question: input.query,
          steps: s.steps,
          loopAnswer: Prompts.stoppedSummary("budget", 0, s.steps),
          history,
          interrupts: s.injected,
          toolObsTruncation: options.toolObsTruncation
        }),
      screen,
      thread: Effect.map(Ref.get(state), (s) => s.trace)
    }
    yield* Effect.ensuring(runLoop(env, state), Effect.sync(() => releaseHold(env)))
    yield* journal.emit({ _tag: "AnswerSignal" })
    if (input.output === undefined) yield* answer(env, state, input, history)
    else {yield* note(progress, {
        output: yield* typedAnswer(
          env,
          state,
          input.output,
          synthesisOf(env, yield* Ref.get(state), input, history),
          options.synthesis
        )
      })}
    if (guards === undefined) return
    // the answer is checked once written: a trip retracts it and answers with the refusal
    const trip = yield* Guardrails.checkOutput(journal, guards, (yield* Ref.get(state)).answer)
    if (trip === undefined) return
    yield* Guardrails.refuse(journal, guards, trip, true)
    yield* Ref.update(state, (s) => State.setAnswer(s, guards.refusal))
    yield* note(progress, { output: undefined })
  })

/** What the answer call reads: the question, the run's steps, the loop's answer as the draft. */
const synthesisOf = (
  env: LoopEnv,
  state: State.RunState,
  input: RunInput,
  history: ReadonlyArray<Message.ChatMessage>
) => ({
  question: input.query,
  steps: state.steps,
  loopAnswer: state.answer,
  history,
  interrupts: state.injected,
  toolObsTruncation: env.options.toolObsTruncation
})

/** The answer the user reads: the streamed loop reply, the model's final reply, or synthesis. */
const answer = (env: LoopEnv, ref: StateRef, input: RunInput, history: ReadonlyArray<Message.ChatMessage>) =>
  Effect.gen(function*() {
    const { journal, llm, options } = env
    const state = yield* Ref.get(ref)
    if (state.answerStreamed) {
      // synthesis policy `auto`: the user has read the answer as the loop call wrote it
      if (state.answer.trim() !== "") return yield* journal.emit({ _tag: "AnswerDone" })
      // an empty streamed reply (e.g. cut at its max_tokens) is no answer: retracted, synthesis writes one
      yield* journal.emit({ _tag: "AnswerReset" })
    }
    if (options.synthesis === "auto" && state.stop === "answer" && state.answer.trim() !== "") {
      // the model's own final reply is the answer: a second call would write it again
      return yield* emitAnswer(state.answer, journal.emit)
    }
    const synthesisInput = {
      question: input.query,
      steps: state.steps,
      loopAnswer: state.answer,
      history,
      interrupts: state.injected,
      toolObsTruncation: options.toolObsTruncation
    }
    const synthesis = yield* journal.activity({
      name: "synthesis",
      success: SynthesisResultSchema,
      restartAware: true,
      // a stream cut by a crash starts again: the client discards what it showed
      execute: ({ shown }) =>
        Effect.zipRight(
          shown === true ? journal.emit({ _tag: "AnswerReset" }) : Effect.void,
          // a loop reply cut to nothing at the max_tokens a budget left it, and no room for synthesis: the summary
          state.answer.trim() === "" && env.account?.ledger !== undefined
            ? streamWithFallback(
              llm,
              buildMessages(synthesisInput),
              Prompts.stoppedSummary("budget", 0, state.steps),
              journal.emit
            )
            : streamAnswer(llm, synthesisInput, journal.emit)
        )
    })
    yield* Ref.update(ref, (s) => State.setAnswer(State.addUsage(s, "synthesis", synthesis.usage), synthesis.answer))
  })

/**
 * Runs one request through `journal` in its `invoke_agent` span; always ends
 * with `Done`, never fails.
 */
export const execute = (services: AgentServices, input: RunInput, journal: RunJournal): Effect.Effect<void> =>
  Effect.suspend(() => {
    const conversationId = input.conversationId ?? crypto.randomUUID()
    return Telemetry.agentSpan({
      name: input.name ?? "ReactAgent",
      mode: "react",
      conversationId,
      model: services.llm.model,
      protocol: services.options.useNativeTools && services.llm.abilities.toolCall ? "native" : "json",
      query: input.query
    }, executeIn(services, input, journal, conversationId))
  })

const executeIn = (
  services: AgentServices,
  input: RunInput,
  runJournal: RunJournal,
  conversationId: string
): Effect.Effect<Telemetry.AgentOutcome> =>
  Effect.gen(function*() {
    const memory = RunMemory.makeUnsafe(services.memory, input, conversationId)
    const journal = memory === undefined ? runJournal : memory.observe(runJournal)
    const progress = yield* Ref.make<Progress>({ selectionUsage: Usage.empty })
    // the run's budget account: its own ledger (`budget` option), else its caller's (a sub-agent)
    const account = Budget.makeAccount(services.options.budget, yield* FiberRef.get(Budget.currentAccount))
    // the LLM's retries are run events: the user sees the run waiting, not stuck
    const run = (agent: AgentServices) => body(agent, input, journal, conversationId, progress, account)
    const work = (memory === undefined ? run(services) : memory.begin(services, journal, run)).pipe(
      Effect.locally(Budget.currentAccount, account),
      withRetryObserver((notice) =>
        journal.emit({
          _tag: "LlmRetry",
          attempt: notice.attempt,
          reason: notice.reason,
          delay_ms: Math.round(notice.delayMs)
        })
      )
    )
    const { elapsed, ending, pending } = yield* AgentRun.lifecycle(
      {
        interrupts: services.interrupts,
        conversationId,
        cancel: input.cancel,
        timeout: services.options.runTimeout,
        emit: journal.emit
      },
      work
    )
    const outcome = yield* Ref.get(progress)
    const failure = ending._tag === "Failed" ? ending.failure : undefined
    const cancelled = ending._tag === "Cancelled"
    const state = outcome.state === undefined ? undefined : yield* Ref.get(outcome.state)
    if (memory !== undefined && ending._tag === "Finished") {
      yield* Effect.locally(
        memory.finish(journal, outcome.answer ?? state?.answer ?? ""),
        Budget.currentAccount,
        account
      )
    }
    let byPhase: Usage.UsageByPhase = state?.usage ?? {}
    if (outcome.selectionUsage.llm_calls > 0 || outcome.selectionUsage.total_tokens > 0) {
      byPhase = Usage.addToPhase(byPhase, "selection", outcome.selectionUsage)
    }
    if (outcome.guards !== undefined && outcome.guards.usage.llm_calls > 0) {
      byPhase = Usage.addToPhase(byPhase, "guardrails", outcome.guards.usage)
    }
    const remembered = memory?.usage()
    if (remembered !== undefined) byPhase = Usage.addToPhase(byPhase, "memory", remembered)
    const answer = failure !== undefined || cancelled ? "" : outcome.answer ?? state?.answer ?? ""
    const cost = Budget.costOf(account)
    const usage = cost === undefined ? Usage.fromPhases(byPhase) : { ...Usage.fromPhases(byPhase), cost_usd: cost }
    yield* journal.emit({
      _tag: "Done",
      answer,
      iterations: state?.iterations ?? 0,
      usage,
      elapsed,
      conversation_id: conversationId,
      pending_injections: pending.map((p) => ({ id: p.id, content: p.content })),
      ...(journal.runId !== undefined ? { run_id: journal.runId } : {}),
      steps: state?.steps ?? [],
      messages: state?.trace ?? [],
      ...(outcome.output !== undefined && failure === undefined && !cancelled ? { output: outcome.output } : {})
    })
    return { usage, iterations: state?.iterations ?? 0, answer, cancelled, failure }
  })
