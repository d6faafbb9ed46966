/**
 * PreToolUse / PostToolUse hooks (SPEC §6). Hooks run outside the LLM loop: nothing
 * the model says can skip them.
 *
 * CONTRACT (the loop calls exactly these two functions; neither ever fails).
 *
 * @since 0.1.0
 */
import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type { Tool, ToolOutput } from "./Tool.js"

/** What a hook sees about the call. @since 0.1.0 @category models */
export interface ToolUseContext {
  readonly toolName: string
  readonly args: Record<string, unknown>
  readonly toolCallId?: string
  readonly iteration: number
  readonly conversationId: string
  /** The registered tool (absent for unknown tools). */
  readonly tool?: Tool
}

/** The outcome of the Pre chain. @since 0.1.0 @category models */
export type PreDecision =
  | { readonly allow: true; readonly args: Record<string, unknown> }
  | { readonly allow: false; readonly reason: string; readonly hook: string }

/** A tool call's outcome as Post hooks see and may rewrite it. @since 0.1.0 @category models */
export type ToolOutcome =
  | { readonly _tag: "Success"; readonly output: ToolOutput }
  | { readonly _tag: "Failure"; readonly message: string }

/** @since 0.1.0 @category models */
export interface HooksService {
  readonly runPreToolUse: (context: ToolUseContext) => Effect.Effect<PreDecision>
  readonly runPostToolUse: (context: ToolUseContext, outcome: ToolOutcome) => Effect.Effect<ToolOutcome>
}

/** @since 0.1.0 @category Context */
export class Hooks extends Context.Tag("react-engine/Hooks")<Hooks, HooksService>() {}
