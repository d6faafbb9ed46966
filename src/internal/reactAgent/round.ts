/**
 * The calls of one model reply (a round): each call's checks and tool run in a
 * fiber of its own (`toolCall.callBody`), so that the tools, hook checks and
 * approval waits of a round overlap; the fiber that started them finishes each
 * call (PostToolUse hooks, `ToolDone`) as it completes, and gives the outcomes
 * in request order. A call never fails (every outcome is a value); when the
 * run is interrupted, the calls still running are interrupted and awaited
 * before the interruption goes on.
 *
 * How the calls meet the run's journal:
 * - An inline journal (`RunJournal.passThrough`: nothing is stored) needs no
 *   activity boundary, so the run's fiber starts every call and finishes them
 *   in the order they complete: one fiber per call. A call that needs approval
 *   asks from its own fiber.
 * - Any other journal (a durable host) gets one activity per call, named after
 *   the iteration and the call id (`tool/3/call_ab12`), which stores the
 *   outcome; a call that needs approval stops that activity before the tool,
 *   is asked in an activity of its own (`approval.ts`: a restart while waiting
 *   waits again), and its tool runs — approved — or is answered `Error: the
 *   user denied this call` in a third one (`tool/3/call_ab12/decided`). A
 *   non-idempotent call in flight at a crash is answered `RESTART_ERROR`
 *   instead of running twice; an idempotent one runs again with the same
 *   idempotency key (derived from the step name, `toolCall.stepName`), its
 *   activities `exclusive` (one process at a time, a claim in storage). The
 *   activities of a round run in a fiber each, and each activity's call in a
 *   fiber of its own (two per call). Stored before it counts: the activity
 *   stores the outcome without its `ToolDone`; the event goes out once the
 *   activity returned, keyed by the call (`<step name>/done`), so a crash
 *   between the two sends it after the restart from the stored outcome
 *   instead of answering a finished call as interrupted.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import { identity } from "effect/Function"
import * as Mailbox from "effect/Mailbox"
import * as Schema from "effect/Schema"
import * as Telemetry from "../../Telemetry.js"
import * as Spans from "../telemetry/spans.js"
import type { LoopEnv } from "./env.js"
import type { CallRequest, Finished, Restore } from "./toolCall.js"
import {
  askOf,
  callBody,
  CallOutcome,
  complete,
  completeThen as completeCall,
  decidedBody,
  emitDone,
  failure,
  observationOf,
  RESTART_ERROR,
  settleThen,
  stepName
} from "./toolCall.js"

/**
 * Runs the calls of a round (their `ToolStart` events are emitted); their
 * outcomes in request order. `interrupted` is called when the run is
 * interrupted during the round, once the calls still running are stopped.
 */
export const runCalls = (
  env: LoopEnv,
  calls: ReadonlyArray<CallRequest>,
  iteration: number,
  interrupted: () => void
): Effect.Effect<Array<CallOutcome>> =>
  env.journal.inline !== true
    ? Effect.onInterrupt(journaled(env, calls, iteration), () => Effect.sync(interrupted))
    : Effect.withFiberRuntime((fiber) => {
      // once per round: when the calls start, and whether their spans record anything
      const round: Round = {
        env,
        calls,
        iteration,
        interrupted,
        started: Context.get(fiber.currentDefaultServices, Clock.Clock).unsafeCurrentTimeMillis(),
        spans: Spans.toolSpansRecorded(fiber)
      }
      return calls.length === 1 ? inlineOne(round, calls[0]) : inline(round)
    })

// ---------------------------------------------------------------------------
// inline journal: one fiber per call

interface Round {
  readonly env: LoopEnv
  readonly calls: ReadonlyArray<CallRequest>
  readonly iteration: number
  readonly interrupted: () => void
  /** When the round began (milliseconds, `Clock`). */
  readonly started: number
  /** False: no tracer and no metrics, the calls open no span at all. */
  readonly spans: boolean
}

const spanOf = (round: Round, call: CallRequest) =>
  Spans.beginToolSpan({ name: call.name, id: call.id, iteration: round.iteration }, report)

const bodyOf = (round: Round, call: CallRequest, restore: Restore) => callBody(round.env, call, round.iteration, restore, "ask")

const completeOf = (round: Round, call: CallRequest, ran: Finished) =>
  complete(round.env, call, round.iteration, round.started, ran)

const completeThen = <A>(round: Round, call: CallRequest, ran: Finished, then: (outcome: CallOutcome) => Effect.Effect<A>) =>
  completeCall(round.env, call, round.iteration, round.started, ran, then)

/**
 * Stops the round's call fibers when the loop's fiber fails or is interrupted
 * while it waits for them (it is uninterruptible here), then fails as it did.
 */
const stopping = (round: Round, fibers: ReadonlyArray<Fiber.RuntimeFiber<unknown>>, spans: ReadonlyArray<Spans.ToolCallSpan<CallOutcome>>) =>
(cause: Cause.Cause<never>): Effect.Effect<never> =>
  Effect.zipRight(
    Fiber.interruptAll(fibers),
    Effect.suspend(() => {
      if (Cause.isInterrupted(cause)) round.interrupted()
      return Effect.zipRight(Effect.forEach(spans, (s) => s.interrupted, { discard: true }), Effect.failCause(cause))
    })
  )

/** A round of one call: its fiber is awaited. */
const inlineOne = (round: Round, call: CallRequest): Effect.Effect<Array<CallOutcome>> => {
  const run = (span: Spans.ToolCallSpan<CallOutcome> | undefined): Effect.Effect<Array<CallOutcome>> => {
    const within = span === undefined ? identity : span.within
    return Effect.flatMap(
      inOwnFiber((restore) => within(bodyOf(round, call, restore)), (cause) => {
        if (Cause.isInterrupted(cause)) round.interrupted()
      }),
      (ran) =>
        span === undefined
          ? completeThen(round, call, ran, (o) => Effect.succeed([o]))
          : Effect.flatMap(within(completeOf(round, call, ran)), (o) => Effect.as(span.end(o), [o]))
    )
  }
  // a traced call interrupted at any point (its PostToolUse hooks too) ends its span as such
  return round.spans ? Effect.flatMap(spanOf(round, call), (span) => Effect.onInterrupt(run(span), () => span.interrupted)) : run(undefined)
}

/** A call's fiber is over: its index in the round and what it came to. */
type Over = readonly [number, Exit.Exit<Finished>]

/**
 * A round of several calls: each call's fiber hands its result over as it
 * ends, so the calls finish in the order they complete, and the loop's fiber
 * waits once for a round of instant tools, not once per call.
 */
const inline = (round: Round): Effect.Effect<Array<CallOutcome>> => {
  const { calls } = round
  const n = calls.length
  return Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Mailbox.make<Over>(), (completed) => {
      const fibers: Array<Fiber.RuntimeFiber<boolean>> = []
      const spans: Array<Spans.ToolCallSpan<CallOutcome>> = []
      const outcomes: Array<CallOutcome> = new Array(n)
      const within = (i: number) => (spans.length === 0 ? identity : spans[i].within)
      const fork = (i: number): Effect.Effect<void> =>
        Effect.flatMap(
          Effect.fork(Effect.matchCauseEffect(within(i)(bodyOf(round, calls[i], restore)), {
            onFailure: (cause) => completed.offer([i, Exit.failCause(cause)]),
            onSuccess: (ran) => completed.offer([i, Exit.succeed(ran)])
          })),
          (fiber) => {
            fibers.push(fiber)
            return i + 1 < n ? start(i + 1) : Effect.void
          }
        )
      const start = (i: number): Effect.Effect<void> =>
        round.spans ? Effect.flatMap(spanOf(round, calls[i]), (span) => {
          spans.push(span)
          return fork(i)
        }) : fork(i)
      /** Finishes the calls that are over (`k` onwards of `over`), then waits for the rest. */
      const finish = (over: ReadonlyArray<Over>, k: number, left: number): Effect.Effect<void> => {
        if (k === over.length) return left === 0 ? Effect.void : Effect.flatMap(completed.takeAll, ([more]) => finish(Chunk.toReadonlyArray(more), 0, left))
        const [i, exit] = over[k]
        if (spans.length === 0) {
          return Effect.flatMap(exit, (ran) =>
            completeThen(round, calls[i], ran, (outcome) => {
              outcomes[i] = outcome
              return finish(over, k + 1, left - 1)
            }))
        }
        // traced: the call's completion within its span, the rest after it
        return Effect.flatMap(exit, (ran) =>
          Effect.flatMap(spans[i].within(completeOf(round, calls[i], ran)), (outcome) => {
            outcomes[i] = outcome
            return Effect.zipRight(spans[i].end(outcome), finish(over, k + 1, left - 1))
          }))
      }
      return Effect.zipRight(
        start(0),
        Effect.matchCauseEffect(restore(finish([], 0, n)), {
          onFailure: stopping(round, fibers, spans),
          onSuccess: () => Effect.succeed(outcomes)
        })
      )
    })
  )
}

// ---------------------------------------------------------------------------
// any other journal: an activity per call

/**
 * Runs a call's body in a fiber of its own (the tool's timeout interrupts that
 * fiber, not the caller) and awaits it. When the caller is interrupted while
 * it waits, the call's fiber is interrupted, then `stopped` is told.
 */
const inOwnFiber = <A>(body: (restore: Restore) => Effect.Effect<A>, stopped?: (cause: Cause.Cause<never>) => void): Effect.Effect<A> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.fork(body(restore)), (fiber) =>
      // awaited, not joined: the call's fiber-refs (`Tool.currentCall`) stay with it; the handler
      // runs because this region is uninterruptible (no onInterrupt needed)
      Effect.matchCauseEffect(restore(Fiber.await(fiber)), {
        onFailure: (cause) =>
          Effect.zipRight(
            Fiber.interrupt(fiber),
            Effect.suspend(() => {
              stopped?.(cause)
              return Effect.failCause(cause)
            })
          ),
        onSuccess: identity
      }))
  )

const journaled = (env: LoopEnv, calls: ReadonlyArray<CallRequest>, iteration: number): Effect.Effect<Array<CallOutcome>> => {
  if (calls.length === 1) return Effect.map(runCall(env, calls[0], iteration), (o) => [o])
  return Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(
      Effect.forEach(calls, (call) => Effect.fork(restore(runCall(env, call, iteration)))),
      (fibers) =>
        restore(Effect.forEach(fibers, (fiber) => Effect.flatten(Fiber.await(fiber)))).pipe(
          Effect.onInterrupt(() => Fiber.interruptAll(fibers))
        )
    )
  )
}

/** The first part of a call that needs approval: it stops before the tool, with the arguments that would run. */
const AwaitingApproval = Schema.TaggedStruct("AwaitingApproval", {
  args: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

/** What the first activity of a call stores: its outcome, or that it waits for a person. */
const FirstPart = Schema.Union(CallOutcome, AwaitingApproval)

/** One call as journal activities (see the module comment). */
const runCall = (env: LoopEnv, call: CallRequest, iteration: number): Effect.Effect<CallOutcome> => {
  const tool = Either.isRight(call.args) ? env.tools.resolve(call.name) : undefined
  const name = stepName(iteration, call.id)
  const restarted = Effect.flatMap(Clock.currentTimeMillis, (now) =>
    settleThen(env, call, now, { _tag: "Answered", args: call.shownArgs, outcome: failure(RESTART_ERROR) }, Effect.succeed))
  // an idempotent call runs again after a crash: one process at a time (a claim in storage);
  // any other is answered with an error instead
  const afterCrash = tool?.idempotent === true ? { exclusive: true } : { onRestart: () => restarted }
  const span = { name: call.name, id: call.id, iteration }
  /** The call once a person answered. */
  const decided = (args: Record<string, unknown>, verdict: Parameters<typeof decidedBody>[4]) =>
    env.journal.activity({
      name: `${name}/decided`,
      success: CallOutcome,
      ...afterCrash,
      execute: () =>
        Effect.flatMap(Clock.currentTimeMillis, (started) =>
          Effect.flatMap(
            inOwnFiber(() => decidedBody(env, call, iteration, args, verdict)),
            (ran) => settleThen(env, call, started, ran, Effect.succeed)
          )).pipe(Telemetry.toolSpan(span, report))
    })
  // stored before it counts: the call's ToolDone goes out once its outcome is stored (the
  // activity returned), keyed by the call (the calls of a round end in any order)
  const done = (o: CallOutcome) => Effect.as(emitDone(env, call, iteration, o, `${name}/done`), o)
  return env.journal.activity({
    name,
    success: FirstPart,
    ...afterCrash,
    execute: () =>
      Effect.flatMap(Clock.currentTimeMillis, (started) =>
        Effect.flatMap(
          inOwnFiber((restore) => callBody(env, call, iteration, restore, "stop")),
          (ran): Effect.Effect<CallOutcome | typeof AwaitingApproval.Type> =>
            ran._tag === "AwaitingApproval" ? Effect.succeed(ran) : settleThen(env, call, started, ran, Effect.succeed)
        )).pipe(Telemetry.toolSpan<CallOutcome | typeof AwaitingApproval.Type>(span, reportChecked))
  }).pipe(
    Effect.flatMap((first) => {
      if (!("_tag" in first)) return done(first)
      return Effect.flatMap(env.approval.ask(askOf(call, first.args, iteration)), (verdict) => Effect.flatMap(decided(first.args, verdict), done))
    })
  )
}

const report = (o: CallOutcome, content: boolean): Telemetry.ToolReport => {
  const error = o.outcome._tag === "Failure" ? o.outcome.message : undefined
  return content ? { error, args: o.args, result: observationOf(o).text } : { error }
}

/** The first part of a call: its outcome, or (waiting for a person) nothing to report yet. */
const reportChecked = (o: CallOutcome | typeof AwaitingApproval.Type, content: boolean): Telemetry.ToolReport =>
  "_tag" in o ? { error: undefined } : report(o, content)
