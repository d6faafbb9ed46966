/**
 * A tool call of a durable run executes once, whatever the workflow engine
 * delivers (SPEC §14, "exactly once"). `@effect/cluster` delivers a call's
 * activity again while the call has not returned: when the run's entity is
 * torn down and started again in the same process (a shard lock lost and got
 * back — a refresh that timed out under CPU starvation — a defect), when its
 * shard moves to an instance that joins or outlives this one, when an
 * interrupted request is written again. A boot id cannot tell these apart from
 * a first attempt, so the call is settled in storage instead:
 *
 * - **In process** (`Calls`): a call's execution runs outside the entity that
 *   asked for it, in a fiber of the process's own scope. An attempt joins the
 *   execution running here instead of starting another, and an attempt cut
 *   short (its entity torn down) leaves the execution running.
 * - **In storage** (`attempt`, on `RunLog`'s `react_activity_starts` row of
 *   the call): before the call runs, its execution claims it (one statement:
 *   the row, its holder and a lease on the database's clock); while it runs,
 *   it renews the lease every `renewMs`; when it ends, it stores the outcome
 *   (`settleCall`, once, only while it still holds the claim). An execution
 *   that finds the outcome stored adopts it; one that finds a live holder
 *   waits for its outcome (polling every `renewMs / 4`, at most `maxWaitMs`:
 *   then it dies, `CallClaimed`); one that finds the call started by an
 *   execution that is gone (its lease expired: its process died, or it was
 *   stopped) either runs it again — a tool that is idempotent — or stores the
 *   "cut" outcome (`onRestart`'s, the restart error) in its place, so a tool
 *   that is not idempotent never runs twice.
 *
 * An idempotent call's holder that could not renew its lease for
 * `leaseMs - renewMs` (timed on its own clock from before it sent the last
 * renewal that succeeded, so before the lease can have expired in storage)
 * stops its call and decides again, as a new attempt would: a process cut off
 * from storage stops before another can take the call over. A call that is
 * not idempotent is never stopped for that: what it does cannot be taken back,
 * so it runs to its end; if meanwhile another instance found its lease expired
 * and stored the cut outcome, that stays the call's outcome.
 *
 * The embedded server (one instance) releases every claim when it boots
 * (`RunLog.releaseAll`), so a restart on the same file does not wait.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type { RunEvent } from "../../RunEvent.js"
import type { RunLogError, RunLogService } from "../RunLog.js"

/** How claims are held (milliseconds). */
export interface ClaimSettings {
  /**
   * How long a claim holds without being renewed: a dead holder's call is taken
   * over this long after its last renewal.
   */
  readonly leaseMs: number
  /** How often the holder renews it (below `leaseMs / 2`); a waiting attempt looks again four times as often. */
  readonly renewMs: number
  /** How long an attempt waits for a call a live process keeps executing. */
  readonly maxWaitMs: number
}

/** Close to the cluster's default shard-lock expiration (10 s): a takeover rarely waits. */
export const defaults: ClaimSettings = { leaseMs: 10_000, renewMs: 2_000, maxWaitMs: 10 * 60_000 }

/** Another process kept executing the call for longer than an attempt waits. */
export class CallClaimed extends Schema.TaggedError<CallClaimed>()("CallClaimed", {
  runId: Schema.String,
  name: Schema.String,
  waitedMs: Schema.Number
}) {
  override get message(): string {
    return `tool call ${this.name} of run ${this.runId} is still executed by another instance after ${this.waitedMs} ms`
  }
}

class Busy extends Schema.TaggedError<Busy>()("Busy", {}) {}

/** What `settleCall` stores for a call answered in place of an execution that is gone. */
const CUT = JSON.stringify({ cut: true })

/**
 * One execution of a call in this process: its claim's holder (`<boot id>/<n>`)
 * and where the events it emits go.
 */
export interface Sink {
  readonly holder: string
  /** Keys the events the execution emits: `<activity name>@<holder>`. */
  readonly label: string
  /** How many events it emitted so far (their position in their key). */
  emitted: number
  /** The stores of the journals of the run's bodies that wait for the call here, the latest last (none: not stored). */
  readonly stores: Array<Store>
}

/** Where a journal stores an event under its key. */
export type Store = (key: string, event: RunEvent) => Effect.Effect<void>

/** The calls executing in this process (see the module comment). */
export interface Calls {
  /**
   * Waits for the outcome of call `name` of run `runId`, starting its execution
   * here unless one runs already. An interrupted wait leaves the execution
   * running. While the wait lasts, `store` stores the events the execution emits.
   */
  readonly join: <A, E>(
    runId: string,
    name: string,
    store: Store,
    execution: (sink: Sink) => Effect.Effect<A, E>
  ) => Effect.Effect<A, E>
  /** Stops the call's execution here (its run was cancelled). */
  readonly stop: (runId: string, name: string) => Effect.Effect<void>
  /** Stops every call executing here (the end of a shutdown's grace): they stay in flight, as a crash leaves them. */
  readonly stopAll: Effect.Effect<void>
  /** A new name for one execution of an activity in this process (`<boot id>/<n>`). */
  readonly execution: () => string
}

/** The calls executing in this process (provided with the run host: `DurableRuns.layerHost`). */
export class ToolCalls extends Context.Tag("effect-react-engine/ToolCalls")<ToolCalls, Calls>() {}

/** This process's calls (boot id `bootId`); their executions stop when the layer is released. */
export const layer = (bootId: string): Layer.Layer<ToolCalls> => Layer.scoped(ToolCalls, makeCalls(bootId))

interface Running {
  readonly sink: Sink
  readonly done: Deferred.Deferred<unknown, unknown>
  fiber?: Fiber.RuntimeFiber<unknown, unknown>
}

/** The calls of a process whose boot id is `bootId`; their executions stop when the scope closes. */
export const makeCalls = (bootId: string): Effect.Effect<Calls, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const lock = yield* Effect.makeSemaphore(1)
    const running = new Map<string, Running>()
    let executions = 0
    const next = () => `${bootId}/${++executions}`
    const keyOf = (runId: string, name: string) => `${runId}\u0000${name}`

    // the store is attached before the execution starts (its first events have one), under the lock
    const started = <A, E>(key: string, name: string, store: Store, execution: (sink: Sink) => Effect.Effect<A, E>) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const current = running.get(key)
        if (current !== undefined) {
          current.sink.stores.push(store)
          return current
        }
        const holder = next()
        const sink: Sink = { holder, label: `${name}@${holder}`, emitted: 0, stores: [store] }
        const entry: Running = { sink, done: yield* Deferred.make<unknown, unknown>() }
        running.set(key, entry)
        entry.fiber = yield* Effect.forkIn(
          // a scope of its own: the one it would inherit is the activity's, closed with the attempt
          Effect.interruptible(Effect.scoped(Effect.suspend(() => execution(sink)))).pipe(
            Effect.onExit((exit) => Deferred.done(entry.done, exit)),
            Effect.ensuring(Effect.sync(() => {
              if (running.get(key) === entry) running.delete(key)
            }))
          ),
          scope
        )
        return entry
      }))

    return {
      join: <A, E>(runId: string, name: string, store: Store, execution: (sink: Sink) => Effect.Effect<A, E>) =>
        Effect.acquireUseRelease(
          started(keyOf(runId, name), name, store, execution),
          // the execution's outcome; an execution stopped here (a shutdown's grace over) has none: the
          // attempt stays in flight until the workflow engine stops, as a crash would leave it
          (entry) =>
            Effect.catchAllCause(
              Deferred.await(entry.done) as Effect.Effect<A, E>,
              (cause) => (Cause.isInterruptedOnly(cause) ? Effect.interruptible(Effect.never) : Effect.failCause(cause))
            ),
          (entry) =>
            Effect.sync(() => {
              const at = entry.sink.stores.lastIndexOf(store)
              if (at >= 0) entry.sink.stores.splice(at, 1)
            })
        ),
      stop: (runId, name) =>
        Effect.suspend(() => {
          const fiber = running.get(keyOf(runId, name))?.fiber
          return fiber === undefined ? Effect.void : Fiber.interrupt(fiber)
        }),
      execution: next,
      stopAll: Effect.suspend(() => Fiber.interruptAll([...running.values()].flatMap((entry) => entry.fiber ?? [])))
    }
  })

/** What `attempt` needs to know about a call. */
export interface CallOptions<A, E> {
  readonly log: RunLogService
  readonly runId: string
  readonly name: string
  /** This execution (`Sink.holder`). */
  readonly holder: string
  readonly settings: ClaimSettings
  /** Whether a call whose execution is gone may run again (else it is answered `cut`). */
  readonly idempotent: boolean
  /** How the outcome is stored. */
  readonly outcome: Schema.Schema<Exit.Exit<A, E>, any>
  /** Runs the call; `restarted`: an execution that is gone had started it. */
  readonly execute: (restarted: boolean) => Effect.Effect<A, E>
  /** The answer in place of a call that is not idempotent and was started by an execution that is gone. */
  readonly cut?: () => Effect.Effect<A, E>
}

type Decision =
  | { readonly _tag: "Run"; readonly restarted: boolean; readonly until: number }
  | { readonly _tag: "Adopt"; readonly stored: string }

/** How an outcome is stored: its `Exit` as JSON text. */
interface StoredCodec<A, E> {
  readonly decode: (stored: string) => Effect.Effect<Exit.Exit<A, E>, ParseResult.ParseError>
  readonly encode: (exit: Exit.Exit<A, E>) => Effect.Effect<string, ParseResult.ParseError>
}

/**
 * The stored codec of each outcome schema, built once: Effect compiles a parser per schema object, so
 * one built per call would be compiled again on every call (≈ a quarter of the Schema work of a
 * stored iteration, bench/cpuProfile.ts --marginal). A weak map: an outcome schema no call uses any
 * more goes with its codec.
 */
const storedCodecs = new WeakMap<Schema.Schema.All, StoredCodec<any, any>>()

const storedCodecOf = <A, E>(outcome: Schema.Schema<Exit.Exit<A, E>, any>): StoredCodec<A, E> => {
  const known = storedCodecs.get(outcome)
  if (known !== undefined) return known
  const stored = Schema.parseJson(Schema.Struct({ exit: outcome }))
  const decode = Schema.decodeUnknown(stored)
  const encode = Schema.encode(stored)
  const codec: StoredCodec<A, E> = {
    decode: (text) => Effect.map(decode(text), (s) => s.exit),
    encode: (exit) => encode({ exit })
  }
  storedCodecs.set(outcome, codec)
  return codec
}

/** One execution of a call against its row in storage (see the module comment). */
export const attempt = <A, E>(o: CallOptions<A, E>): Effect.Effect<A, E> => {
  const { holder, log, name, runId, settings } = o
  const { leaseMs, renewMs } = settings
  const codec = storedCodecOf(o.outcome)
  const cut = o.cut ??
    (() => Effect.dieMessage(`tool call ${name} of run ${runId} was cut, and it has no answer for that`))

  /** Until when (this process's clock) the claim surely holds, once claimed or renewed at `sent`. */
  const holdsUntil = (sent: number) => sent + leaseMs - renewMs

  const adopt = (stored: string): Effect.Effect<A, E> => {
    if (stored === CUT) return cut()
    return Effect.flatten(Effect.orDie(codec.decode(stored)))
  }

  // claimed, the outcome stored, or Busy (a live holder, or storage not answering)
  const decideOnce: Effect.Effect<Decision, Busy> = Effect.flatMap(
    Clock.currentTimeMillis,
    (sent) =>
      log.claim(runId, name, holder, leaseMs).pipe(
        Effect.flatMap(Option.match({
          onSome: (first): Effect.Effect<Decision, Busy | RunLogError> =>
            Effect.succeed({ _tag: "Run", restarted: first !== holder, until: holdsUntil(sent) }),
          onNone: () =>
            Effect.flatMap(
              log.callOutcome(runId, name),
              Option.match({
                onNone: () => Effect.fail(new Busy()),
                onSome: (stored) => Effect.succeed<Decision>({ _tag: "Adopt", stored })
              })
            )
        })),
        Effect.catchTag("RunLogError", () => Effect.fail(new Busy()))
      )
  )
  const decide = Effect.flatMap(Clock.currentTimeMillis, (started) =>
    decideOnce.pipe(
      Effect.retry(Schedule.spaced(Math.max(1, Math.floor(renewMs / 4))).pipe(Schedule.upTo(settings.maxWaitMs))),
      Effect.catchAll(() =>
        Effect.flatMap(Clock.currentTimeMillis, (now) =>
          Effect.die(new CallClaimed({ runId, name, waitedMs: now - started })))
      )
    ))

  // stores the outcome; false when another execution holds the call now or stored one first.
  // Storage not answering is tried again: the outcome is only the call's once stored
  const settle = (stored: string) =>
    Effect.orDie(Effect.retry(log.settleCall(runId, name, holder, stored), Schedule.spaced(renewMs)))

  /** Renews the claim while the call runs; ends when the claim may be lost (never while it holds). */
  const watch = (until: number): Effect.Effect<void> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (now >= until) return Effect.void
      return Effect.zipRight(
        Effect.sleep(Math.min(renewMs, until - now)),
        Effect.flatMap(Clock.currentTimeMillis, (sent) => {
          if (sent >= until) return Effect.void
          // a renewal that does not answer before the deadline counts as failed
          return log.renewClaim(runId, name, holder, leaseMs).pipe(
            Effect.timeoutOption(until - sent),
            Effect.option,
            Effect.flatMap((renewed) => {
              const answer = Option.flatten(renewed)
              if (Option.isNone(answer)) return watch(until) // storage did not answer: try again
              return answer.value ? watch(holdsUntil(sent)) : Effect.void // taken by another execution
            })
          )
        })
      )
    })
  // a call that is not idempotent runs to its end: its lease is renewed, never watched
  const renewing: Effect.Effect<never> = Effect.forever(
    Effect.ignore(Effect.delay(log.renewClaim(runId, name, holder, leaseMs), renewMs))
  )

  const run = (restarted: boolean, until: number): Effect.Effect<Option.Option<Exit.Exit<A, E>>> =>
    Effect.raceFirst(
      Effect.map(Effect.exit(o.execute(restarted)), (exit) =>
        // an execution that ended interrupted by itself (not stopped from outside) stores a defect
        Option.some(
          Exit.isInterrupted(exit) ? Exit.die(new Error(`tool call ${name} was interrupted`)) as Exit.Exit<A, E> : exit
        )),
      o.idempotent ? Effect.as(watch(until), Option.none()) : renewing
    )

  const loop: Effect.Effect<A, E> = Effect.flatMap(decide, (decision): Effect.Effect<A, E> => {
    if (decision._tag === "Adopt") return adopt(decision.stored)
    if (decision.restarted && !o.idempotent) {
      // started by an execution that is gone: answered in its place, never run twice
      return Effect.flatMap(settle(CUT), (stored) => (stored ? cut() : loop))
    }
    return Effect.flatMap(
      run(decision.restarted, decision.until),
      Option.match({
        // the claim may be another execution's now: this one stopped, and decides again
        onNone: () =>
          Effect.zipRight(Effect.logWarning(`run ${runId}: lost the claim of ${name}; claiming it again`), loop),
        onSome: (exit) =>
          Effect.flatMap(
            Effect.orDie(codec.encode(exit)),
            (stored) => Effect.flatMap(settle(stored), (settled) => (settled ? exit : loop))
          )
      })
    )
  })

  // stopped from outside (the run cancelled, the process stopping): the claim is let go at once
  return Effect.onInterrupt(
    loop,
    () => Effect.ignore(Effect.timeout(log.releaseClaim(runId, name, holder), "1 second"))
  )
}
