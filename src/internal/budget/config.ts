/**
 * A budget's configuration: checking the options, the price file, the
 * environment (`Budget.check`, `Budget.loadPrices`, `Budget.loadConfig`).
 *
 * @internal
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { BudgetOptions } from "../../Budget.js"
import { MIN_OUTPUT } from "./ledger.js"

/** A model's price in USD per million tokens (re-exported by Budget.ts). */
// finite: JSON's 1e999 parses to Infinity, which would price every call out of any budget
const Price = Schema.NonNegative.pipe(
  Schema.finite({ message: () => "Expected a finite price in USD per million tokens" })
)
export const ModelPrice = Schema.Struct({
  input: Price,
  cached_input: Schema.optional(Price),
  cache_write: Schema.optional(Price),
  output: Price
})
export type ModelPrice = typeof ModelPrice.Type

/** Prices by model name (re-exported by Budget.ts). */
export const PriceTable = Schema.Record({ key: Schema.String, value: ModelPrice })
export type PriceTable = typeof PriceTable.Type

/**
 * Checks a budget against the models it will meet: a money budget needs a
 * price for each (a `ConfigError` naming the model otherwise); limits must be
 * positive.
 *
 * @since 0.1.0
 * @category utils
 */
export const check = (
  options: BudgetOptions,
  models: ReadonlyArray<string>
): Effect.Effect<BudgetOptions, ConfigError.ConfigError> => {
  const invalid = (key: string, why: string) =>
    Effect.fail(ConfigError.InvalidData(["budget", key], `budget.${key} ${why}`))
  if (options.tokens !== undefined && !(Number.isInteger(options.tokens) && options.tokens > 0)) {
    return invalid("tokens", "must be a positive integer")
  }
  if (options.usd !== undefined && !(Number.isFinite(options.usd) && options.usd > 0)) {
    return invalid("usd", "must be a positive number")
  }
  if (options.policy !== undefined && options.policy !== "answer" && options.policy !== "ask") {
    return invalid("policy", `must be "answer" or "ask", got ${JSON.stringify(options.policy)}`)
  }
  if (
    options.reserveOutputTokens !== undefined &&
    !(Number.isInteger(options.reserveOutputTokens) && options.reserveOutputTokens >= MIN_OUTPUT)
  ) {
    return invalid("reserveOutputTokens", `must be an integer >= ${MIN_OUTPUT}`)
  }
  if (options.usd !== undefined) {
    const missing = models.find((m) => options.prices?.[m] === undefined)
    if (missing !== undefined) {
      return Effect.fail(
        ConfigError.InvalidData(
          ["budget", "prices"],
          `a money budget needs a price for model ${missing}: add it to MODEL_PRICES_FILE or budget.prices`
        )
      )
    }
  }
  return Effect.succeed(options)
}

/** "m.output: Expected a finite price…; …": each failing entry by its path (the JSON's own error when it is not JSON). */
const issuesOf = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => (issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
    .join("; ")

/**
 * Reads a price file: JSON `{ "<model>": { "input": …, "cached_input": …,
 * "cache_write": …, "output": … } }` in USD per million tokens.
 *
 * @since 0.1.0
 * @category utils
 */
export const loadPrices = (path: string): Effect.Effect<PriceTable, ConfigError.ConfigError, FileSystem.FileSystem> =>
  FileSystem.FileSystem.pipe(
    Effect.flatMap((fs) => fs.readFileString(path)),
    Effect.mapError((e) =>
      ConfigError.InvalidData(["MODEL_PRICES_FILE"], `MODEL_PRICES_FILE: cannot read ${path}: ${e.message}`)
    ),
    Effect.flatMap((text) => {
      // decoded here, not at module load: this module and Budget import each other
      const decoded = Schema.decodeUnknownEither(Schema.parseJson(PriceTable))(text)
      return decoded._tag === "Right"
        ? Effect.succeed(decoded.right)
        : Effect.fail(
          ConfigError.InvalidData(
            ["MODEL_PRICES_FILE"],
            `MODEL_PRICES_FILE ${path} is not a price table: ${issuesOf(decoded.left)}`
          )
        )
    })
  )

const positive = (name: string, integer: boolean) =>
  Config.option(
    (integer ? Config.integer(name) : Config.number(name)).pipe(
      Config.validate({
        message: `${name} must be a positive ${integer ? "integer" : "number"}`,
        validation: (n) => n > 0
      })
    )
  )

/**
 * The budget from the environment: `REACT_RUN_BUDGET_TOKENS`,
 * `REACT_RUN_BUDGET_USD`, `REACT_BUDGET_POLICY` (`answer` | `ask`),
 * `MODEL_PRICES_FILE`. None when nothing is set.
 *
 * @since 0.1.0
 * @category configuration
 */
export const loadConfig: Effect.Effect<BudgetOptions | undefined, ConfigError.ConfigError, FileSystem.FileSystem> =
  Effect.gen(function*() {
    const tokens = yield* positive("REACT_RUN_BUDGET_TOKENS", true)
    const usd = yield* positive("REACT_RUN_BUDGET_USD", false)
    const policy = yield* Config.option(Config.literal("answer", "ask")("REACT_BUDGET_POLICY"))
    const file = yield* Config.option(Config.string("MODEL_PRICES_FILE"))
    const path = Option.filter(Option.map(file, (f) => f.trim()), (f) => f !== "")
    const prices = Option.isSome(path) ? yield* loadPrices(path.value) : undefined
    if (Option.isNone(tokens) && Option.isNone(usd) && prices === undefined) return undefined
    return {
      ...(Option.isSome(tokens) ? { tokens: tokens.value } : {}),
      ...(Option.isSome(usd) ? { usd: usd.value } : {}),
      ...(Option.isSome(policy) ? { policy: policy.value } : {}),
      ...(prices !== undefined ? { prices } : {})
    }
  })
