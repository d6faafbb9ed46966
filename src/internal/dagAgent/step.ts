/**
 * DAG mode: one step of a round — a fresh ReAct agent (no memory) on the model
 * `ModelRegistry.resolve(model_hint)` picks, given the goal, its task, its tool
 * hint and its dependencies' results cut to fit the step model's budget. It
 * runs under its own conversation id (it never drains the user's interrupts).
 *
 * The step's run goes through a journal nested in the DAG run's
 * (`ReactAgent.execute`): its activities are named under the step
 * (`dag/<round>/step/<id>/llm/1`, `…/tool/1/<call id>`, …), its events get the
 * step's `step_id` (its own answer stream and `Done` are not forwarded: they
 * become the step's `dag` event). What the step came to — its outcome, usage,
 * iterations and tool steps — is stored last, as the activity
 * `dag/<round>/step/<id>`: a replay returns it as it was, whatever the clock
 * says now.
 *
 * Timeout. A step that runs longer than `stepTimeout` from its launch (the
 * stored time of the dispatch that launched it) is cancelled (it still reports
 * its usage) and fails. The timer only runs once the step is live, i.e. once
 * one of its activities actually executes: a replay of stored activities takes
 * no time and is never cut short, so a step that finished keeps its stored
 * result; a step in flight at a crash resumes with what is left of its time.
 *
 * Events. Concurrent steps emit in an order that differs between executions.
 * With a durable host's `emitOnce`, an event a step emits outside its
 * activities is keyed by the step and its position among them
 * (`s:dag/<round>/step/<id>:<n>`; an event emitted with a key of its own —
 * a call's `ToolDone`, approval events — by that key), so a replay skips
 * exactly the ones stored; an event emitted inside an activity is
 * keyed by that activity (the host's rule).
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Data from "effect/Data"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as FiberRef from "effect/FiberRef"
import { globalValue } from "effect/GlobalValue"
import * as Schema from "effect/Schema"
import { budgetForModel, type ContextGuardService } from "../../ContextGuard.js"
import type { DagJournal } from "../../DagAgent.js"
import type { LlmService } from "../../Llm.js"
import type { ModelRegistryService } from "../../ModelRegistry.js"
import type { ReactAgentService } from "../../ReactAgent.js"
import type { DagPlanStep, Done } from "../../RunEvent.js"
import { ToolDone } from "../../RunEvent.js"
import * as Journal from "../../RunJournal.js"
import type { RunJournal } from "../../RunJournal.js"
import * as Telemetry from "../../Telemetry.js"
import { estimateText } from "../../TokenEstimator.js"
import * as Usage from "../../Usage.js"

/** How a step ended. */
export const StepOutcome = Schema.Struct({
  id: Schema.String,
  task: Schema.String,
  status: Schema.Literal("done", "failed", "skipped"),
  result: Schema.optional(Schema.String),
  error: Schema.optional(Schema.String)
})
export type StepOutcome = typeof StepOutcome.Type

/** What a step's run came to, as the DAG run stores it (`dag/<round>/step/<id>`). */
export const StepResult = Schema.Struct({
  outcome: StepOutcome,
  /** The usage of every call of the step's agent. */
  usage: Usage.UsageByPhase,
  iterations: Schema.Number,
  /** Its tool calls, as `ToolDone` events with the step id. */
  steps: Schema.Array(ToolDone)
})
export type StepResult = typeof StepResult.Type

/** What a step needs. */
export interface StepEnv {
  readonly goal: string
  readonly round: number
  readonly conversationId: string
  readonly maxIterations: number | undefined
  readonly stepTimeout: Duration.Duration
  readonly registry: ModelRegistryService
  readonly guard: ContextGuardService
  /** Builds a fresh ReAct agent on a model (the one construction of step agents). */
  readonly agentFor: (llm: LlmService) => Effect.Effect<ReactAgentService>
  readonly journal: DagJournal
}

/** The share of a step model's budget its dependencies' results may take. */
export const DEPENDENCY_SHARE = 0.5
/** Dependency results together never exceed this many characters (under the guard's per-message cut). */
export const DEPENDENCY_MAX_CHARS = 40_000
/** A step that does not end this long after its timeout cancelled it is cut. */
const CANCEL_GRACE = Duration.seconds(5)

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

/** The name of a step's stored result; its run's activities are named under it (`<name>/llm/1`). */
export const stepName = (round: number, stepId: string): string => `dag/${round}/step/${encodeURIComponent(stepId)}`

const seconds = (d: Duration.Duration): string => `${Math.round(Duration.toMillis(d) / 100) / 10} s`

/** A step's agent did not end within the grace after its timeout cancelled it. */
class StepStuck extends Data.TaggedError("StepStuck")<{ readonly message: string }> {}

/** True while a step's activity executes (its events are then keyed by the activity). */
// a module-level FiberRef, made once as Effect's own are (globalValue keeps one per process)
const InActivity = globalValue(Symbol.for("effect-react-engine/DagAgent/inActivity"), () => FiberRef.unsafeMake(false))

/** What the step's run reported, as it ends. */
interface Seen {
  done?: Done
  failure?: string
  timedOut: boolean
}

/**
 * The journal of one step's run: activities named under the step (each one
 * that executes makes the step live), events with the step id, keyed by step
 * when the host can (see the module comment).
 */
const stepJournal = (
  parent: DagJournal,
  name: string,
  stepId: string,
  live: Deferred.Deferred<void>,
  seen: Seen
): RunJournal => {
  const starting = <A, E>(effect: Effect.Effect<A, E>): Effect.Effect<A, E> =>
    Effect.zipRight(Deferred.succeed(live, undefined), Effect.locally(effect, InActivity, true))
  const tracked: RunJournal = {
    ...parent,
    activity: (o) => {
      const onRestart = o.onRestart
      return parent.activity({
        ...o,
        ...(onRestart !== undefined ? { onRestart: () => starting(onRestart()) } : {}),
        execute: (context) => starting(o.execute(context))
      })
    }
  }
  const emitOnce = parent.emitOnce
  let position = 0
  const keyOf = (): string => `s:${name}:${++position}`
  const emit: RunJournal["emit"] = emitOnce === undefined
    ? parent.emit
    : (event, options) =>
      // an event with a key of its own (a call's ToolDone, approval events) is keyed by it already
      options?.key !== undefined
        ? parent.emit(event, options)
        : Effect.flatMap(FiberRef.get(InActivity), (inside) => (inside ? parent.emit(event) : emitOnce(keyOf(), event)))
  return Journal.nested(tracked, {
    prefix: `${name}/`,
    emit,
    map: (event) => {
      switch (event._tag) {
        case "ThinkingStart":
        case "ThinkingDone":
        case "ToolStart":
        case "ToolDone":
        case "Compact":
        case "PhaseChange":
        case "ApprovalRequested":
        case "ApprovalDecided":
          return { ...event, step_id: stepId }
        case "RunFailed":
          seen.failure = event.message
          return undefined
        case "Done":
          seen.done = event
          return undefined
        default:
          // the step's own answer stream: its result is the step's `dag` event
          return undefined
      }
    }
  })
}

/** What the step's run came to (stored by the first execution, returned as stored by a replay). */
const resultOf = (step: DagPlanStep, env: StepEnv, ran: Seen | string): StepResult => {
  const failed = (error: string): StepOutcome => ({ id: step.id, task: step.task, status: "failed", error })
  const seen: Seen = typeof ran === "string" ? { timedOut: false } : ran
  const done = seen.done
  const outcome: StepOutcome = typeof ran === "string"
    ? failed(ran)
    : seen.timedOut
    ? failed(`Timed out after ${seconds(env.stepTimeout)}`)
    : seen.failure !== undefined
    ? failed(seen.failure)
    : done === undefined
    ? failed("The step ended without a result")
    : { id: step.id, task: step.task, status: "done", result: done.answer }
  return {
    outcome,
    usage: done?.usage.by_phase ?? {},
    iterations: done?.iterations ?? 0,
    steps: (done?.steps ?? []).map((s) => ({ _tag: "ToolDone" as const, ...s, step_id: step.id }))
  }
}

/**
 * Runs one step's agent to its end and stores what it came to; never fails.
 * `launchedAt`: when the dispatch that launched it ran (stored).
 */
export const runStep = (
  env: StepEnv,
  step: DagPlanStep,
  dependencies: ReadonlyArray<StepOutcome>,
  launchedAt: number
): Effect.Effect<StepResult> => {
  const name = stepName(env.round, step.id)
  const deadline = launchedAt + Duration.toMillis(env.stepTimeout)
  const run: Effect.Effect<Seen, StepStuck> = Effect.gen(function*() {
    const llm = env.registry.resolve(step.model_hint)
    const agent = yield* env.agentFor(llm)
    const budget = Math.min(env.guard.budget, budgetForModel(llm) ?? env.guard.budget)
    const live = yield* Deferred.make<void>()
    const seen: Seen = { timedOut: false }
    // once live: sleeps until `deadline` (+ `extra` ms)
    const until = (extra: number) =>
      Effect.zipRight(
        Deferred.await(live),
        Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.sleep(Math.max(0, deadline + extra - now)))
      )
    yield* agent.execute({
      query: stepQuery(env.goal, step, dependencies, budget),
      conversationId: stepConversationId(env.conversationId, env.round, step.id),
      // the run's user answers the step's approvals
      approvalConversationId: env.conversationId,
      ...(env.maxIterations !== undefined ? { maxIterations: env.maxIterations } : {}),
      // the agent stops at once and still ends with `Done` (with its usage)
      cancel: Effect.zipRight(
        until(0),
        Effect.sync(() => {
          seen.timedOut = true
        })
      )
    }, stepJournal(env.journal, name, step.id, live, seen)).pipe(
      Effect.raceFirst(Effect.zipRight(
        until(Duration.toMillis(CANCEL_GRACE)),
        Effect.fail(new StepStuck({ message: `did not stop within ${seconds(CANCEL_GRACE)} of its timeout` }))
      ))
    )
    return seen
  })
  const ran: Effect.Effect<Seen | string> = Effect.catchAllCause(run, (cause) => {
    const error = Cause.squash(cause)
    return Effect.succeed(`Step failed: ${error instanceof Error ? error.message : String(error)}`)
  })
  return Effect.flatMap(ran, (r) =>
    env.journal.activity({
      name,
      success: StepResult,
      execute: () => Effect.sync(() => resultOf(step, env, r))
    })).pipe(
      Effect.tap((result) => Effect.annotateCurrentSpan(Telemetry.attributes.stepStatus, result.outcome.status)),
      Effect.withSpan("dag.step", {
        attributes: { [Telemetry.attributes.stepId]: step.id, [Telemetry.attributes.round]: env.round },
        captureStackTrace: false
      })
    )
}
