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
 *   instead of running twice. The activities of a round run in a fiber each,
 *   and each activity's call in a fiber of its own (two per call).
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Mailbox from "effect/Mailbox"
import * as Schema from "effect/Schema"
import * as Telemetry from "../../Telemetry.js"
import * as Spans from "../telemetry/spans.js"
import type { LoopEnv } from "./env.js"
import type { CallRequest, Finished, Restore } from "./toolCall.js"
import { askOf, callBody, CallOutcome, complete, decidedBody, failure, observationOf, RESTART_ERROR } from "./toolCall.js"

/** Runs the calls of a round (their `ToolStart` events are emitted); their outcomes in request order. */
export const runCalls = (env: LoopEnv, calls: ReadonlyArray<CallRequest>, iteration: number): Effect.Effect<Array<CallOutcome>> =>
  env.journal.inline !== true
    ? journaled(env, calls, iteration)
    : calls.length === 1
    ? Effect.map(inlineOne(env, calls[0], iteration), (o) => [o])
    : inline(env, calls, iteration)

// ---------------------------------------------------------------------------
// inline journal: one fiber per call

interface Started {
  readonly call: CallRequest
  readonly span: Spans.ToolCallSpan<CallOutcome>
  readonly fiber: Fiber.RuntimeFiber<boolean>
}

/** A round of one call: its fiber is awaited. */
const inlineOne = (env: LoopEnv, call: CallRequest, iteration: number): Effect.Effect<CallOutcome> =>
  Effect.flatMap(Effect.zip(Clock.currentTimeMillis, Spans.beginToolSpan({ name: call.name, id: call.id, iteration }, report)), ([now, span]) =>
    inOwnFiber((restore) => span.within(callBody(env, call, iteration, restore, "ask"))).pipe(
      Effect.flatMap((ran) => span.within(complete(env, call, iteration, now, ran))),
      Effect.tap(span.end),
      Effect.onInterrupt(() => span.interrupted)
    ))

/** A call's fiber is over: its index in the round and what it came to. */
type Over = readonly [number, Exit.Exit<Finished>]

const inline = (env: LoopEnv, calls: ReadonlyArray<CallRequest>, iteration: number): Effect.Effect<Array<CallOutcome>> =>
  Effect.uninterruptibleMask((restore) =>
    // each call's fiber hands its result over as it ends: calls finish in the order they complete, and
    // the loop's fiber waits once for a round of instant tools, not once per call
    Effect.flatMap(Effect.zip(Clock.currentTimeMillis, Mailbox.make<Over>()), ([now, completed]) => {
      const started: Array<Started> = []
      const start = (call: CallRequest, i: number) =>
        Effect.flatMap(Spans.beginToolSpan({ name: call.name, id: call.id, iteration }, report), (span) => {
          const body = span.within(callBody(env, call, iteration, restore, "ask"))
          return Effect.map(
            Effect.fork(Effect.flatMap(Effect.exit(body), (exit) => completed.offer([i, exit]))),
            (fiber) => {
              started.push({ call, span, fiber })
            }
          )
        })
      const outcomes: Array<CallOutcome> = new Array(calls.length)
      const finish = ([i, result]: readonly [number, Effect.Effect<Finished>]) => {
        const s = started[i]
        return Effect.flatMap(result, (ran) =>
          s.span.within(complete(env, s.call, iteration, now, ran)).pipe(
            Effect.flatMap((outcome) => {
              outcomes[i] = outcome
              return s.span.end(outcome)
            })
          ))
      }
      const finishAll = Effect.forEach(calls, () => Effect.flatMap(Effect.orDie(completed.take), finish), { discard: true })
      return Effect.zipRight(
        Effect.forEach(calls, start, { discard: true }),
        restore(finishAll).pipe(
          Effect.onInterrupt(() =>
            Effect.zipRight(
              Fiber.interruptAll(started.map((s) => s.fiber)),
              Effect.forEach(started, (s) => s.span.interrupted, { discard: true })
            )
          ),
          Effect.as(outcomes)
        )
      )
    })
  )

// ---------------------------------------------------------------------------
// any other journal: an activity per call

/** Runs a call's body in a fiber of its own (the tool's timeout interrupts that fiber, not the activity). */
const inOwnFiber = <A>(body: (restore: Restore) => Effect.Effect<A>): Effect.Effect<A> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(Effect.fork(body(restore)), (fiber) =>
      // awaited, not joined: the call's fiber-refs (`Tool.currentCall`) stay with it
      restore(Effect.flatten(Fiber.await(fiber))).pipe(Effect.onInterrupt(() => Fiber.interrupt(fiber)))
    )
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
  const name = `tool/${iteration}/${call.id ?? "json"}`
  const restarted = Effect.flatMap(Clock.currentTimeMillis, (now) =>
    complete(env, call, iteration, now, { _tag: "Answered", args: call.shownArgs, outcome: failure(RESTART_ERROR) }))
  const onRestart = tool?.idempotent === true ? {} : { onRestart: () => restarted }
  const span = { name: call.name, id: call.id, iteration }
  /** The call once a person answered. */
  const decided = (args: Record<string, unknown>, verdict: Parameters<typeof decidedBody>[4]) =>
    env.journal.activity({
      name: `${name}/decided`,
      success: CallOutcome,
      ...onRestart,
      execute: () =>
        Effect.flatMap(Clock.currentTimeMillis, (started) =>
          Effect.flatMap(
            inOwnFiber(() => decidedBody(env, call, iteration, args, verdict)),
            (ran) => complete(env, call, iteration, started, ran)
          )).pipe(Telemetry.toolSpan(span, report))
    })
  return env.journal.activity({
    name,
    success: FirstPart,
    ...onRestart,
    execute: () =>
      Effect.flatMap(Clock.currentTimeMillis, (started) =>
        Effect.flatMap(
          inOwnFiber((restore) => callBody(env, call, iteration, restore, "stop")),
          (ran): Effect.Effect<CallOutcome | typeof AwaitingApproval.Type> =>
            ran._tag === "AwaitingApproval" ? Effect.succeed(ran) : complete(env, call, iteration, started, ran)
        )).pipe(Telemetry.toolSpan<CallOutcome | typeof AwaitingApproval.Type>(span, reportChecked))
  }).pipe(
    Effect.flatMap((first) => {
      if (!("_tag" in first)) return Effect.succeed(first)
      return Effect.flatMap(env.approval.ask(askOf(call, first.args, iteration)), (verdict) => decided(first.args, verdict))
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
