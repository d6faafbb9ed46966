/**
 * The runs of the server, owned by a scoped layer (not by request fibers), so a
 * run survives its client's disconnect: each run keeps a bounded replay buffer
 * of its SSE frames and a `PubSub` for live subscribers. When the last
 * subscriber leaves, the run lives on for `RUN_DETACH_GRACE_MS`; if nobody
 * re-attaches it is cancelled (its fiber interrupted: the LLM request is
 * aborted, tools are interrupted) — unless one of its tool calls asked a person
 * for approval (SPEC §15: such a run waits, then goes on to its end). A cancelled run still ends with `done`, and
 * its turn is stored with a tool message for every tool call.
 *
 * Live subscribers are plain listeners called synchronously by the run as it
 * buffers each frame (instead of a `PubSub` + a Stream per connection: measured
 * ~150 KB less heap per connection), so replay-then-live needs no
 * de-duplication window: a subscriber replays the buffer and adds its listener in
 * one synchronous step.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as FiberSet from "effect/FiberSet"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { randomUUID } from "node:crypto"
import * as ContextGuard from "../ContextGuard.js"
import type { Mode } from "../DagAgent.js"
import * as DagAgent from "../DagAgent.js"
import * as Interrupts from "../Interrupts.js"
import * as ReactAgent from "../ReactAgent.js"
import * as Transcript from "./internal/transcript.js"
import { NotFound, RunInProgress } from "./ApiError.js"
import * as ConversationStore from "./ConversationStore.js"
import * as ServerConfig from "./ServerConfig.js"
import { execute, type RunState } from "./internal/run.js"
import type { Frame } from "./Sse.js"
import * as Sse from "./Sse.js"

/** @since 0.1.0 @category models */
export interface StartOptions {
  readonly query: string
  /** Continue this conversation (a new id is made when absent). */
  readonly conversationId?: string
  readonly maxIterations?: number
  /** Default: the server's `defaultMode` (`REACT_DEFAULT_MODE`). */
  readonly mode?: Mode
}

/** @since 0.1.0 @category models */
export interface RunHandle {
  readonly conversationId: string
  readonly runId: string
}

/** @since 0.1.0 @category models */
export interface RunRegistryService {
  /** Starts a run in the background; 409 (`RunInProgress`) while the conversation has one. */
  readonly start: (options: StartOptions) => Effect.Effect<RunHandle, RunInProgress>
  /**
   * The SSE frames of the conversation's latest run after cursor `after`, then
   * its live frames until `done`. Attaching holds a lease on the run for the
   * lifetime of `Scope` (the detach grace starts when the last lease ends).
   */
  readonly attach: (
    conversationId: string,
    after: number
  ) => Effect.Effect<Sse.Sink, NotFound, Scope.Scope>
  /**
   * True when the conversation's latest run is over and has no frame after
   * `after` (a replay would be empty).
   */
  readonly caughtUp: (conversationId: string, after: number) => Effect.Effect<boolean>
  /** Cancels the active run and waits (≤ 5 s) for its `done`; false when none is active. */
  readonly cancel: (conversationId: string) => Effect.Effect<boolean>
  readonly isActive: (conversationId: string) => Effect.Effect<boolean>
  /** Number of runs still going. */
  readonly activeCount: Effect.Effect<number>
  /** Completed when the registry has shut down (every SSE response ended). */
  readonly shutdown: Deferred.Deferred<void>
}

/** How long a finished run stays replayable (ms). @since 0.1.0 @category constants */
export const FINISHED_RUN_TTL_MS = 15 * 60 * 1000

/** @since 0.1.0 @category constructors */
export const make = Effect.gen(function*() {
  const settings = yield* ServerConfig.ServerConfig
  const agent = yield* ReactAgent.ReactAgent
  const dag = yield* DagAgent.DagAgent
  const guard = yield* ContextGuard.ContextGuard
  const interrupts = yield* Interrupts.Interrupts
  const store = yield* ConversationStore.ConversationStore
  const fibers = yield* FiberSet.make()
  const timers = yield* FiberSet.make()
  const shutdown = yield* Deferred.make<void>()
  const runs = new Map<string, RunState>()
  const sinks = new Set<Sse.Sink>()

  const requestCancel = (run: RunState) => Deferred.succeed(run.cancel, undefined)

  // SPEC §15: a run waiting for a person (or that went on after one answered) is
  // never cancelled because no client is connected
  const involvesPerson = (run: RunState): Effect.Effect<boolean> =>
    run.transcript.approvals > 0
      ? Effect.succeed(true)
      : Effect.map(agent.approvals.pending(run.conversationId), (pending) => pending.length > 0)

  const scheduleDetach = (run: RunState): Effect.Effect<void> => {
    if (!run.running || run.leases > 0) return Effect.void
    if (settings.detachGraceMs === 0) return Effect.unlessEffect(requestCancel(run), involvesPerson(run)).pipe(Effect.asVoid)
    const generation = run.leaseGeneration
    // forked from a finalizer: make the timer interruptible explicitly
    return FiberSet.run(
      timers,
      Effect.interruptible(Effect.sleep(settings.detachGraceMs)).pipe(
        Effect.zipRight(Effect.suspend(() =>
          run.running && run.leases === 0 && run.leaseGeneration === generation
            ? Effect.unlessEffect(
              Effect.zipRight(
                Effect.logInfo(`run ${run.id} cancelled: no client re-attached within ${settings.detachGraceMs} ms`),
                requestCancel(run)
              ),
              involvesPerson(run)
            )
            : Effect.void
        ))
      )
    ).pipe(Effect.asVoid)
  }

  // finished runs stay replayable for a while: at most `finishedRunsKept` of
  // them, none older than FINISHED_RUN_TTL_MS (oldest first)
  const evictFinished = () => {
    const expired = Date.now() - FINISHED_RUN_TTL_MS
    let finished = 0
    for (const run of runs.values()) if (!run.running) finished++
    for (const [id, run] of runs) {
      if (run.running) continue
      if (finished > settings.finishedRunsKept || (run.finishedAt ?? Infinity) < expired) {
        runs.delete(id)
        finished--
      }
    }
  }

  const service: RunRegistryService = {
    start: (options) =>
      Effect.gen(function*() {
        const conversationId = options.conversationId ?? `conv_${randomUUID()}`
        const run: RunState = {
          id: `run_${randomUUID()}`,
          conversationId,
          query: options.query,
          mode: options.mode ?? settings.defaultMode,
          ...(options.maxIterations !== undefined ? { maxIterations: options.maxIterations } : {}),
          frames: [],
          nextId: 1,
          listeners: new Set(),
          running: true,
          leases: 0,
          leaseGeneration: 0,
          doneSent: false,
          cancel: yield* Deferred.make<void>(),
          finished: yield* Deferred.make<void>(),
          transcript: Transcript.make(),
          startedAt: Date.now()
        }
        // check-and-insert without yielding: two concurrent starts cannot both win
        const conflict = yield* Effect.sync(() => {
          const current = runs.get(conversationId)
          if (current?.running) return true
          runs.delete(conversationId)
          runs.set(conversationId, run)
          evictFinished()
          return false
        })
        if (conflict) return yield* Effect.fail(new RunInProgress({ conversationId }))
        yield* interrupts.register(conversationId)
        // `start` may be called from an uninterruptible region: the run itself must stay cancellable
        yield* FiberSet.run(fibers, Effect.interruptible(execute(run, { settings, agent, dag, guard, interrupts, store })))
        return { conversationId, runId: run.id }
      }),
    attach: (conversationId, after) =>
      Effect.gen(function*() {
        const run = runs.get(conversationId)
        if (run === undefined) return yield* Effect.fail(new NotFound({ code: "no_run", conversationId }))
        yield* Effect.acquireRelease(
          Effect.sync(() => {
            run.leases++
            run.leaseGeneration++
          }),
          () =>
            Effect.suspend(() => {
              run.leases--
              run.leaseGeneration++
              return scheduleDetach(run)
            })
        )
        // replay and subscribe in one synchronous step (frames are emitted synchronously too)
        const sink = yield* Effect.sync(() => {
          let last = after
          const deliver = (frame: Frame, replayed: boolean) => {
            if (frame.id <= last) return
            last = frame.id
            if (replayed) sink.replay(frame.bytes)
            else sink.write(frame.bytes)
            if (frame.channel === "done") sink.end()
          }
          const listener = (frame: Frame) => deliver(frame, false)
          const sink = Sse.makeSink(settings.heartbeatMs, () => {
            run.listeners.delete(listener)
            sinks.delete(sink)
          }, settings.sseMaxBacklogBytes)
          sinks.add(sink)
          for (const frame of run.frames) {
            if (sink.isClosed()) break
            deliver(frame, true)
          }
          if (!sink.isClosed()) {
            if (run.running) run.listeners.add(listener)
            else sink.end()
          }
          return sink
        })
        // the response is over with the scope (normally the sink ended first)
        yield* Effect.addFinalizer(() => Effect.sync(sink.end))
        return sink
      }),
    cancel: (conversationId) =>
      Effect.suspend(() => {
        const run = runs.get(conversationId)
        if (run === undefined || !run.running) return Effect.succeed(false)
        return requestCancel(run).pipe(
          Effect.zipRight(Deferred.await(run.finished).pipe(Effect.timeout("5 seconds"), Effect.ignore)),
          Effect.as(true)
        )
      }),
    caughtUp: (conversationId, after) =>
      Effect.sync(() => {
        const run = runs.get(conversationId)
        return run !== undefined && !run.running && run.nextId - 1 <= after
      }),
    isActive: (conversationId) => Effect.sync(() => runs.get(conversationId)?.running === true),
    activeCount: Effect.sync(() => {
      let n = 0
      for (const run of runs.values()) if (run.running) n++
      return n
    }),
    shutdown
  }

  // Runs first (finalizers run in reverse order): cancel every run so each ends
  // with `done`, wait a little, then end the remaining SSE responses.
  yield* Effect.addFinalizer(() =>
    Effect.gen(function*() {
      const active = [...runs.values()].filter((r) => r.running)
      if (active.length > 0) yield* Effect.logInfo(`shutting down: cancelling ${active.length} run(s)`)
      yield* Effect.forEach(active, requestCancel, { discard: true })
      yield* Effect.forEach(active, (r) => Deferred.await(r.finished), { discard: true, concurrency: "unbounded" }).pipe(
        Effect.timeout("3 seconds"),
        Effect.ignore
      )
      // responses still open (their run did not end in time): a final frame, then the end
      for (const sink of [...sinks]) {
        sink.write(Sse.shutdownFrame)
        sink.end()
      }
      yield* Deferred.succeed(shutdown, undefined)
    })
  )
  return service
})

/** @since 0.1.0 @category Context */
export class RunRegistry extends Context.Tag("effect-react-engine/RunRegistry")<RunRegistry, RunRegistryService>() {}

/**
 * @since 0.1.0
 * @category layers
 */
export const layer = Layer.scoped(RunRegistry, make)

