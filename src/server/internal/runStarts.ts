/**
 * The registry's hand-over of started runs to the workflow engine
 * (`RunRegistry.start`). A start is answered once the run, its request and its
 * first event are stored; the workflow request (`AgentRun.execute`, the
 * engine's own transaction) is made after, here, by a few workers of the
 * registry's scope — so a client is acknowledged however busy the engine is,
 * and a client that hangs up at once leaves its run started all the same.
 *
 * The request is stored with the run (`RunLog.start`'s `pending`) and cleared
 * once the engine has it; a process that stopped or crashed in between leaves
 * it, and the next start-up (of any instance) hands it over: the engine keys a
 * run's request by its run id, so a request handed over twice starts one run.
 *
 * @internal
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as Telemetry from "../../Telemetry.js"
import type { ConversationStoreService } from "../ConversationStore.js"
import type { RunLogService } from "../RunLog.js"
import * as RunWorkflow from "./runWorkflow.js"

/** A run's workflow request, without its history (read when it is handed over). */
export type PendingStart = Omit<RunWorkflow.RunPayload, "history">

const PendingJson = Schema.parseJson(RunWorkflow.RunPayload)

/** The request as `RunLog.start` stores it. */
export const encode = (payload: PendingStart): string => Schema.encodeSync(PendingJson)(payload)

/** How many requests are handed to the engine at once. */
export const CONCURRENCY = 8

/** A request stored this long ago and still not handed over is taken up by a sweep (any instance). */
export const SWEEP_AFTER = Duration.seconds(60)

export interface RunStarts {
  /** Hands the run's request to the engine, after the caller returns. */
  readonly submit: (payload: PendingStart) => Effect.Effect<void>
}

/**
 * Starts the workers in the scope and queues the requests left by a process
 * that stopped before handing them over (then every `SWEEP_AFTER`, those older).
 */
export const make = (deps: {
  readonly log: RunLogService
  readonly store: Option.Option<ConversationStoreService>
  /** `AgentRun.execute(payload, { discard: true })` with the engine provided. */
  readonly execute: (payload: RunWorkflow.RunPayload) => Effect.Effect<void, never, never>
  readonly now: Effect.Effect<number>
}): Effect.Effect<RunStarts, never, Scope.Scope> =>
  Effect.gen(function*() {
    const queue = yield* Queue.unbounded<PendingStart>()
    // the runs queued or being handed over here (a sweep leaves them)
    const inHand = new Set<string>()

    /** The conversation's turns before the run (the run reads them itself when they cannot be read). */
    const historyOf = (payload: PendingStart) =>
      Option.match(deps.store, {
        onNone: () => Effect.succeed(undefined),
        onSome: (store) =>
          store.history(payload.conversationId).pipe(
            Effect.catchAll((error) =>
              Effect.as(
                Effect.logWarning(`run ${payload.runId}: ${error.message}; the run reads its history itself`),
                undefined
              )
            )
          )
      })

    const handOver = (payload: PendingStart) =>
      Effect.gen(function*() {
        const history = yield* historyOf(payload)
        yield* deps.execute({ ...payload, ...(history !== undefined ? { history } : {}) })
        yield* deps.log.submitted(payload.runId)
      }).pipe(
        // under the span of the request that started the run: the workflow's spans join its trace
        Telemetry.withParent(payload.parent),
        // a failure leaves the request stored: a later sweep (or the next start-up) hands it over
        Effect.catchAllCause((cause) =>
          Effect.logError(`run ${payload.runId}: handing its start to the workflow engine failed`, cause)
        ),
        Effect.ensuring(Effect.sync(() => inHand.delete(payload.runId)))
      )

    yield* Stream.fromQueue(queue).pipe(
      Stream.mapEffect(handOver, { concurrency: CONCURRENCY, unordered: true }),
      Stream.runDrain,
      Effect.forkScoped
    )

    const submit = (payload: PendingStart) =>
      Effect.suspend(() => {
        inHand.add(payload.runId)
        return Queue.offer(queue, payload)
      }).pipe(Effect.asVoid)

    /** Queues the stored requests not in hand here, started before `before` (ms). */
    const sweep = (before: number) =>
      deps.log.unsubmitted.pipe(
        Effect.flatMap((rows) =>
          Effect.forEach(rows, (row) => {
            if (row.startedAt >= before || inHand.has(row.runId)) return Effect.void
            return Schema.decode(PendingJson)(row.pending).pipe(
              Effect.flatMap((payload) =>
                Effect.zipRight(
                  Effect.logInfo(`run ${row.runId}: its start was not handed to the workflow engine; handing it over`),
                  submit(payload)
                )
              ),
              // (the parse error would quote the stored request, the user's query with it: not logged)
              Effect.catchAll(() => Effect.logError(`run ${row.runId}: its stored start cannot be read; left as it is`))
            )
          }, { discard: true })
        ),
        Effect.catchAll((error) => Effect.logWarning(error.message))
      )

    // what a process that stopped left (all of it: nothing is in hand yet), then what another one left since
    yield* sweep(Number.MAX_SAFE_INTEGER)
    yield* Effect.flatMap(deps.now, (now) => sweep(now - Duration.toMillis(SWEEP_AFTER))).pipe(
      Effect.repeat(Schedule.spaced(SWEEP_AFTER)),
      Effect.delay(SWEEP_AFTER),
      Effect.interruptible,
      Effect.forkScoped
    )

    return { submit }
  })
