/**
 * The per-call tool timeout of one run. A tool runs, interruptibly, at the end
 * of a fiber that belongs to its call (`round.ts`); ONE timer fiber per run
 * (forked in the run's scope) sleeps until the earliest deadline of the calls
 * in flight and interrupts the fibers whose deadline has passed. The call's
 * fiber catches that interruption and gives the "timed out" outcome as its
 * value, which its call then handles like any other outcome (a durable run
 * stores it).
 *
 * Why not `Effect.timeoutFail` per call: it forks two fibers (the effect and a
 * sleeping timer) and races them, then interrupts the timer and awaits it —
 * 31 µs and 39 KB per call measured here, for tools that are done at once. A
 * call here costs an entry in a set; the timer sleeps on through calls that end
 * in time (with one timeout for every tool, later calls have later deadlines).
 * A call whose deadline comes before the timer's (a tool with a shorter
 * `timeout` of its own) gets a one-shot timer of its own.
 *
 * Timers sleep on Effect's `Clock`, so `TestClock` drives them like any sleep.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import type * as Scope from "effect/Scope"

/** A call in flight. */
interface Entry {
  readonly deadline: number
  readonly fiber: Fiber.RuntimeFiber<unknown, unknown>
  /** Set by a timer just before it interrupts the fiber. */
  expired: boolean
}

/** The timeouts of one run's tool calls. */
export interface Deadlines {
  /**
   * Runs `run(timedOut, done)` in the CURRENT fiber with a deadline `timeout`
   * from now: when it is still running then, the run's timer interrupts this
   * fiber and `timedOut()` turns true. `run` must mark the work that may be
   * stopped `Effect.interruptible`, catch its interruption, and call `done()`
   * once that work is over (the deadline is dropped); the fiber itself must be
   * uninterruptible here and do nothing interruptible afterwards (it may have
   * been interrupted): this is the last thing a call's own fiber does.
   */
  readonly guard: <A>(
    timeout: Duration.Duration,
    run: (timedOut: () => boolean, done: () => void) => Effect.Effect<A>
  ) => Effect.Effect<A>
}

/** The deadlines of a run; its timer fibers end with `scope`. */
export const make: Effect.Effect<Deadlines, never, Scope.Scope> = Effect.map(Effect.scope, (scope) => {
  const inFlight = new Set<Entry>()
  /** When the run's timer wakes up next (undefined: no timer running). */
  let timerAt: number | undefined

  /** Marks and removes the calls whose deadline has passed; their fibers to interrupt. */
  const takeDue = (now: number): Array<Fiber.RuntimeFiber<unknown, unknown>> => {
    const due: Array<Fiber.RuntimeFiber<unknown, unknown>> = []
    for (const entry of inFlight) {
      if (entry.deadline > now) continue
      entry.expired = true
      inFlight.delete(entry)
      due.push(entry.fiber)
    }
    return due
  }

  const earliest = (): number | undefined => {
    let min: number | undefined
    for (const entry of inFlight) if (min === undefined || entry.deadline < min) min = entry.deadline
    return min
  }

  // the interruptions are sent whole: a timer interrupted meanwhile (the run ends) loses none
  const interruptAll = (fibers: ReadonlyArray<Fiber.RuntimeFiber<unknown, unknown>>) =>
    Effect.uninterruptible(Effect.forEach(fibers, Fiber.interruptFork, { discard: true }))

  /** The run's timer: wakes at the earliest deadline, interrupts what is due, sleeps on while calls are in flight. */
  const timer: Effect.Effect<void> = Effect.flatMap(Clock.currentTimeMillis, (now) => {
    const due = takeDue(now)
    const next = earliest()
    timerAt = next
    const sleepOn = next === undefined ? Effect.void : Effect.zipRight(Effect.sleep(Duration.millis(next - now)), timer)
    return Effect.zipRight(interruptAll(due), sleepOn)
  })

  /**
   * A timer for one deadline earlier than the run's timer: interrupts what is due then, once.
   * A sleep may end a little before the clock reaches the deadline (Node's timers under load):
   * it then sleeps the rest instead of finding nothing due and never looking again.
   */
  const oneShot = (at: number, now: number): Effect.Effect<void> =>
    Effect.zipRight(
      Effect.sleep(Duration.millis(at - now)),
      Effect.flatMap(Clock.currentTimeMillis, (t) => t < at ? oneShot(at, t) : interruptAll(takeDue(t)))
    )

  // timers are forked from a call's uninterruptible fiber: they must stay interruptible (the run's end stops them)
  const start = (timerFiber: Effect.Effect<void>) => Effect.asVoid(Effect.forkIn(Effect.interruptible(timerFiber), scope))

  /** Adds a call in flight; the timer to start for it, if any. */
  const watch = (entry: Entry, now: number): Effect.Effect<void> | undefined => {
    inFlight.add(entry)
    if (timerAt === undefined) {
      timerAt = entry.deadline
      return start(Effect.zipRight(Effect.sleep(Duration.millis(entry.deadline - now)), timer))
    }
    return entry.deadline < timerAt ? start(oneShot(entry.deadline, now)) : undefined
  }

  const never = () => false
  const nothing = () => {}

  const guard = <A>(
    timeout: Duration.Duration,
    run: (timedOut: () => boolean, done: () => void) => Effect.Effect<A>
  ): Effect.Effect<A> => {
    if (!Duration.isFinite(timeout)) return run(never, nothing)
    const ms = Duration.toMillis(timeout)
    return Effect.withFiberRuntime((fiber) => {
      const now = Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis()
      const entry: Entry = { deadline: now + ms, fiber, expired: false }
      const guarded = run(() => entry.expired, () => void inFlight.delete(entry))
      const timerStart = watch(entry, now)
      return timerStart === undefined ? guarded : Effect.zipRight(timerStart, guarded)
    })
  }

  return { guard }
})
