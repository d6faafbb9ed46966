/**
 * The text of an error, one rule for the whole engine: what a tool observation,
 * a blocked call, a run failure and a log line say about something that failed
 * — whatever was thrown or failed with (an `Error`, a tagged error, a string, a
 * plain object, anything).
 *
 * @since 0.1.0
 */
import * as Cause from "effect/Cause"
import * as Option from "effect/Option"
import * as Json from "./Json.js"
import { LlmError } from "./Llm.js"

/**
 * The message of any failure value: a string as is; an `Error` (or tagged error)
 * by its message, prefixed with its tag or name when that says more than
 * `Error`; an object by its string `message` (with its `_tag`), else its JSON;
 * anything else by `String(value)`. Always a string.
 *
 * @since 0.1.0
 * @category utils
 */
export const fromUnknown = (error: unknown): string => {
  if (typeof error === "string") return error
  if (error instanceof Error) {
    const tag = (error as { readonly _tag?: unknown })._tag
    const name = typeof tag === "string" ? tag : error.name
    const message = typeof error.message === "string" ? error.message : Json.stringify(error.message, "")
    if (message.length === 0) return name
    return name === "Error" ? message : `${name}: ${message}`
  }
  if (typeof error === "object" && error !== null) {
    const { _tag, message } = error as { readonly _tag?: unknown; readonly message?: unknown }
    if (typeof message === "string") return typeof _tag === "string" ? `${_tag}: ${message}` : message
    const json = Json.stringify(error, "")
    if (json !== "" && json !== "{}") return json
  }
  return String(error)
}

/**
 * The message of a failure value as it reads inside an observation: like
 * `fromUnknown`, but a tagged error's tag is left out (the model reads "it broke",
 * not "ToolError: it broke").
 *
 * @since 0.1.0
 * @category utils
 */
export const messageOf = (error: unknown): string => {
  if (typeof error === "object" && error !== null) {
    const message = (error as { readonly message?: unknown }).message
    if (typeof message === "string" && message.length > 0) return message
  }
  return fromUnknown(error)
}

/**
 * The message of a `Cause`: its first failure, else its first defect (prefixed
 * `defect: `), else `interrupted`.
 *
 * @since 0.1.0
 * @category utils
 */
export const fromCause = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) return fromUnknown(failure.value)
  const defect = Cause.dieOption(cause)
  if (Option.isSome(defect)) return `defect: ${fromUnknown(defect.value)}`
  return Cause.isInterruptedOnly(cause) ? "interrupted" : "unknown failure"
}

/**
 * How a run that failed reports it (`RunFailed`, its `invoke_agent` span): an
 * `LlmError` as `LLM error (<reason>): <message>` (retryable when the error
 * is), anything else as `Internal error: <message>` (`fromCause`, without its
 * `defect: ` prefix). `type` is the span's `error.type`: the LLM error's
 * reason, else `internal`.
 *
 * @since 0.1.0
 * @category utils
 */
export const runFailure = (cause: Cause.Cause<unknown>): {
  readonly message: string
  readonly retryable: boolean
  readonly type: string
  /** `output_invalid`: the typed answer did not match the output schema (`Output.OutputInvalid`). */
  readonly code?: string
} => {
  const error = Cause.squash(cause)
  // the typed answer's failures (`Output`), told by their tag: this low-level module does not import Output
  const tag = typeof error === "object" && error !== null ? (error as { readonly _tag?: unknown })._tag : undefined
  if (tag === "OutputInvalid" || tag === "OutputUnavailable") {
    const { message, retryable } = error as { readonly message: string; readonly retryable?: boolean }
    return tag === "OutputInvalid"
      ? { message, retryable: false, type: "output_invalid", code: "output_invalid" }
      : { message, retryable: retryable === true, type: "output_unavailable" }
  }
  if (error instanceof LlmError) {
    return { message: `LLM error (${error.reason}): ${error.message}`, retryable: error.retryable, type: error.reason }
  }
  return { message: `Internal error: ${fromCause(cause).replace(/^defect: /, "")}`, retryable: false, type: "internal" }
}
