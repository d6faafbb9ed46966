/**
 * One DAG run, from registration in the interrupt channel to `Done`:
 * plan → execute → analyze, re-planning while the goal is not achieved and the
 * analyzer is not confident (up to `maxRounds` rounds in all; a round cut short
 * by a user interrupt re-plans without counting), then the streamed answer.
 * When the first plan is unusable twice, the run continues in ReAct mode on the
 * original query. Never fails: failures become `RunFailed` then `Done`;
 * cancellation ends with `Done` too.
 *
 * Everything goes through the run's journal: the stored steps are
 * `dag/<round>/plan`, the round's dispatch points and steps (`execute.ts`,
 * `step.ts`), `dag/<round>/analysis`, the drain after it (`dag/<round>/drain`),
 * the ReAct fallback's own activities (under `dag/<round>/react/`) and
 * `dag/synthesis`. Between them the run only makes decisions from stored
 * values, so a replay makes the same ones and emits the same events in the same
 * order (keyed by position by a durable host).
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Ref from "effect/Ref"
import * as AgentRun from "../../AgentRun.js"
import { SynthesisResultSchema } from "../../AnswerSynthesis.js"
import type { ContextGuardService } from "../../ContextGuard.js"
import type { DagJournal } from "../../DagAgent.js"
import type { Injection, InterruptsService } from "../../Interrupts.js"
import type { LlmService } from "../../Llm.js"
import * as Message from "../../Message.js"
import type { ModelRegistryService } from "../../ModelRegistry.js"
import type { ReactAgentService, RunInput } from "../../ReactAgent.js"
import type { Done } from "../../RunEvent.js"
import * as Journal from "../../RunJournal.js"
import * as Telemetry from "../../Telemetry.js"
import type { ToolkitService } from "../../Toolkit.js"
import * as ToolSelection from "../../ToolSelection.js"
import * as Usage from "../../Usage.js"
import { type Analysis, analyze, AnalyzedSchema } from "./analyze.js"
import { addPhases, addUsage, executeRound, Injections, makeTally, type StepOutcome } from "./execute.js"
import { plan as makePlan, PlannedSchema } from "./plan.js"
import { synthesize, typedSynthesis } from "./synthesize.js"

/** The resolved settings of a DAG agent. */
export interface DagSettings {
  readonly maxConcurrency: number
  readonly stepTimeout: Duration.Duration
  readonly maxRounds: number
  readonly replanStopConfidence: number
}

/** What the DAG agent was built with. */
export interface DagServices {
  readonly settings: DagSettings
  /** Planning, analysis, synthesis, and the ReAct fallback. */
  readonly llm: LlmService
  /** Resolves each step's `model_hint`. */
  readonly registry: ModelRegistryService
  readonly toolkit: ToolkitService
  readonly guard: ContextGuardService
  readonly interrupts: InterruptsService
  /** Builds a fresh ReAct agent on a model (steps and the fallback). */
  readonly agentFor: (llm: LlmService) => Effect.Effect<ReactAgentService>
  /** Re-asks of a typed answer that does not validate (`AgentOptions.outputRetries`). */
  readonly outputRetries: number
}

/** Each step's result is cut to this many characters in the re-planning summary. */
export const REPLAN_PREVIEW_CHARS = 500

const preview = (text: string): string => {
  const flat = text.replace(/\s+/g, " ").trim()
  return flat.length <= REPLAN_PREVIEW_CHARS ? flat : `${flat.slice(0, REPLAN_PREVIEW_CHARS)}…`
}

/** The summary of a round the re-planner reads. */
export const roundSummary = (
  round: number,
  results: ReadonlyArray<StepOutcome>,
  analysis: Analysis | undefined
): string => {
  const lines = [`What happened in round ${round}:`]
  for (const r of results) {
    lines.push(`- Step ${r.id} [${r.status}]: ${r.task}`)
    lines.push(
      r.status === "done"
        ? `  Result: ${preview(r.result ?? "")}`
        : `  ${r.status === "skipped" ? "Skipped" : "Error"}: ${preview(r.error ?? "")}`
    )
  }
  if (analysis !== undefined) {
    lines.push(
      `Assessment: ${
        analysis.achieved ? "achieved" : "not achieved"
      } (confidence ${analysis.confidence}). ${analysis.reasoning}`
    )
  }
  return lines.join("\n")
}

const withFollowUps = (query: Message.Content, followUps: ReadonlyArray<string>): Message.Content => {
  if (followUps.length === 0) return query
  const extra = followUps.map((f) => `\n\n[User follow-up]: ${f}`).join("")
  return typeof query === "string" ? query + extra : [...query, { type: "text", text: extra }]
}

/** Runs one request in its `invoke_agent` span through `journal`; always ends with `Done`. */
export const execute = (
  services: DagServices,
  input: RunInput,
  journal: DagJournal
): Effect.Effect<void> =>
  Effect.suspend(() => {
    const conversationId = input.conversationId ?? crypto.randomUUID()
    return Telemetry.agentSpan(
      { name: "DagAgent", mode: "dag", conversationId, model: services.llm.model, query: input.query },
      executeIn(services, input, journal, conversationId)
    )
  })

/** Why a run with attachments goes on in ReAct mode (`DagPhase` `react_fallback`). */
const ATTACHED = "the query has attachments, which DAG steps cannot read"

const executeIn = (
  services: DagServices,
  input: RunInput,
  journal: DagJournal,
  conversationId: string
): Effect.Effect<Telemetry.AgentOutcome> =>
  Effect.gen(function*() {
    const { interrupts, llm, settings } = services
    const { emit } = journal
    const goal = Message.textOf(input.query)
    const history = (input.history ?? []).filter((m) => m.role === "user" || m.role === "assistant")
    const tally = makeTally()
    // what the run got to, for `Done`: the answer, or the ReAct fallback's own `Done`
    const reached = yield* Ref.make<{ readonly answer: string; readonly delegated?: Done; readonly output?: unknown }>({
      answer: ""
    })
    /**
     * The drain after a round's analysis (stored: a replay takes the same messages in; keyed by
     * the step, so an attempt re-run after a crash gets what the first one marked drained).
     */
    const drain = (round: number) =>
      journal.activity({
        name: `dag/${round}/drain`,
        success: Injections,
        execute: () =>
          Effect.map(
            interrupts.drain(conversationId, { key: journal.idempotencyKey?.(`dag/${round}/drain`) }),
            (drained) => drained.map((i) => ({ id: i.id, content: i.content }))
          )
      }).pipe(
        Effect.tap((drained) =>
          Effect.forEach(drained, (i) => emit({ _tag: "Inject", content: i.content, id: i.id }), { discard: true })
        )
      )

    /** ReAct mode on the original query (and the follow-ups taken in so far); its `Done` is kept for ours. */
    const fallBack = (round: number, reason: string, followUps: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        yield* Effect.logWarning(
          `DAG mode: ${reason === ATTACHED ? reason : `no usable plan (${reason})`}; continuing in ReAct mode`
        )
        yield* emit({ _tag: "DagPhase", phase: "react_fallback", round, reasoning: reason })
        const agent = yield* services.agentFor(llm)
        yield* agent.execute(
          {
            query: withFollowUps(input.query, followUps),
            conversationId,
            ...(input.history !== undefined ? { history: input.history } : {}),
            ...(input.maxIterations !== undefined ? { maxIterations: input.maxIterations } : {}),
            ...(input.output !== undefined ? { output: input.output } : {})
          },
          Journal.nested(journal, {
            prefix: `dag/${round}/react/`,
            emit: (event, options) =>
              event._tag === "Done" ? Ref.set(reached, { answer: "", delegated: event }) : journal.emit(event, options)
          })
        )
      })

    const body = Effect.gen(function*() {
      // the planner, the steps and the analysis read text: files would reach no model, so ReAct mode takes the run
      if (Message.filesOf(input.query).length > 0) return yield* fallBack(1, ATTACHED, [])
      const tools = ToolSelection.catalogue(services.toolkit)
      const followUps: Array<string> = []
      let previous: string | undefined
      let last: { readonly results: ReadonlyArray<StepOutcome>; readonly analysis?: Analysis } | undefined
      let counted = 0
      yield* emit({ _tag: "DagPhase", phase: "planning", round: 1 })
      for (let round = 1;; round++) {
        const request = {
          goal,
          history,
          tools,
          models: services.registry.names,
          followUps: [...followUps],
          ...(previous !== undefined ? { previous } : {})
        }
        const planned = yield* journal.activity({
          name: `dag/${round}/plan`,
          success: PlannedSchema,
          execute: () =>
            Effect.flatMap(Clock.currentTimeMillis, (now) => makePlan(llm, { ...request, now: new Date(now) })).pipe(
              Effect.withSpan("dag.plan", {
                attributes: { [Telemetry.attributes.round]: round },
                captureStackTrace: false
              })
            )
        })
        addUsage(tally, "planning", planned.usage)
        if (planned._tag === "Failed") {
          if (last === undefined || !last.results.some((r) => r.status === "done")) {
            return yield* fallBack(round, planned.reason, followUps)
          }
          yield* Effect.logWarning(
            `DAG mode: re-planning failed (${planned.reason}); answering from round ${round - 1}`
          )
          break
        }
        yield* emit({ _tag: "DagPlan", round, steps: planned.plan.steps })
        const executed = yield* executeRound({
          goal,
          round,
          conversationId,
          maxIterations: input.maxIterations,
          maxConcurrency: settings.maxConcurrency,
          stepTimeout: settings.stepTimeout,
          registry: services.registry,
          guard: services.guard,
          interrupts,
          agentFor: services.agentFor,
          journal,
          tally
        }, planned.plan)
        last = { results: executed.results }
        let injected: ReadonlyArray<Injection> = executed.injections
        let analysis: Analysis | undefined
        if (injected.length === 0) {
          yield* emit({ _tag: "DagPhase", phase: "analyzing", round })
          const analyzed = yield* journal.activity({
            name: `dag/${round}/analysis`,
            success: AnalyzedSchema,
            execute: () =>
              analyze(llm, goal, executed.results, [...followUps]).pipe(
                Effect.withSpan("dag.analysis", {
                  attributes: { [Telemetry.attributes.round]: round },
                  captureStackTrace: false
                })
              )
          })
          addUsage(tally, "analysis", analyzed.usage)
          analysis = analyzed.analysis
          last = { results: executed.results, analysis }
          injected = yield* drain(round)
        }
        if (injected.length > 0) {
          // the user changed the requirements: re-plan, without counting the round
          for (const i of injected) followUps.push(i.content)
          previous = roundSummary(round, executed.results, analysis)
          yield* emit({
            _tag: "DagPhase",
            phase: "replanning",
            round: round + 1,
            reasoning: `The user sent a follow-up: ${injected.map((i) => i.content).join(" / ")}`
          })
          continue
        }
        counted++
        const verdict = analysis!
        if (
          verdict.achieved || verdict.confidence >= settings.replanStopConfidence || counted >= settings.maxRounds
        ) break
        previous = roundSummary(round, executed.results, verdict)
        yield* emit({ _tag: "DagPhase", phase: "replanning", round: round + 1, reasoning: verdict.reasoning })
      }
      yield* emit({ _tag: "AnswerSignal" })
      const synthesisInput = { goal, history, results: last?.results ?? [], analysis: last?.analysis, followUps }
      if (input.output !== undefined) {
        // a typed answer: the synthesis writes the value (see `Output`)
        const typed = yield* typedSynthesis(llm, input.output, synthesisInput, services.outputRetries, journal)
        addUsage(tally, "synthesis", typed.usage)
        return yield* Ref.set(reached, { answer: typed.answer, output: typed.output })
      }
      const synthesis = yield* journal.activity({
        name: "dag/synthesis",
        success: SynthesisResultSchema,
        restartAware: true,
        // a stream cut by a crash starts again: the client discards what it showed
        execute: ({ shown }) =>
          Effect.zipRight(
            shown === true ? emit({ _tag: "AnswerReset" }) : Effect.void,
            synthesize(llm, synthesisInput, emit)
          )
      })
      addUsage(tally, "synthesis", synthesis.usage)
      yield* Ref.set(reached, { answer: synthesis.answer })
    })

    const { elapsed, ending, pending } = yield* AgentRun.lifecycle({
      interrupts,
      conversationId,
      cancel: input.cancel,
      emit
    }, body)
    const failure = ending._tag === "Failed" ? ending.failure : undefined
    const cancelled = ending._tag === "Cancelled"
    const { answer, delegated, output } = yield* Ref.get(reached)
    const left = pending.map((p) => ({ id: p.id, content: p.content }))
    if (delegated !== undefined) {
      addPhases(tally, delegated.usage.by_phase)
      const usage = Usage.fromPhases(tally.byPhase)
      yield* emit({
        ...delegated,
        usage,
        elapsed,
        conversation_id: conversationId,
        pending_injections: [...delegated.pending_injections, ...left],
        ...(journal.runId !== undefined ? { run_id: journal.runId } : {})
      })
      return { usage, iterations: delegated.iterations, answer: delegated.answer, cancelled, failure }
    }
    const final = failure !== undefined || cancelled ? "" : answer
    const usage = Usage.fromPhases(tally.byPhase)
    yield* emit({
      _tag: "Done",
      answer: final,
      iterations: tally.iterations,
      usage,
      elapsed,
      conversation_id: conversationId,
      pending_injections: left,
      ...(journal.runId !== undefined ? { run_id: journal.runId } : {}),
      steps: tally.steps,
      messages: [
        ...history,
        Message.user(input.query, { pinned: true }),
        ...(final !== "" ? [Message.assistant(final)] : [])
      ],
      ...(output !== undefined && final !== "" ? { output } : {})
    })
    return { usage, iterations: tally.iterations, answer: final, cancelled, failure }
  })
