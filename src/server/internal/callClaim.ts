/**
 * The claim of an exclusive activity (a tool call that a later attempt runs
 * again: an idempotent one) — at most one process executes it at a time, also
 * while a dead instance's runs are being taken over by another.
 *
 * - Before the call runs, its process claims it in storage (`RunLog.claim`,
 *   one statement: a row of `react_activity_starts` holding the process's boot
 *   id and a lease on the database's clock). A claim whose holder is another
 *   process with a lease not expired makes the attempt wait, trying again
 *   every `renewMs`, up to `maxWaitMs` (then it dies: `CallClaimed`).
 * - While the call runs, its holder renews the lease every `renewMs`. A holder
 *   that has not renewed it for `leaseMs - renewMs` (timed on its own clock
 *   from before it sent the last renewal that succeeded, so before the lease
 *   can have expired in storage) stops the call and claims it again, as a new
 *   attempt would: a process cut off from the database stops before another
 *   can take the call over.
 * - Once the call's outcome is stored, the journal releases the claim
 *   (`RunLog.releaseClaim`).
 *
 * A dead holder is one whose lease expired: a takeover waits at most
 * `leaseMs` after the holder's last renewal. The embedded server (one
 * instance) releases every claim when it boots (`RunLog.releaseAll`), so a
 * restart on the same file does not wait.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type { RunLogService } from "../RunLog.js"

/** How claims are held (milliseconds). */
export interface ClaimSettings {
  /** How long a claim holds without being renewed: a dead holder's call is taken over this long after its last renewal. */
  readonly leaseMs: number
  /** How often the holder renews it, and how often a waiting attempt tries again (below `leaseMs / 2`). */
  readonly renewMs: number
  /** How long an attempt waits for a claim a live process keeps renewing. */
  readonly maxWaitMs: number
}

/** Close to the cluster's default shard-lock expiration (10 s): a takeover rarely waits. */
export const defaults: ClaimSettings = { leaseMs: 10_000, renewMs: 2_000, maxWaitMs: 10 * 60_000 }

/** Another process kept the call claimed for longer than an attempt waits. */
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

/**
 * Runs `execute` holding the claim of the run's activity `name` (see the
 * module comment). `execute` learns whether the activity was started first by
 * another process (`restarted`).
 */
export const exclusive = <A, E>(
  options: {
    readonly log: RunLogService
    readonly runId: string
    readonly name: string
    readonly boot: string
    readonly settings: ClaimSettings
  },
  execute: (restarted: boolean) => Effect.Effect<A, E>
): Effect.Effect<A, E> => {
  const { boot, log, name, runId, settings } = options
  const { leaseMs, renewMs } = settings

  /** Until when (this process's clock) the claim surely holds, once claimed or renewed at `sent`. */
  const holdsUntil = (sent: number) => sent + leaseMs - renewMs

  // claimed, or Busy (a live holder, or storage not answering): tried again every renewMs
  const claimOnce = Effect.flatMap(Clock.currentTimeMillis, (sent) =>
    log.claim(runId, name, boot, leaseMs).pipe(
      Effect.orElseFail(() => new Busy()),
      Effect.flatMap(Option.match({
        onNone: () => Effect.fail(new Busy()),
        onSome: (first) => Effect.succeed({ restarted: first !== boot, until: holdsUntil(sent) })
      }))
    ))
  const acquire = Effect.flatMap(Clock.currentTimeMillis, (started) =>
    claimOnce.pipe(
      Effect.retry(Schedule.spaced(renewMs).pipe(Schedule.upTo(settings.maxWaitMs))),
      Effect.catchAll(() =>
        Effect.flatMap(Clock.currentTimeMillis, (now) => Effect.die(new CallClaimed({ runId, name, waitedMs: now - started })))
      )
    ))

  /** Renews the claim while the call runs; ends when the claim may be lost (never while it holds). */
  const watch = (until: number): Effect.Effect<void> =>
    Effect.flatMap(Clock.currentTimeMillis, (now) => {
      if (now >= until) return Effect.void
      return Effect.zipRight(
        Effect.sleep(Math.min(renewMs, until - now)),
        Effect.flatMap(Clock.currentTimeMillis, (sent) => {
          if (sent >= until) return Effect.void
          // a renewal that does not answer before the deadline counts as failed
          return log.renewClaim(runId, name, boot, leaseMs).pipe(
            Effect.timeoutOption(until - sent),
            Effect.option,
            Effect.flatMap((renewed) => {
              const answer = Option.flatten(renewed)
              if (Option.isNone(answer)) return watch(until) // storage did not answer: try again
              return answer.value ? watch(holdsUntil(sent)) : Effect.void // taken by another process
            })
          )
        })
      )
    })

  const attempt: Effect.Effect<A, E> = Effect.flatMap(acquire, ({ restarted, until }) =>
    Effect.raceFirst(
      Effect.map(execute(restarted), Option.some),
      Effect.as(watch(until), Option.none<A>())
    ).pipe(
      Effect.flatMap(Option.match({
        onSome: Effect.succeed,
        // the claim may be another process's now: this attempt stopped, a new one waits for it
        onNone: () => Effect.zipRight(Effect.logWarning(`run ${runId}: lost the claim of ${name}; claiming it again`), attempt)
      }))
    ))
  return attempt
}
