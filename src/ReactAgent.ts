/**
 * The ReAct agent: a tool loop (native function calling or the JSON protocol)
 * followed by one streaming answer-synthesis call, emitted as a `Stream` of
 * `RunEvent`s that always ends with `Done`.
 *
 * CONTRACT (implementation in progress): the server codes against `ReactAgent`,
 * `RunInput` and `collect`.
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { ChatMessage, Content } from "./Message.js"
import type { RunEvent, RunResult } from "./RunEvent.js"

/** @since 0.1.0 @category models */
export interface RunInput {
  /** The user's query (text or multimodal content). */
  readonly query: Content
  /** Conversation id (interrupt queue key); a fresh id when absent. */
  readonly conversationId?: string
  /** Earlier turns of the conversation (user/assistant messages), oldest first. */
  readonly history?: ReadonlyArray<ChatMessage>
  /** Overrides the agent's max iterations for this run. */
  readonly maxIterations?: number
}

/** @since 0.1.0 @category models */
export interface ReactAgentService {
  /** Runs the agent. The stream never fails: failures become `RunFailed` then `Done`. */
  readonly run: (input: RunInput) => Stream.Stream<RunEvent>
  /** Runs and collects the result. */
  readonly runCollect: (input: RunInput) => Effect.Effect<RunResult>
}

/** @since 0.1.0 @category Context */
export class ReactAgent extends Context.Tag("react-engine/ReactAgent")<ReactAgent, ReactAgentService>() {}
