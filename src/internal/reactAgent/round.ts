/**
 * The calls of one model reply (a round), as `@effect/ai` resolves tool calls:
 * one `Effect.forEach` over the calls with one fiber per call (`concurrency:
 * calls.length`; a round of one call runs in place), each call (checks, approval, tool under its timeout,
 * PostToolUse hooks, `ToolDone`), outcomes in request order. A call never
 * fails (every outcome is a value); when the run is interrupted, `forEach`
 * interrupts the calls still running and awaits them, then `interrupted` is
 * told (the loop answers every call with an interrupted result message).
 *
 * Each call emits its `ToolDone` as it finishes, so the events of a round come
 * in completion order while the outcomes are applied in request order
 * (`state.ts`).
 *
 * How the calls meet the run's journal (one path, whatever the journal; in
 * process, `RunJournal.passThrough`, an activity is just its body): one
 * activity per call, named after the iteration and the call id
 * (`tool/3/call_ab12`), which stores the outcome; a call that needs approval
 * stops that activity before the tool, is asked in an activity of its own
 * (`approval.ts`: a restart while waiting waits again), and its tool runs —
 * approved — or is answered `Error: the user denied this call` in a third one
 * (`tool/3/call_ab12/decided`). A non-idempotent call in flight at a crash is
 * answered `RESTART_ERROR` instead of running twice; an idempotent one runs
 * again with the same idempotency key (derived from the step name,
 * `toolCall.stepName`), its activities `exclusive` (one process at a time, a
 * claim in storage). Stored before it counts: the activity stores the outcome
 * without its `ToolDone`; the event goes out once the activity returned, keyed
 * by the call (`<step name>/done`), so a crash between the two sends it after
 * the restart from the stored outcome instead of answering a finished call as
 * interrupted.
 *
 * @internal
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as Telemetry from "../../Telemetry.js"
import type { LoopEnv } from "./env.js"
import type { CallRequest } from "./toolCall.js"
import {
  askOf,
  callBody,
  CallOutcome,
  decidedBody,
  emitDone,
  failure,
  observationOf,
  RESTART_ERROR,
  settle,
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
  interrupted: () => Effect.Effect<void>
): Effect.Effect<Array<CallOutcome>> =>
  Effect.onInterrupt(
    // as many fibers as calls: a round of one call runs in place (a fiber costs ≈ 55 KB here with forEach's
    // bookkeeping, and most rounds have one call)
    Effect.forEach(calls, (call) => runCall(env, call, iteration), {
      concurrency: calls.length
    }),
    interrupted
  )

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
  const restarted = Effect.flatMap(
    Clock.currentTimeMillis,
    (now) => settle(env, call, now, { _tag: "Answered", args: call.shownArgs, outcome: failure(RESTART_ERROR) })
  )
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
          Effect.flatMap(decidedBody(env, call, iteration, args, verdict), (ran) =>
            settle(env, call, started, ran))).pipe(Telemetry.toolSpan(span, report))
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
          callBody(env, call, iteration, "stop"),
          (ran): Effect.Effect<CallOutcome | typeof AwaitingApproval.Type> =>
            ran._tag === "AwaitingApproval" ? Effect.succeed(ran) : settle(env, call, started, ran)
        )).pipe(Telemetry.toolSpan<CallOutcome | typeof AwaitingApproval.Type>(span, reportChecked))
  }).pipe(
    Effect.flatMap((first) => {
      if (!("_tag" in first)) return done(first)
      return Effect.flatMap(
        env.approval.ask(askOf(call, first.args, iteration)),
        (verdict) => Effect.flatMap(decided(first.args, verdict), done)
      )
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
