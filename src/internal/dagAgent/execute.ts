/**
 * DAG mode, phase 2: one round of execution. A dispatcher launches
 * the steps whose dependencies are done, in id order, at most `maxConcurrency`
 * at a time, each in its own fiber (scoped to the round: cancelling the run
 * interrupts them), and waits for one to finish before looking again.
 *
 * - Each step is a fresh ReAct agent (no memory) on the model
 *   `ModelRegistry.resolve(model_hint)` picks, given the goal, its task, its tool
 *   hint and its dependencies' results cut to fit the step model's budget. It
 *   runs under its own conversation id: it never drains the user's interrupts.
 * - Its events are forwarded with its `step_id` (its own answer stream and `Done`
 *   are not: they become the step's `dag` `done` / `failed` event).
 * - A step that runs longer than `stepTimeout` is cancelled (it still reports
 *   its usage) and fails; a step whose dependency failed fails naming it.
 * - At each dispatch point the conversation's interrupts are drained: once one
 *   arrived, the steps not yet started are skipped (running ones finish).
 * - Steps that can never become ready (impossible after validation) fail
 *   instead of blocking the round.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Data from "effect/Data"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Stream from "effect/Stream"
import { budgetForModel, type ContextGuardService } from "../../ContextGuard.js"
import type { Injection, InterruptsService } from "../../Interrupts.js"
import type { LlmService } from "../../Llm.js"
import type { ModelRegistryService } from "../../ModelRegistry.js"
import type { ReactAgentService } from "../../ReactAgent.js"
import type { DagPlanStep, Done, RunEvent, Step } from "../../RunEvent.js"
import * as Telemetry from "../../Telemetry.js"
import { estimateText } from "../../TokenEstimator.js"
import * as Usage from "../../Usage.js"
import type { Plan } from "./plan.js"

/** How a step ended. */
export interface StepOutcome {
  readonly id: string
  readonly task: string
  readonly status: "done" | "failed" | "skipped"
  readonly result?: string
  readonly error?: string
}

/** What the whole run accumulates from its steps (mutated by the step fibers). */
export interface Tally {
  byPhase: Usage.UsageByPhase
  iterations: number
  readonly steps: Array<Step>
}

/** @internal */
export const makeTally = (): Tally => ({ byPhase: {}, iterations: 0, steps: [] })

/** Adds usage to a phase of the tally. */
export const addUsage = (tally: Tally, phase: Usage.Phase, usage: Usage.Usage): void => {
  if (usage.llm_calls > 0 || usage.total_tokens > 0) tally.byPhase = Usage.addToPhase(tally.byPhase, phase, usage)
}

/** Adds every phase of a breakdown to the tally. */
export const addPhases = (tally: Tally, byPhase: Usage.UsageByPhase): void => {
  for (const [phase, usage] of Object.entries(byPhase) as Array<[Usage.Phase, Usage.Usage | undefined]>) {
    if (usage !== undefined) addUsage(tally, phase, usage)
  }
}

/** What a round needs. */
export interface RoundEnv {
  readonly goal: string
  readonly round: number
  readonly conversationId: string
  readonly maxIterations: number | undefined
  readonly maxConcurrency: number
  readonly stepTimeout: Duration.Duration
  readonly registry: ModelRegistryService
  readonly guard: ContextGuardService
  readonly interrupts: InterruptsService
  /** Builds a fresh ReAct agent on a model (the one construction of step agents). */
  readonly agentFor: (llm: LlmService) => Effect.Effect<ReactAgentService>
  readonly emit: (event: RunEvent) => void
  readonly tally: Tally
}

/** @internal */
export interface RoundResult {
  /** One outcome per step, in plan order. */
  readonly results: ReadonlyArray<StepOutcome>
  /** Interrupts drained during the round (non-empty: the round was cut short). */
  readonly injections: ReadonlyArray<Injection>
}

/** The share of a step model's budget its dependencies' results may take. */
export const DEPENDENCY_SHARE = 0.5
/** Dependency results together never exceed this many characters (under the guard's per-message cut). */
export const DEPENDENCY_MAX_CHARS = 40_000
/** A step that does not end this long after its timeout cancelled it is cut. */
const CANCEL_GRACE = Duration.seconds(5)

export const SKIPPED = "Skipped: the user sent a follow-up, the plan is revised"
const TRUNCATED = "\n[Dependency result truncated]"

/** Cuts `text` so that its estimate fits `maxTokens` and it has at most `maxChars` characters. */
export const cutToFit = (text: string, maxTokens: number, maxChars: number): string => {
  if (text.length <= maxChars && estimateText(text) <= maxTokens) return text
  let end = Math.min(text.length, maxChars)
  while (end > 0 && estimateText(text.slice(0, end)) > maxTokens) {
    end = Math.floor(end * Math.max(0.5, Math.min(0.95, maxTokens / estimateText(text.slice(0, end)))))
  }
  if (end > 0 && (text.charCodeAt(end - 1) & 0xfc00) === 0xd800) end--
  return text.slice(0, end) + TRUNCATED
}

/** The query a step's agent receives. */
export const stepQuery = (
  goal: string,
  step: DagPlanStep,
  dependencies: ReadonlyArray<StepOutcome>,
  budgetTokens: number
): string => {
  const lines = [`Overall goal: ${goal}`, "", `Your task (step ${step.id}): ${step.task}`]
  if (step.tool_hint !== undefined) lines.push(`Suggested tool: ${step.tool_hint}`)
  if (dependencies.length > 0) {
    const tokens = Math.max(64, Math.floor((budgetTokens * DEPENDENCY_SHARE) / dependencies.length))
    const chars = Math.floor(DEPENDENCY_MAX_CHARS / dependencies.length)
    lines.push("", "Results of the steps this task depends on:")
    for (const d of dependencies) lines.push("", `### Step ${d.id}: ${d.task}`, cutToFit(d.result ?? "", tokens, chars))
  }
  lines.push("", "Do this task only (other steps take care of the rest of the goal) and answer with its result.")
  return lines.join("\n")
}

/** The conversation id of a step's agent: its own interrupt queue, out of reach of the HTTP API's ids. */
export const stepConversationId = (conversationId: string, round: number, stepId: string): string =>
  `${conversationId}#dag/${round}/${stepId}`

const seconds = (d: Duration.Duration): string => `${Math.round(Duration.toMillis(d) / 100) / 10} s`

/** A step's agent did not end within the grace after its timeout cancelled it. */
class StepStuck extends Data.TaggedError("StepStuck")<{ readonly message: string }> {}

/** Runs one step's agent to its end; never fails. */
const runStep = (env: RoundEnv, step: DagPlanStep, dependencies: ReadonlyArray<StepOutcome>): Effect.Effect<StepOutcome> => {
  const failed = (error: string): StepOutcome => ({ id: step.id, task: step.task, status: "failed", error })
  return Effect.gen(function*() {
    const llm = env.registry.resolve(step.model_hint)
    const agent = yield* env.agentFor(llm)
    const budget = Math.min(env.guard.budget, budgetForModel(llm) ?? env.guard.budget)
    let done: Done | undefined
    let failure: string | undefined
    let timedOut = false
    const forward = (event: RunEvent): void => {
      switch (event._tag) {
        case "ThinkingStart":
        case "ThinkingDone":
        case "ToolStart":
        case "Compact":
        case "PhaseChange":
        case "ApprovalRequested":
        case "ApprovalDecided":
          env.emit({ ...event, step_id: step.id })
          return
        case "ToolDone": {
          const tagged = { ...event, step_id: step.id }
          const { _tag, ...payload } = tagged
          env.tally.steps.push(payload)
          env.emit(tagged)
          return
        }
        case "RunFailed":
          failure = event.message
          return
        case "Done":
          done = event
          return
        default:
          // the step's own answer stream: its result is the step's `dag` event
          return
      }
    }
    yield* agent.run({
      query: stepQuery(env.goal, step, dependencies, budget),
      conversationId: stepConversationId(env.conversationId, env.round, step.id),
      // the run's user answers the step's approvals
      approvalConversationId: env.conversationId,
      ...(env.maxIterations !== undefined ? { maxIterations: env.maxIterations } : {}),
      // the agent stops at once and still ends with `Done` (with its usage)
      cancel: Effect.zipRight(Effect.sleep(env.stepTimeout), Effect.sync(() => {
        timedOut = true
      }))
    }).pipe(
      Stream.runForEach((event) => Effect.sync(() => forward(event))),
      Effect.timeoutFail({
        duration: Duration.sum(env.stepTimeout, CANCEL_GRACE),
        onTimeout: () => new StepStuck({ message: `did not stop within ${seconds(CANCEL_GRACE)} of its timeout` })
      })
    )
    const finished = done
    if (finished !== undefined) {
      addPhases(env.tally, finished.usage.by_phase)
      env.tally.iterations += finished.iterations
    }
    if (timedOut) return failed(`Timed out after ${seconds(env.stepTimeout)}`)
    if (failure !== undefined) return failed(failure)
    if (finished === undefined) return failed("The step ended without a result")
    return { id: step.id, task: step.task, status: "done", result: finished.answer } satisfies StepOutcome
  }).pipe(
    Effect.catchAllCause((cause) => {
      const error = Cause.squash(cause)
      return Effect.succeed(failed(`Step failed: ${error instanceof Error ? error.message : String(error)}`))
    }),
    Effect.tap((outcome) => Effect.annotateCurrentSpan(Telemetry.attributes.stepStatus, outcome.status)),
    Effect.withSpan("dag.step", {
      attributes: { [Telemetry.attributes.stepId]: step.id, [Telemetry.attributes.round]: env.round },
      captureStackTrace: false
    })
  )
}

/** Runs one round of a plan to its end (every step done, failed or skipped); never fails. */
export const executeRound = (env: RoundEnv, plan: Plan): Effect.Effect<RoundResult> =>
  Effect.scoped(Effect.gen(function*() {
    const byId = new Map(plan.steps.map((s) => [s.id, s]))
    const outcomes = new Map<string, StepOutcome>()
    const running = new Set<string>()
    const injections: Array<Injection> = []
    const completions = yield* Queue.unbounded<StepOutcome>()
    const settle = (outcome: StepOutcome): void => {
      outcomes.set(outcome.id, outcome)
      env.emit({
        _tag: "DagStep",
        round: env.round,
        status: outcome.status,
        step_id: outcome.id,
        ...(outcome.result !== undefined ? { result: outcome.result } : {}),
        ...(outcome.error !== undefined ? { error: outcome.error } : {})
      })
    }
    const pending = () => plan.order.filter((id) => !outcomes.has(id) && !running.has(id))
    const blocker = (step: DagPlanStep) =>
      step.dependencies.find((d) => {
        const o = outcomes.get(d)
        return o !== undefined && o.status !== "done"
      })

    for (;;) {
      if (injections.length === 0) {
        const drained = yield* env.interrupts.drain(env.conversationId)
        for (const i of drained) env.emit({ _tag: "Inject", content: i.content, id: i.id })
        injections.push(...drained)
      }
      // settle what can no longer run (to a fixpoint: failures cascade)
      for (let changed = true; changed;) {
        changed = false
        for (const id of pending()) {
          const step = byId.get(id)!
          const task = step.task
          if (injections.length > 0) {
            settle({ id, task, status: "skipped", error: SKIPPED })
            changed = true
            continue
          }
          const dep = blocker(step)
          if (dep !== undefined) {
            settle({ id, task, status: "failed", error: `Not run: its dependency "${dep}" ${outcomes.get(dep)!.status === "skipped" ? "was skipped" : "failed"}` })
            changed = true
          }
        }
      }
      // launch the ready steps, in id order
      for (const id of pending()) {
        if (running.size >= env.maxConcurrency) break
        const step = byId.get(id)!
        if (!step.dependencies.every((d) => outcomes.get(d)?.status === "done")) continue
        running.add(id)
        env.emit({ _tag: "DagStep", round: env.round, status: "start", step_id: id })
        const deps = step.dependencies.map((d) => outcomes.get(d)!)
        yield* Effect.forkScoped(Effect.flatMap(runStep(env, step, deps), (o) => Queue.offer(completions, o)))
      }
      if (running.size === 0) {
        for (const id of pending()) {
          settle({ id, task: byId.get(id)!.task, status: "failed", error: "Not run: its dependencies never completed" })
        }
        break
      }
      const finished = yield* Queue.take(completions)
      running.delete(finished.id)
      settle(finished)
    }
    return { results: plan.steps.map((s) => outcomes.get(s.id)!), injections }
  }))
