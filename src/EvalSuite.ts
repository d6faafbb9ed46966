/**
 * `EvalSuite`: an eval suite (`Eval` cases, e.g. the file `npm run eval` reads)
 * as vitest tests through `@effect/vitest` — one `it.effect` per case, which
 * fails with every score and its reason when the case does not pass.
 *
 * ```ts
 * import * as vitest from "@effect/vitest"
 * import { EvalSuite } from "effect-react-engine"
 *
 * EvalSuite.describe(vitest, "support answers", "evals/cases.jsonl", { agent: myAgentLayer })
 * ```
 *
 * The test framework is passed in (`vitest`: `@effect/vitest`'s module, or any
 * object with its `describe` and `it.effect`): this module does not import
 * vitest, so the package does not load it for code that never tests.
 *
 * @since 0.1.0
 */
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { readFileSync } from "node:fs"
import * as Eval from "./Eval.js"
import type { LlmService } from "./Llm.js"
import type * as ReactAgent from "./ReactAgent.js"

/**
 * What `describe` needs of the test framework: `@effect/vitest`'s
 * `describe` and `it.effect` (pass the module: `import * as vitest from "@effect/vitest"`).
 *
 * @since 0.1.0
 * @category models
 */
export interface Vitest {
  readonly describe: (name: string, body: () => void) => unknown
  readonly it: {
    readonly effect: (
      name: string,
      self: () => Effect.Effect<Eval.CaseResult, EvalCaseFailed>,
      timeout?: number
    ) => unknown
  }
}

/**
 * How the suite's cases run and when one passes.
 *
 * @since 0.1.0
 * @category models
 */
export interface Options {
  /** The agent for `input` cases (cassette cases replay without it). */
  readonly agent: Layer.Layer<ReactAgent.ReactAgent, unknown>
  /** The model of `judge` scorers (without one they score 0). */
  readonly judge?: LlmService
  /**
   * When set, a case passes when its score (the mean of its scorers) is at
   * least this and its run did not fail; otherwise when every scorer passes.
   */
  readonly minScore?: number
  /** Per case, in milliseconds (default 60 000). */
  readonly timeout?: number
}

/**
 * A case that did not pass; `message` lists its scores with their reasons.
 *
 * @since 0.1.0
 * @category errors
 */
export class EvalCaseFailed extends Schema.TaggedError<EvalCaseFailed>()("EvalCaseFailed", {
  id: Schema.String,
  score: Schema.Number,
  message: Schema.String
}) {}

/**
 * A case's result as text: the verdict, the score (and the bar), then one line
 * per scorer (`✓`/`✗`, its score, its reason), the run's error and the answer.
 *
 * @since 0.1.0
 * @category utils
 */
export const explain = (result: Eval.CaseResult, minScore?: number): string =>
  [
    `case ${JSON.stringify(result.id)}: score ${result.score.toFixed(2)}${
      minScore !== undefined ? ` (min ${minScore})` : ""
    }, ${passes(result, minScore) ? "passed" : "FAILED"}`,
    ...result.scores.map((s) => `  ${s.passed ? "✓" : "✗"} ${s.scorer} ${s.score.toFixed(2)}: ${s.reason}`),
    ...(result.error !== null ? [`  run error: ${result.error}`] : []),
    `  answer: ${JSON.stringify(result.answer.length > 300 ? `${result.answer.slice(0, 300)}…` : result.answer)}`
  ].join("\n")

const passes = (result: Eval.CaseResult, minScore: number | undefined): boolean =>
  minScore === undefined ? result.passed : result.error === null && result.score >= minScore

/**
 * The assertion of a case's test: the result when it passes (see
 * `Options.minScore`), else `EvalCaseFailed` with `explain`'s text.
 *
 * @since 0.1.0
 * @category assertions
 */
export const check = (result: Eval.CaseResult, minScore?: number): Effect.Effect<Eval.CaseResult, EvalCaseFailed> =>
  passes(result, minScore)
    ? Effect.succeed(result)
    : Effect.fail(new EvalCaseFailed({ id: result.id, score: result.score, message: explain(result, minScore) }))

/**
 * Runs one case and checks it.
 *
 * @since 0.1.0
 * @category running
 */
export const runCase = (c: Eval.Case, options: Options): Effect.Effect<Eval.CaseResult, EvalCaseFailed> =>
  Effect.flatMap(Eval.runCase(c, options), (result) => check(result, options.minScore))

/**
 * The cases: given, or read from a cases file (`Eval.readCases`: cassettes by
 * path relative to it). A file that cannot be read or a malformed case throws
 * (at collection: the suite does not start), naming the file and line.
 *
 * @since 0.1.0
 * @category decoding
 */
export const load = (cases: ReadonlyArray<Eval.Case> | string): ReadonlyArray<Eval.Case> => {
  if (typeof cases !== "string") return cases
  // vitest collects a suite synchronously, so the file is read with node:fs here
  // (`Eval.readCases` reads through `FileSystem`, whose reads are asynchronous)
  const read = Effect.runSync(
    Effect.either(Eval.readCasesWith(cases, (file) =>
      Effect.try({
        try: () => readFileSync(file, "utf8"),
        catch: (e) => (e instanceof Error ? e.message : String(e))
      })))
  )
  if (Either.isLeft(read)) {
    throw new Error(read.left.line === 0 ? read.left.message : `${cases}:${read.left.line}: ${read.left.message}`)
  }
  return read.right
}

/**
 * Registers the suite: a `describe` block named `name` with one `it.effect`
 * per case, named by its id.
 *
 * @since 0.1.0
 * @category constructors
 */
export const describe = (
  vitest: Vitest,
  name: string,
  cases: ReadonlyArray<Eval.Case> | string,
  options: Options
): void => {
  const list = load(cases)
  vitest.describe(name, () => {
    for (const c of list) vitest.it.effect(c.id, () => runCase(c, options), options.timeout ?? 60_000)
  })
}
