/**
 * Keeps the message list inside the token budget every iteration (SPEC §7).
 *
 * CONTRACT (the loop and the server call `checkAndCompact`; it never fails).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { ChatMessage } from "./Message.js"
import type { Usage } from "./Usage.js"

/** Which compaction prompt to use. @since 0.1.0 @category models */
export type CompactHint = "react_iteration" | "planner_input" | "step_dependency" | "general"

/** @since 0.1.0 @category models */
export interface CheckOptions {
  /** Token budget for this check (default: the guard's configured budget). */
  readonly budget?: number
  readonly hint?: CompactHint
}

/** @since 0.1.0 @category models */
export interface CheckResult {
  readonly messages: ReadonlyArray<ChatMessage>
  /** True when the list changed by compaction or truncation (a `compact` event is due). */
  readonly compacted: boolean
  readonly originalMessages: number
  readonly keptMessages: number
  /** Usage of the compaction LLM call(s), `Usage.empty` when none. */
  readonly usage: Usage
}

/** @since 0.1.0 @category models */
export interface ContextGuardService {
  /** The configured budget in tokens. */
  readonly budget: number
  readonly checkAndCompact: (messages: ReadonlyArray<ChatMessage>, options?: CheckOptions) => Effect.Effect<CheckResult>
  /** Estimated tokens of a message list. */
  readonly estimate: (messages: ReadonlyArray<ChatMessage>) => number
}

/** @since 0.1.0 @category Context */
export class ContextGuard extends Context.Tag("react-engine/ContextGuard")<ContextGuard, ContextGuardService>() {}
