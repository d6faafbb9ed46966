/**
 * What a run event is, beyond its tag: whose run it comes from, whether it is
 * stored (re-exported by RunEvent.ts).
 *
 * @internal
 */
import type { RunEvent } from "../../RunEvent.js"
import type { AgentRef } from "./fields.js"

/**
 * The child run an event comes from (`agent`), or `undefined` for the run's own
 * events. Consumers that assemble the run's answer (an OpenAI-compatible
 * stream, the AI SDK's text parts, a collector) take only the run's own events.
 *
 * @since 0.1.0
 * @category utils
 */
export const agentOf = (event: RunEvent): AgentRef | undefined => "agent" in event ? event.agent : undefined

/**
 * True for the run's own events, false for those forwarded from a child run.
 *
 * @since 0.1.0
 * @category utils
 */
export const isOwn = (event: RunEvent): boolean => agentOf(event) === undefined

/**
 * True for the events a run sends to whoever follows it live and never stores
 * (`ToolProgress`, `OutputPartial`): no sequence number, skipped by cassettes
 * and replays; a follower that reconnects does not get them again.
 *
 * @since 0.1.0
 * @category utils
 */
export const isEphemeral = (event: RunEvent): boolean => event._tag === "ToolProgress" || event._tag === "OutputPartial"
