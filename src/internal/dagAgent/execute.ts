/**
 * DAG mode, phase 2: one round of execution. A dispatcher launches the steps
 * whose dependencies are done, in id order, at most `maxConcurrency` at a time,
 * each in its own fiber (scoped to the round: cancelling the run interrupts
 * them; `step.ts` runs one), and waits for one to finish before looking again.
 *
 * - A step whose dependency failed (or was skipped) fails naming it.
 * - At each dispatch point the conversation's interrupts are drained: once one
 *   arrived, the steps not yet started are skipped (running ones finish).
 * - Steps that can never become ready (impossible after validation) fail
 *   instead of blocking the round.
 *
 * Determinism. Which step finishes first is up to the steps; a replay must
 * make the same decisions as the first execution. So each dispatch point is an
 * activity (`dag/<round>/dispatch/<k>`) that stores which step it waited for
 * (none at `k = 0`), what the drain took and when it ran (the launch time the
 * steps launched there count their timeout from); the dispatcher then takes
 * that step's result (its stored result on a replay). Every decision and every
 * event of the dispatcher follows from stored values, in the same order.
 *
 * @internal
 */
import * as Deferred from "effect/Deferred"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { ContextGuardService } from "../../ContextGuard.js"
import type { DagJournal } from "../../DagAgent.js"
import type { Injection, InterruptsService } from "../../Interrupts.js"
import type { LlmService } from "../../Llm.js"
import type { ModelRegistryService } from "../../ModelRegistry.js"
import type { ReactAgentService } from "../../ReactAgent.js"
import type { DagPlanStep, Step } from "../../RunEvent.js"
import * as Usage from "../../Usage.js"
import type { Plan } from "./plan.js"
import { runStep, type StepOutcome, type StepResult } from "./step.js"

export {
  cutToFit,
  DEPENDENCY_MAX_CHARS,
  DEPENDENCY_SHARE,
  stepConversationId,
  type StepOutcome,
  stepQuery
} from "./step.js"

/** What the whole run accumulates from its steps (written by the run's fiber only). */
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

/** Drained interrupts, as a durable run stores them. */
export const Injections = Schema.Array(Schema.Struct({ id: Schema.String, content: Schema.String }))

/** A dispatch point as a durable run stores it. */
const Dispatch = Schema.Struct({
  /** The step whose end it waited for (none at the round's first point). */
  finished: Schema.NullOr(Schema.String),
  /** What the drain took (nothing once the round was interrupted). */
  injections: Injections,
  /** When it ran (ms): the launch time of the steps launched there. */
  at: Schema.Number
})

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
  readonly journal: DagJournal
  readonly tally: Tally
}

/** @internal */
export interface RoundResult {
  /** One outcome per step, in plan order. */
  readonly results: ReadonlyArray<StepOutcome>
  /** Interrupts drained during the round (non-empty: the round was cut short). */
  readonly injections: ReadonlyArray<Injection>
}

export const SKIPPED = "Skipped: the user sent a follow-up, the plan is revised"

/** Runs one round of a plan to its end (every step done, failed or skipped); never fails. */
export const executeRound = (env: RoundEnv, plan: Plan): Effect.Effect<RoundResult> =>
  Effect.scoped(Effect.gen(function*() {
    const { journal, round, tally } = env
    const byId = new Map(plan.steps.map((s) => [s.id, s]))
    const outcomes = new Map<string, StepOutcome>()
    // the steps running, in launch order, each with the deferred its fiber completes
    const running = new Map<string, Deferred.Deferred<StepResult>>()
    const injections: Array<Injection> = []
    const settle = (outcome: StepOutcome): Effect.Effect<void> => {
      outcomes.set(outcome.id, outcome)
      return journal.emit({
        _tag: "DagStep",
        round,
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
    /** The next dispatch point: waits for a running step to end, drains, reads the clock. */
    const dispatch = (k: number) => {
      const waiting = [...running]
      const drain = injections.length === 0 ? env.interrupts.drain(env.conversationId) : Effect.succeed([])
      return journal.activity({
        name: `dag/${round}/dispatch/${k}`,
        success: Dispatch,
        execute: () =>
          Effect.all({
            finished: waiting.length === 0
              ? Effect.succeed(null)
              : Effect.raceAll(waiting.map(([id, ended]) => Effect.as(Deferred.await(ended), id))),
            injections: Effect.map(drain, (drained) => drained.map((i) => ({ id: i.id, content: i.content }))),
            at: Effect.clockWith((clock) => clock.currentTimeMillis)
          })
      })
    }

    for (let k = 0;; k++) {
      const point = yield* dispatch(k)
      if (point.finished !== null) {
        const ended = running.get(point.finished)
        if (ended === undefined) {
          return yield* Effect.dieMessage(`DAG round ${round}: step "${point.finished}" is not running`)
        }
        running.delete(point.finished)
        const result = yield* Deferred.await(ended)
        addPhases(tally, result.usage)
        tally.iterations += result.iterations
        for (const { _tag, ...step } of result.steps) tally.steps.push(step)
        yield* settle(result.outcome)
      }
      for (const i of point.injections) yield* journal.emit({ _tag: "Inject", content: i.content, id: i.id })
      for (const i of point.injections) injections.push(i)
      // settle what can no longer run (to a fixpoint: failures cascade)
      for (let changed = true; changed;) {
        changed = false
        for (const id of pending()) {
          const step = byId.get(id)!
          const task = step.task
          if (injections.length > 0) {
            yield* settle({ id, task, status: "skipped", error: SKIPPED })
            changed = true
            continue
          }
          const dep = blocker(step)
          if (dep !== undefined) {
            const why = outcomes.get(dep)!.status === "skipped" ? "was skipped" : "failed"
            yield* settle({ id, task, status: "failed", error: `Not run: its dependency "${dep}" ${why}` })
            changed = true
          }
        }
      }
      // launch the ready steps, in id order
      for (const id of pending()) {
        if (running.size >= env.maxConcurrency) break
        const step = byId.get(id)!
        if (!step.dependencies.every((d) => outcomes.get(d)?.status === "done")) continue
        const ended = yield* Deferred.make<StepResult>()
        running.set(id, ended)
        yield* journal.emit({ _tag: "DagStep", round, status: "start", step_id: id })
        const deps = step.dependencies.map((d) => outcomes.get(d)!)
        yield* Effect.forkScoped(Effect.intoDeferred(runStep(env, step, deps, point.at), ended))
      }
      if (running.size === 0) {
        for (const id of pending()) {
          yield* settle({
            id,
            task: byId.get(id)!.task,
            status: "failed",
            error: "Not run: its dependencies never completed"
          })
        }
        break
      }
    }
    return { results: plan.steps.map((s) => outcomes.get(s.id)!), injections }
  }))
