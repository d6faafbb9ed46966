/**
 * Fields several run events share.
 *
 * @internal
 */
import * as Schema from "effect/Schema"

/**
 * DAG mode: the id of the plan step whose ReAct agent emitted the event (absent
 * outside DAG steps).
 */
export const step_id = Schema.optional(Schema.String)

/**
 * Which run an event comes from when it is not the run's own (docs/events.md): an
 * event of a sub-agent's child run, forwarded into its parent's stream. The
 * run's own events never carry it. `depth` is 1 for a child of the top run, 2
 * for a grandchild (a forwarded grandchild event keeps its own, innermost
 * `agent`); `tool_call_id` is the parent's call that started the child.
 *
 * @since 0.1.0
 * @category models
 */
export const AgentRef = Schema.Struct({
  name: Schema.String,
  run_id: Schema.String,
  parent_run_id: Schema.String,
  depth: Schema.Number,
  tool_call_id: Schema.optional(Schema.String)
})
/**
 * @since 0.1.0
 * @category models
 */
export type AgentRef = typeof AgentRef.Type

/** The child run an event comes from (absent on the run's own events). */
export const agent = Schema.optional(AgentRef)
