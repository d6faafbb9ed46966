/**
 * The `RunJournal` of a durable run: every activity — a model reply, a tool
 * outcome, a drain, an approval decision — is an `@effect/workflow` activity,
 * events are stored in the run log with their per-run ids before live
 * listeners get them.
 *
 * Stored before it counts. An activity is a request to the run's workflow
 * entity that the entity forks; its reply (the step's result) is written to
 * the message storage when the activity ends, before the body gets the result
 * and acts on it — so a replay after a crash at any later instant finds it and
 * does not run the step again. A step's result is never kept in a durable
 * deferred that the running body completes itself: the entity answers one
 * request at a time, so such a deferred stays unanswered while the `run`
 * request executes and a replay after a crash misses it (EFFECT-GUIDE §6).
 *
 * Event identity. A replay re-emits the events of the run's deterministic part
 * in the same order: they are keyed by their position (`b:<n>`) and skipped
 * when stored. Events that concurrent fibers of the body emit in an order a
 * replay need not repeat are keyed by what they are, the key they are emitted
 * with (`k:<key>`: a call's `ToolDone`, emitted once its outcome is stored;
 * approval events, `approval/<approval id>/requested|decided`). Events emitted while an activity executes are keyed by the
 * activity, the process and their position in it (`<activity>@<boot>:<n>`):
 * a completed activity does not run again, so its events are not re-emitted;
 * an activity re-run after a crash emits new ones. Event ids continue from the
 * last stored one.
 *
 * Restarts. An activity that reads `restarted` (the synthesis stream) first
 * records which process started it (`RunLog.markStarted`); when that is not
 * this process, it had been in flight when its process died.
 *
 * Tool calls (an activity with `onRestart`: a tool that is not idempotent, or
 * `exclusive`: one that is) execute once whatever the workflow engine
 * delivers (`callClaim.ts`): the execution runs in the process's `Calls`,
 * outside the workflow entity, claimed and settled in storage; an attempt
 * delivered again joins the execution running here, waits for the one running
 * on another instance, or adopts the stored outcome. The events an execution
 * emits are keyed by it (`<activity>@<execution>:<n>`) and stored through the
 * journal of the run's body that waits for it in this process (none: not
 * stored). The run's idempotency keys derive from its run id
 * (`RunJournal.makeIdempotencyKey`).
 *
 * Shutdown. Once the host is stopping (`RunHost.drain`) no activity starts:
 * the run waits where it is until the workflow engine stops it, and continues
 * from there after the restart. A tool call in flight (an activity that stands
 * for a side effect: `onRestart` or `exclusive`) is counted by the host from
 * before it starts until its outcome is stored, so that the shutdown waits for
 * it (the grace). A call still running when the grace is over is cut when the
 * workflow engine stops: it stays in flight, as a crash would leave it.
 *
 * @internal
 */
import * as Activity from "@effect/workflow/Activity"
import type { WorkflowEngine, WorkflowInstance } from "@effect/workflow/WorkflowEngine"
import type * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import type * as Exit from "effect/Exit"
import * as FiberRef from "effect/FiberRef"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { isEphemeral, type RunEvent } from "../../RunEvent.js"
import type { ActivityOptions, EmitOptions, RunJournal } from "../../RunJournal.js"
import { makeIdempotencyKey } from "../../RunJournal.js"
import type { RunLogService } from "../RunLog.js"
import * as CallClaim from "./callClaim.js"
import * as RunFeed from "./runFeed.js"
import type { LocalRun, RunHost } from "./runHost.js"

/** The activity whose execution emits the current events (undefined: the run's own body). */
const CurrentActivity = FiberRef.unsafeMake<string | undefined>(undefined) // a module-level FiberRef, as Effect's own are made

/** Set while a tool call's execution runs: its events are keyed by it and go where its sink says. */
const CallSink = FiberRef.unsafeMake<CallClaim.Sink | undefined>(undefined) // module-level, as CurrentActivity

/** A run that stops runs no activity any more: it dies instead of being retried on interruption. */
class RunStopped extends Schema.TaggedError<RunStopped>()("RunStopped", {}) {}

/**
 * A tool call's outcome schema (`Schema.Exit` of the activity's success and error), one per pair of
 * schemas: Effect compiles a parser per schema object, and the call claim's stored codec is keyed by
 * this one (`callClaim.ts`), so one built per call would be compiled again on every call.
 */
const exitSchemas = new WeakMap<Schema.Schema.All, WeakMap<Schema.Schema.All, Schema.Schema.All>>()

const exitSchemaOf = <A, IA, E, IE>(
  success: Schema.Schema<A, IA>,
  failure: Schema.Schema<E, IE>
): Schema.Schema<Exit.Exit<A, E>, Schema.ExitEncoded<IA, IE, unknown>> => {
  let byFailure = exitSchemas.get(success)
  if (byFailure === undefined) {
    byFailure = new WeakMap<Schema.Schema.All, Schema.Schema.All>()
    exitSchemas.set(success, byFailure)
  }
  const known = byFailure.get(failure)
  if (known !== undefined) return known as Schema.Schema<Exit.Exit<A, E>, Schema.ExitEncoded<IA, IE, unknown>>
  const made = Schema.Exit({ success, failure, defect: Schema.Defect })
  byFailure.set(failure, made)
  return made
}

export interface DurableJournal extends RunJournal {
  /** Emits an event under a key of the host's choosing (once: skipped when stored). */
  readonly emitOnce: (key: string, event: RunEvent) => Effect.Effect<void>
  /** How many stored events a replay skipped (0 for a run that never stopped). */
  readonly skipped: Effect.Effect<number>
  /** The id of the run's last stored event so far. */
  readonly lastSeq: Effect.Effect<number>
}

type Done = Extract<RunEvent, { _tag: "Done" }>

/** Where the run's events stand: stored keys, the last id, the body's position, events a replay skipped. */
interface Positions {
  readonly keys: ReadonlySet<string>
  readonly seq: number
  readonly body: number
  readonly skipped: number
  /** Events emitted so far by each activity execution (`<activity>@<boot>`). */
  readonly activities: ReadonlyMap<string, number>
}

/**
 * The run's journal for the lifetime of the scope (it holds the run's live feed).
 * Events go to the run log (`RunLog.append`, typed through their Schema), then to
 * the feed (`runFeed.ts`).
 */
export const make = (options: {
  readonly runId: string
  /** The workflow execution the activities belong to (captured in the workflow body). */
  readonly workflow: Context.Context<WorkflowEngine | WorkflowInstance>
  readonly host: RunHost
  readonly log: RunLogService
  readonly local: LocalRun
  readonly stored: { readonly keys: ReadonlySet<string>; readonly lastSeq: number }
  /** Sees every event the run emits, stored or skipped by a replay (what the stored turn says is folded from them). */
  readonly observe?: (event: RunEvent) => Effect.Effect<void>
  /**
   * Ends the run before its `Done` is stored (storing the turn, releasing the
   * conversation) and gives the `Done` to store (the server's own fields added).
   */
  readonly beforeDone?: (done: Done) => Effect.Effect<Done>
  /** The tool calls executing in this process (one per process: `DurableRuns.ToolCalls`). */
  readonly calls: CallClaim.Calls
  /** How tool calls' claims are held (`callClaim.ts`; defaults: `CallClaim.defaults`). */
  readonly claims?: Partial<CallClaim.ClaimSettings>
}): Effect.Effect<DurableJournal, never, Scope.Scope> =>
  Effect.gen(function*() {
    const { calls, host, log, runId } = options
    const claims: CallClaim.ClaimSettings = { ...CallClaim.defaults, ...options.claims }
    const feed = yield* host.feeds.feed(runId)
    const positions = yield* Ref.make<Positions>({
      keys: options.stored.keys,
      seq: options.stored.lastSeq,
      body: 0,
      skipped: 0,
      activities: new Map()
    })
    // one event at a time: ids are assigned and stored in order (concurrent tool calls emit concurrently)
    const lock = yield* Effect.makeSemaphore(1)

    /** Stores the event under `key` with the next id, then publishes it; skipped when the key is stored. */
    const store = (key: string, event: RunEvent): Effect.Effect<void> =>
      lock.withPermits(1)(Effect.flatMap(Ref.get(positions), (at) => {
        if (at.keys.has(key)) return Ref.set(positions, { ...at, skipped: at.skipped + 1 })
        const seq = at.seq + 1
        return log.append(runId, [{ seq, key, event }]).pipe(
          Effect.orDie,
          Effect.zipRight(Ref.set(positions, { ...at, keys: new Set(at.keys).add(key), seq })),
          Effect.zipRight(RunFeed.publish(feed, { seq, event }))
        )
      }))

    /** The `Done` to store: the run ended (`beforeDone`, once: not when a replay finds it stored), without its in-process-only fields. */
    const ending = (key: string, done: Done): Effect.Effect<RunEvent> =>
      Effect.flatMap(Ref.get(positions), (at) =>
        at.keys.has(key) || options.beforeDone === undefined ? Effect.succeed(done) : options.beforeDone(done)).pipe(
          Effect.map(({ messages: _m, steps: _s, ...rest }) =>
            rest
          )
        )

    /** The key of an event: given, the body's next position, or the activity execution's next one. */
    const keyOf = (emitOptions: EmitOptions | undefined): Effect.Effect<string> =>
      emitOptions?.key !== undefined ?
        Effect.succeed(`k:${emitOptions.key}`) :
        Effect.flatMap(FiberRef.get(CurrentActivity), (activity) =>
          Ref.modify(positions, (at): [string, Positions] => {
            if (activity === undefined) return [`b:${at.body + 1}`, { ...at, body: at.body + 1 }]
            const n = (at.activities.get(activity) ?? 0) + 1
            return [`${activity}:${n}`, { ...at, activities: new Map(at.activities).set(activity, n) }]
          }))

    /** Stores an event of this run (seen by `observe` first). */
    const seen = (event: RunEvent): Effect.Effect<void> =>
      options.observe === undefined ? Effect.void : options.observe(event)
    const observed = (key: string, event: RunEvent): Effect.Effect<void> =>
      Effect.zipRight(seen(event), store(key, event))

    // an event of a tool call's execution: keyed by the execution, stored by the body waiting for it here
    const fromCall = (sink: CallClaim.Sink, event: RunEvent, emitOptions?: EmitOptions): Effect.Effect<void> =>
      Effect.suspend(() => {
        const key = emitOptions?.key !== undefined ? `k:${emitOptions.key}` : `${sink.label}:${++sink.emitted}`
        const target = sink.stores[sink.stores.length - 1]
        return target === undefined
          ? Effect.logDebug(
            `run ${runId}: ${event._tag} of ${sink.label} not stored (no run body waits for the call here)`
          )
          : target(key, event)
      })

    // tool progress, partial output (`RunEvent.isEphemeral`): to the live followers here, never stored (no key, no id)
    const emit = (event: RunEvent, emitOptions?: EmitOptions): Effect.Effect<void> =>
      isEphemeral(event) ?
        RunFeed.publish(feed, { event }) :
        Effect.flatMap(FiberRef.get(CallSink), (sink) =>
          sink !== undefined ?
            fromCall(sink, event, emitOptions) :
            Effect.flatMap(keyOf(emitOptions), (key) =>
              event._tag === "Done"
                ? Effect.zipRight(
                  seen(event),
                  Effect.flatMap(ending(key, event), (done) => store(key, done))
                )
                : observed(key, event)))

    // the workflow engine stops it (interrupts the run, and any activity, at its shutdown)
    const parked = Effect.interruptible(Effect.never)

    // an activity runs interruptibly (the workflow engine runs it uninterruptible) so that tool
    // timeouts and the run's cancellation can stop it; cancellation fails it instead of retrying it
    const running = <A, E>(
      name: string,
      effect: Effect.Effect<A, E>,
      onCancel: Effect.Effect<void> = Effect.void
    ): Effect.Effect<A, E> =>
      Effect.interruptible(effect).pipe(
        Effect.locally(CurrentActivity, `${name}@${host.bootId}`),
        Effect.raceFirst(
          Effect.zipRight(Deferred.await(options.local.cancel), Effect.zipRight(onCancel, Effect.die(new RunStopped())))
        )
      )

    // built when it runs, not when it is described: a run holds activities it may never run
    // (e.g. the approval key, cached until the first call that needs approval)
    const activity = <A, IA, E, IE>(o: ActivityOptions<A, IA, E, IE>): Effect.Effect<A, E> =>
      o.exclusive === true || o.onRestart !== undefined
        ? Effect.suspend(() => toolCall(o))
        : Effect.flatMap(host.stopping, (stopping) => (stopping ? parked : describe(o)))

    const make = <A, IA, E, IE>(
      o: ActivityOptions<A, IA, E, IE>,
      execute: Effect.Effect<A, E>,
      onCancel?: Effect.Effect<void>
    ) =>
      Effect.provide(
        Activity.make({
          name: o.name,
          success: o.success,
          error: (o.error ?? Schema.Never) as Schema.Schema<E, IE>,
          execute: running(o.name, execute, onCancel),
          interruptRetryPolicy: Schedule.stop
        }),
        options.workflow
      )

    // a tool call executes once in this process, outside the entity (`callClaim.ts`); it counts as in flight
    // from before it starts until its outcome is stored: a shutdown waits for it; once the process is
    // stopping none starts
    const toolCall = <A, IA, E, IE>(o: ActivityOptions<A, IA, E, IE>): Effect.Effect<A, E> => {
      const outcome = exitSchemaOf(o.success, (o.error ?? Schema.Never) as Schema.Schema<E, IE>)
      const execution = (sink: CallClaim.Sink) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(host.beginCall, (began) =>
            began
              ? Effect.ensuring(
                restore(
                  CallClaim.attempt({
                    log,
                    runId,
                    name: o.name,
                    holder: sink.holder,
                    settings: claims,
                    idempotent: o.exclusive === true,
                    outcome,
                    execute: (restarted) => o.execute({ restarted }),
                    ...(o.onRestart !== undefined ? { cut: o.onRestart } : {})
                  }).pipe(Effect.locally(CallSink, sink))
                ),
                host.endCall
              )
              : parked)
        )
      return make(o, calls.join(runId, o.name, observed, execution), calls.stop(runId, o.name))
    }

    const describe = <A, IA, E, IE>(o: ActivityOptions<A, IA, E, IE>): Effect.Effect<A, E> => {
      if (o.restartAware !== true) return make(o, Effect.suspend(() => o.execute({ restarted: false })))
      // who started it is kept beside the run log (a row, cheaper than one more activity), by execution: one
      // the workflow engine delivers again in this process (its entity started again) is restarted as well,
      // and keys its events afresh
      return make(
        o,
        Effect.suspend(() => {
          const execution = calls.execution()
          return Effect.flatMap(
            Effect.zip(Effect.orDie(log.markStarted(runId, o.name, execution)), Ref.get(positions)),
            ([startedBy, at]) => {
              const restarted = startedBy !== execution
              // an earlier execution's events are keyed `<name>@<execution>:<n>`: stored, a client may have shown them
              const earlier = `${o.name}@`
              const shown = restarted &&
                [...at.keys].some((key) => key.startsWith(earlier) && !key.startsWith(`${earlier}${execution}:`))
              return Effect.locally(o.execute({ restarted, shown }), CurrentActivity, `${o.name}@${execution}`)
            }
          )
        })
      )
    }

    const journal: DurableJournal = {
      activity,
      emit,
      emitOnce: observed,
      skipped: Effect.map(Ref.get(positions), (at) => at.skipped),
      lastSeq: Effect.map(Ref.get(positions), (at) => at.seq),
      idempotencyKey: (name) => makeIdempotencyKey(runId, name),
      runId
    }
    return journal
  })
