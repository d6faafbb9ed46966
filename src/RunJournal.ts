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
 * Idempotency keys. A journal names every step of its run for the outside
 * world too: `idempotencyKey(name)` is the same for every attempt of the step
 * (a replay, a restart, another instance taking the run over) and different
 * for every other step of every run (`makeIdempotencyKey`). A tool handler
 * reads its call's key from `Tool.currentCall`.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import { hash } from "node:crypto"
import type { ChatMessage } from "./Message.js"
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
   * died before it finished (a durable host re-runs it).
   */
  readonly restarted: boolean
  /**
   * True when such an earlier start emitted events that were stored: a client
   * may have shown them. A streamed answer then tells the client to discard
   * what it showed (`AnswerReset`); an attempt cut before its first event has
   * nothing to retract. Absent: false.
   */
  readonly shown?: boolean
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
  /**
   * At most one process executes it at a time (a tool call that a later
   * attempt runs again): a durable host claims it in storage before it runs,
   * waits while a live process holds it and then takes its result, and stores
   * the result with the claim. Nothing to do in process. (A durable host
   * executes an activity with `onRestart` once in the same way: an attempt
   * delivered again while it runs, or after it ended, gets its result.)
   */
  readonly exclusive?: boolean
  readonly execute: (context: ActivityContext) => Effect.Effect<A, E>
}

/**
 * How an event is emitted.
 *
 * @since 0.1.0
 * @category models
 */
export interface EmitOptions {
  /**
   * The event's identity within the run, unique and deterministic (e.g. the
   * `ToolDone` of call `tool/3/call_ab12` is `tool/3/call_ab12/done`). A
   * durable host stores the event under it instead of under its position
   * among the run's events: events that concurrent fibers emit in an order a
   * replay need not repeat are then still stored, and skipped, exactly once.
   */
  readonly key?: string
}

/**
 * @since 0.1.0
 * @category models
 */
export interface RunJournal {
  readonly activity: <A, IA, E = never, IE = never>(options: ActivityOptions<A, IA, E, IE>) => Effect.Effect<A, E>
  readonly emit: (event: RunEvent, options?: EmitOptions) => Effect.Effect<void>
  /**
   * The idempotency key of the step (activity) `name` of this run: the same
   * for every attempt of it, across replays, restarts and takeovers, and
   * different for every other step of every run (`makeIdempotencyKey` of the
   * run's id and the full step name). Absent only in a journal written
   * without keys; the run's tool calls then carry none.
   */
  readonly idempotencyKey?: (name: string) => string
  /** The run's id (`Done.run_id`); a nested run's is its parent's. */
  readonly runId?: string
}

const firstRun: ActivityContext = { restarted: false }

/**
 * What a durable host answers for a tool call that is not idempotent and was
 * in flight when its process died (it is not run again): the call's error.
 *
 * @since 0.1.0
 * @category constants
 */
export const restartError = "interrupted by a server restart; not retried"

/**
 * The idempotency key of step `name` of run `runId`: `ik_` and the first 32
 * hex digits (128 bits) of the SHA-256 of `<runId>`, a NUL character and
 * `<name>` — 35 characters of `[a-z0-9_]`, safe in a URL, a header or a
 * database key whatever the run id and the provider's call ids contain.
 *
 * Why not `@effect/workflow`'s `Activity.idempotencyKey`: that one hashes
 * `<executionId>-<name>` (no prefix, a separator that may occur in the run id
 * and in a step name, so two different pairs can give one key), and it is an
 * effect that needs a running workflow instance — the in-process journal
 * (`passThrough`) has none, and an event's key is needed where it is built.
 * Above all, the keys already went out: stored runs, their events
 * (`idempotency_key`) and the backends that deduplicated on them hold keys of
 * this form, so it must stay byte for byte what it is (tested with fixed
 * vectors).
 *
 * @since 0.1.0
 * @category utils
 */
export const makeIdempotencyKey = (runId: string, name: string): string =>
  `ik_${hash("sha256", `${runId}\u0000${name}`, "hex").slice(0, 32)}`

/**
 * The in-process journal: activities run as they are, events go to `emit`.
 * Its tool calls' idempotency keys derive from `runId`, by default a random
 * id made when the journal is (make one journal per run).
 *
 * @since 0.1.0
 * @category constructors
 */
export const passThrough = (
  emit: (event: RunEvent) => Effect.Effect<void>,
  options?: { readonly runId?: string }
): RunJournal => {
  const runId = options?.runId ?? `run_${crypto.randomUUID()}`
  return {
    activity: (activity) => activity.execute(firstRun),
    emit,
    idempotencyKey: (name) => makeIdempotencyKey(runId, name),
    runId
  }
}

/**
 * A journal for a run nested in another (e.g. a step of a DAG run): its
 * activity names are prefixed (so are the names its idempotency keys derive
 * from: the parent's key of the prefixed name), and its events are mapped (or
 * dropped when `map` returns `undefined`) before they reach the parent journal.
 *
 * @since 0.1.0
 * @category combinators
 */
export const nested = (
  parent: RunJournal,
  options: {
    readonly prefix: string
    readonly map?: (event: RunEvent) => RunEvent | undefined
    /** Replaces `emit` entirely (the nested run's events go here instead; event keys prefixed). */
    readonly emit?: (event: RunEvent, options?: EmitOptions) => Effect.Effect<void>
  }
): RunJournal => {
  const map = options.map
  const emitTo = options.emit ?? parent.emit
  // an event's key is prefixed like an activity's name: unique within the parent run too
  const emit = (event: RunEvent, emitOptions?: EmitOptions) =>
    emitOptions?.key === undefined ? emitTo(event) : emitTo(event, { key: `${options.prefix}${emitOptions.key}` })
  const key = parent.idempotencyKey
  return {
    ...(key !== undefined ? { idempotencyKey: (name: string) => key(`${options.prefix}${name}`) } : {}),
    ...(parent.runId !== undefined ? { runId: parent.runId } : {}),
    activity: (activity) => parent.activity({ ...activity, name: `${options.prefix}${activity.name}` }),
    emit: map === undefined ? emit : (event, emitOptions) => {
      const mapped = map(event)
      return mapped === undefined ? Effect.void : emit(mapped, emitOptions)
    }
  }
}

/**
 * The journal step a tool handler runs as: the agent's loop provides it
 * around the handler (with `Tool.currentCall`); `None` outside an agent's tool
 * call. A tool whose work is a run of its own (an agent used as a tool) nests
 * that run's journal under it (`nested`, `name` as the prefix), so that its
 * steps are stored under the calling run's.
 *
 * @since 0.1.0
 * @category context
 */
export class CurrentStep extends Context.Reference<CurrentStep>()("effect-react-engine/RunJournal/CurrentStep", {
  defaultValue: (): Option.Option<StepOfCall> => Option.none()
}) {}

/**
 * @since 0.1.0
 * @category models
 */
export interface StepOfCall {
  /** The journal of the run that made the call. */
  readonly journal: RunJournal
  /** The call's step name in that journal (`tool/<iteration>/<call id>`). */
  readonly name: string
  /** The calling run's messages so far (its trace: system prompt, query, loop messages). */
  readonly thread: Effect.Effect<ReadonlyArray<ChatMessage>>
}
