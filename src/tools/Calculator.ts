/**
 * The `calculator` built-in tool: a safe arithmetic evaluator (a real parser, no
 * `eval`). Operators `+ - * / % ^` (`^` and `**` are right-associative powers),
 * unary minus, parentheses, decimals and scientific notation, the functions
 * `sqrt abs round floor ceil min max log ln exp sin cos tan` and the constants
 * `pi`, `e` (and `tau`).
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import * as internal from "../internal/calculator/parser.js"
import type { Tool } from "../Tool.js"
import * as ToolModule from "../Tool.js"
import { ToolError } from "../Tool.js"

/**
 * Longest accepted expression, in characters.
 *
 * @since 0.1.0
 * @category constants
 */
export const MAX_EXPRESSION_LENGTH: number = internal.MAX_LENGTH

/**
 * Evaluates an expression to a number, or a message explaining why it cannot
 * (syntax error with its 1-based position, division by zero, domain error,
 * overflow, too long). Pure; never throws.
 *
 * @since 0.1.0
 * @category utils
 */
export const evaluate = (expression: string): Either.Either<number, string> => {
  try {
    return Either.right(internal.evaluate(expression))
  } catch (e) {
    return Either.left(e instanceof internal.CalcFailure ? e.message : `Could not evaluate: ${String(e)}`)
  }
}

/**
 * Formats a result for display, hiding floating-point noise (`0.1+0.2` → `0.3`).
 *
 * @since 0.1.0
 * @category utils
 */
export const formatNumber: (value: number) => string = internal.format

/**
 * @since 0.1.0
 * @category models
 */
export const Parameters = Schema.Struct({
  expression: Schema.String.annotations({
    description: "The arithmetic expression, e.g. \"(2 + 3) * 4\", \"sqrt(16) + 2^10\", \"round(pi, 4)\""
  })
})

/**
 * The tool. Its observation is `<expression> = <result>`; any failure is a
 * `ToolError` the model reads as an error observation.
 *
 * @since 0.1.0
 * @category tools
 */
export const tool: Tool = ToolModule.make({
  name: "calculator",
  description: "Evaluate an arithmetic expression exactly (use it instead of mental arithmetic). " +
    "Supports + - * / % ^, parentheses, decimals, scientific notation, " +
    "sqrt abs round floor ceil min max log (base 10, or log(x, base)) ln exp sin cos tan (radians), pi and e.",
  parameters: Parameters,
  readOnly: true,
  handler: ({ expression }) =>
    Either.match(evaluate(expression), {
      onLeft: (message) => Effect.fail(new ToolError({ message })),
      onRight: (value) => Effect.succeed(`${expression.trim()} = ${formatNumber(value)}`)
    })
})
