/**
 * The journal of a sub-agent's child run, nested in its caller's: the child
 * is a run of its own (its run id, its `Done`), its steps are stored under the
 * calling run's, under the call's step (`tool/2/call_x/agent/llm/1`, …), and
 * its events go into the caller's stream with `agent` set.
 *
 * Event identity in a durable caller. The child runs inside the caller's tool
 * activity, which a crash makes run again (in another process): the host
 * would key the events the child emits outside its own activities by that
 * activity and the process, so a replay of the child's stored steps would
 * send its events a second time. Those events are keyed instead by the child
 * and their position among them (`<step>/agent/e/<n>`), as a DAG step's are;
 * an event emitted inside one of the child's activities stays keyed by that
 * activity (the host's rule); an event emitted with a key of its own keeps it,
 * under the child's prefix.
 *
 * The child's `Done` and `RunFailed` are not forwarded: they are what the
 * call comes to (`AgentDone` stands for them in the caller's stream).
 *
 * @internal
 */
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import type { AgentRef, Done, RunEvent } from "../../RunEvent.js"
import { isEphemeral } from "../../RunEvent.js"
import type { EmitOptions, RunJournal } from "../../RunJournal.js"

/** True while one of the child's activities executes (its events are then keyed by the activity). */
class InChildActivity extends Context.Reference<InChildActivity>()("effect-react-engine/AgentTool/inChildActivity", {
  defaultValue: () => false
}) {}

/** What the child run came to, as it ends. */
export interface Outcome {
  done?: Done
  failure?: string
}

/** The event as the caller's stream carries it: the child's `agent`, unless it comes from deeper down. */
export const tagged = (event: RunEvent, agent: AgentRef): RunEvent =>
  "agent" in event && event.agent !== undefined ? event : ({ ...event, agent } as RunEvent)

/**
 * The child's journal under `parent` (see the module comment): activities
 * prefixed with `prefix`, events tagged with `agent` and forwarded, `Done` and
 * `RunFailed` kept in `outcome`; `observe` sees every event as the child emits it.
 */
export const make = (options: {
  readonly parent: RunJournal
  readonly prefix: string
  readonly runId: string
  readonly agent: AgentRef
  readonly outcome: Outcome
  readonly observe: (event: RunEvent) => Effect.Effect<void>
}): RunJournal => {
  const { agent, outcome, parent, prefix } = options
  let position = 0
  const inActivity = <A, E>(effect: Effect.Effect<A, E>) => Effect.provideService(effect, InChildActivity, true)
  const emit = (event: RunEvent, emitOptions?: EmitOptions): Effect.Effect<void> =>
    Effect.zipRight(
      options.observe(event),
      Effect.suspend(() => {
        if (event._tag === "Done") {
          outcome.done = event
          return Effect.void
        }
        if (event._tag === "RunFailed") {
          outcome.failure = event.message
          return Effect.void
        }
        const forwarded = tagged(event, agent)
        // an ephemeral event (a tool's progress) is never stored: it takes no position
        if (isEphemeral(event)) return parent.emit(forwarded)
        if (emitOptions?.key !== undefined) return parent.emit(forwarded, { key: `${prefix}${emitOptions.key}` })
        return Effect.flatMap(InChildActivity, (inside) =>
          inside ? parent.emit(forwarded) : parent.emit(forwarded, { key: `${prefix}e/${++position}` }))
      })
    )
  const key = parent.idempotencyKey
  return {
    ...(key !== undefined ? { idempotencyKey: (name: string) => key(`${prefix}${name}`) } : {}),
    runId: options.runId,
    activity: (activity) => {
      const onRestart = activity.onRestart
      return parent.activity({
        ...activity,
        name: `${prefix}${activity.name}`,
        execute: (context) => inActivity(activity.execute(context)),
        ...(onRestart !== undefined ? { onRestart: () => inActivity(onRestart()) } : {})
      })
    },
    emit
  }
}
