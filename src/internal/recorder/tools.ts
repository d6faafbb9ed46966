/**
 * How the recorder runs a tool's handler and writes down how it ended.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Cassette from "../../Cassette.js"
import * as ErrorMessage from "../../ErrorMessage.js"
import type { Tool } from "../../Tool.js"
import { ToolError } from "../../Tool.js"

/** A handler's exit as the cassette stores it. */
export const outcomeOf = (exit: Exit.Exit<unknown, unknown>): Cassette.ToolOutcome => {
  if (Exit.isSuccess(exit)) return { _tag: "Success", output: JSON.parse(JSON.stringify(exit.value) ?? "null") }
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) return { _tag: "Failure", message: ErrorMessage.messageOf(failure.value) }
  if (Cause.isInterruptedOnly(exit.cause)) return { _tag: "Interrupted" }
  const defect = Cause.dieOption(exit.cause)
  return { _tag: "Die", message: Option.isSome(defect) ? ErrorMessage.messageOf(defect.value) : ErrorMessage.fromCause(exit.cause) }
}

/** A handler's result (an Effect, a promise or a plain value) as an Effect. */
export const handlerEffect = (tool: Tool, args: unknown): Effect.Effect<unknown, unknown> => {
  const result: unknown = tool.handler(args)
  if (Effect.isEffect(result)) return result as Effect.Effect<unknown, unknown>
  if (typeof result === "object" && result !== null && typeof (result as PromiseLike<unknown>).then === "function") {
    return Effect.tryPromise({
      try: () => Promise.resolve(result),
      catch: (e) => new ToolError({ message: `Tool ${tool.name} failed: ${ErrorMessage.messageOf(e)}` })
    })
  }
  return Effect.succeed(result)
}
