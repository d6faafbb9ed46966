/**
 * A sub-agent's child run in its parent's stream (re-exported by RunEvent.ts).
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import { RunUsage } from "../../Usage.js"
import { AgentRef } from "./fields.js"

/**
 * A sub-agent's child run started, in its parent's stream: `agent`
 * names the child, `query` is what the parent's call asked it.
 *
 * @since 0.1.0
 * @category models
 */
export const AgentStart = Schema.TaggedStruct("AgentStart", { agent: AgentRef, query: Schema.String })

/**
 * A sub-agent's child run ended, in its parent's stream. It stands for the
 * child's own `Done` (and its `RunFailed`: `error`), which are never forwarded —
 * a stream has one `Done`, its own run's.
 *
 * @since 0.1.0
 * @category models
 */
export const AgentDone = Schema.TaggedStruct("AgentDone", {
  agent: AgentRef,
  answer: Schema.String,
  iterations: Schema.Number,
  usage: RunUsage,
  /** Seconds. */
  elapsed: Schema.Number,
  /** The child's failure message (its `RunFailed`), absent when it answered. */
  error: Schema.optional(Schema.String)
})
