/**
 * DAG mode's events (re-exported by RunEvent.ts).
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import { agent } from "./fields.js"

/**
 * A step of a DAG plan, as the `plan` event carries it.
 *
 * @since 0.1.0
 * @category models
 */
export const DagPlanStep = Schema.Struct({
  id: Schema.String,
  task: Schema.String,
  dependencies: Schema.Array(Schema.String),
  tool_hint: Schema.optional(Schema.String),
  model_hint: Schema.optional(Schema.String)
})
/**
 * @since 0.1.0
 * @category models
 */
export type DagPlanStep = typeof DagPlanStep.Type

/**
 * DAG mode: the plan of a round (1 for the first plan, then one more per re-plan).
 *
 * @since 0.1.0
 * @category models
 */
export const DagPlan = Schema.TaggedStruct("DagPlan", { round: Schema.Number, steps: Schema.Array(DagPlanStep), agent })

/**
 * DAG mode: a step started, finished (`result`), failed (`error`) or was skipped
 * (`error` says why).
 *
 * @since 0.1.0
 * @category models
 */
export const DagStep = Schema.TaggedStruct("DagStep", {
  round: Schema.Number,
  status: Schema.Literal("start", "done", "failed", "skipped"),
  step_id: Schema.String,
  result: Schema.optional(Schema.String),
  error: Schema.optional(Schema.String),
  agent
})

/**
 * DAG mode: the run is planning, analyzing a round's results, re-planning
 * (`reasoning`: why), or — when no usable plan came back — continuing in ReAct
 * mode (`react_fallback`, `reasoning`: the planning problem).
 *
 * @since 0.1.0
 * @category models
 */
export const DagPhase = Schema.TaggedStruct("DagPhase", {
  phase: Schema.Literal("planning", "analyzing", "replanning", "react_fallback"),
  round: Schema.Number,
  reasoning: Schema.optional(Schema.String),
  agent
})
