/**
 * How the recorder writes down how a tool's handler ended.
 *
 * @internal
 */
import * as Cause from "effect/Cause"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import type * as Cassette from "../../Cassette.js"
import * as ErrorMessage from "../../ErrorMessage.js"

/** A handler's exit as the cassette stores it. */
export const outcomeOf = (exit: Exit.Exit<unknown, unknown>): Cassette.ToolOutcome => {
  if (Exit.isSuccess(exit)) return { _tag: "Success", output: JSON.parse(JSON.stringify(exit.value) ?? "null") }
  const failure = Cause.failureOption(exit.cause)
  if (Option.isSome(failure)) return { _tag: "Failure", message: ErrorMessage.messageOf(failure.value) }
  if (Cause.isInterruptedOnly(exit.cause)) return { _tag: "Interrupted" }
  const defect = Cause.dieOption(exit.cause)
  return {
    _tag: "Die",
    message: Option.isSome(defect) ? ErrorMessage.messageOf(defect.value) : ErrorMessage.fromCause(exit.cause)
  }
}
