/**
 * The seam between a run and where it lives. The agent's run is one code path;
 * what it cannot decide by itself — an LLM reply, a tool call's outcome, what
 * the user injected, a compaction, the synthesized answer — goes through
 * `activity`, and every event it produces goes through `emit`.
 *
 * - In process (`ReactAgent.run`, `runCollect`) the journal is `passThrough`:
 *   an activity just runs, an event goes straight to the consumer. Nothing is
 *   stored and nothing costs more than a function call.
 * - A durable host (the server's workflow runs) stores each activity's result
 *   under its name, so that replaying the run after a crash returns the stored
 *   results instead of running them again, and stores the events in order so
 *   that a client can resume from any instance.
 *
 * Activity names are unique and deterministic within a run (`llm/3`,
 * `tool/3/call_ab12`): a replay asks for the same names in the same order.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import type * as Schema from "effect/Schema"
import type { RunEvent } from "./RunEvent.js"

/**
 * What an activity learns when it runs.
 *
 * @since 0.1.0
 * @category models
 */
export interface ActivityContext {
  /**
   * True when this activity had already started in an earlier process that
   * died before it finished (a durable host re-runs it). A streamed answer uses
   * it to tell the client to discard what it showed (`AnswerReset`).
   */
  readonly restarted: boolean
}

/**
 * @since 0.1.0
 * @category models
 */
export interface ActivityOptions<A, IA, E, IE> {
  /** Unique and deterministic within the run. */
  readonly name: string
  /** How a durable host stores the result. */
  readonly success: Schema.Schema<A, IA>
  /** How a durable host stores a failure (failures are results too). */
  readonly error?: Schema.Schema<E, IE>
  /**
   * When the activity was in flight when its process died: given, the host
   * runs this instead of running `execute` again (a tool that is not
   * idempotent answers with an error); absent, `execute` runs again with
   * `restarted: true`.
   */
  readonly onRestart?: () => Effect.Effect<A, E>
  /**
   * The activity reads `restarted` (a durable host then records who started it,
   * which costs one more write; implied by `onRestart`).
   */
  readonly restartAware?: boolean
  readonly execute: (context: ActivityContext) => Effect.Effect<A, E>
}

/**
 * @since 0.1.0
 * @category models
 */
export interface RunJournal {
  readonly activity: <A, IA, E = never, IE = never>(options: ActivityOptions<A, IA, E, IE>) => Effect.Effect<A, E>
  readonly emit: (event: RunEvent) => Effect.Effect<void>
  /**
   * True when activities just run where they are and nothing is stored
   * (`passThrough`): the run may then leave them out where they would only
   * cost (a round of parallel tool calls runs one fiber per call instead of
   * an activity fiber and a tool fiber per call). Absent: every activity is
   * run as such.
   */
  readonly inline?: boolean
}

const firstRun: ActivityContext = { restarted: false }

/**
 * The in-process journal: activities run as they are, events go to `emit`.
 *
 * @since 0.1.0
 * @category constructors
 */
export const passThrough = (emit: (event: RunEvent) => Effect.Effect<void>): RunJournal => ({
  activity: (options) => options.execute(firstRun),
  emit,
  inline: true
})

/**
 * A journal for a run nested in another (e.g. a step of a DAG run): its
 * activity names are prefixed, and its events are mapped (or dropped when `map`
 * returns `undefined`) before they reach the parent journal.
 *
 * @since 0.1.0
 * @category combinators
 */
export const nested = (
  parent: RunJournal,
  options: {
    readonly prefix: string
    readonly map?: (event: RunEvent) => RunEvent | undefined
    /** Replaces `emit` entirely (the nested run's events go here instead). */
    readonly emit?: (event: RunEvent) => Effect.Effect<void>
  }
): RunJournal => {
  const map = options.map
  const emit = options.emit ?? parent.emit
  return {
    ...(parent.inline === true ? { inline: true } : {}),
    activity: (activity) => parent.activity({ ...activity, name: `${options.prefix}${activity.name}` }),
    emit: map === undefined ? emit : (event) => {
      const mapped = map(event)
      return mapped === undefined ? Effect.void : emit(mapped)
    }
  }
}
