/**
 * A server run's acknowledgement (re-exported by RunEvent.ts): the run was
 * accepted and waits for a free slot.
 *
 * @internal
 */
import * as Schema from "effect/Schema"
import { agent } from "./fields.js"

/**
 * The run was accepted and waits for a free slot (`REACT_MAX_ACTIVE_RUNS` runs
 * execute): `position` runs are ahead of it. A server run's first event when it
 * must wait, stored at once, whatever the workflow engine is doing; the run's
 * own events follow when it begins to execute.
 *
 * @since 0.1.0
 * @category models
 */
export const Queued = Schema.TaggedStruct("Queued", { position: Schema.Number, agent })
