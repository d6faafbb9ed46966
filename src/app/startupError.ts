/**
 * A start-up failure the user fixes in their configuration, as one plain line: the
 * messages of a `ConfigError` (each already names its variable, file or option),
 * without Effect's `(Invalid data at …: "…")` wrapper and the stack line that repeated it.
 */
import * as Cause from "effect/Cause"
import * as ConfigError from "effect/ConfigError"
import * as Option from "effect/Option"

const messagesOf = (error: ConfigError.ConfigError): Array<string> => {
  switch (error._op) {
    case "And":
    case "Or":
      return [...messagesOf(error.left), ...messagesOf(error.right)]
    case "InvalidData":
    case "MissingData":
    case "SourceUnavailable":
    case "Unsupported":
      return [error.message]
  }
}

/** The configuration error's messages on one line, or undefined when the cause is something else. */
export const configMessage = (cause: Cause.Cause<unknown>): string | undefined =>
  Option.getOrUndefined(Option.map(
    Option.filter(Cause.failureOption(cause), ConfigError.isConfigError),
    (error) => [...new Set(messagesOf(error))].join("; ")
  ))
