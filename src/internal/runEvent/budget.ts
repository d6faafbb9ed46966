/**
 * The budget's events (re-exported by RunEvent.ts): the run's budget ran out,
 * and what a person decided when it asked.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import { agent, step_id } from "./fields.js"

/**
 * The run's budget cannot pay for one more loop call and the answer (docs/budgets.md):
 * the loop stops (policy `answer`) and the run answers from what it has.
 *
 * @since 0.1.0
 * @category models
 */
export const BudgetExhausted = Schema.TaggedStruct("BudgetExhausted", {
  spent_tokens: Schema.Number,
  limit_tokens: Schema.optional(Schema.Number),
  spent_usd: Schema.optional(Schema.Number),
  limit_usd: Schema.optional(Schema.Number),
  /** What the next loop call and the answer needed at the least (tokens, and USD under a money limit). */
  needed_tokens: Schema.optional(Schema.Number),
  needed_usd: Schema.optional(Schema.Number),
  step_id,
  agent
})

/**
 * Policy `ask`: the run waits for a person (`exhausted`), who extended the
 * budget (`extended`) or stopped the run (`stopped`).
 *
 * @since 0.1.0
 * @category models
 */
export const BudgetStatus = Schema.TaggedStruct("BudgetStatus", {
  status: Schema.Literal("exhausted", "extended", "stopped"),
  spent_usd: Schema.Number,
  limit_usd: Schema.Number,
  step_id,
  agent
})
