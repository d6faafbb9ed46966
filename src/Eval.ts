/**
 * Evals: score an agent on a set of cases. A case is an input (a query, or a
 * cassette to replay) and scorers: `exact` / `contains` / `regex` on the
 * answer, `json_schema` on a structured answer, `tool_calls` (name, argument
 * pattern, count), `limits` (tokens, cost, latency) and an LLM `judge` with a
 * rubric (on the fast model, `structuredCall`). `run` runs cases with bounded
 * concurrency and reports a score per case (the mean of its scorers) and
 * whether it passed (every scorer passed).
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type * as Layer from "effect/Layer"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { dirname, resolve } from "node:path"
import * as Cassette from "./Cassette.js"
import * as scorers from "./internal/eval/scorers.js"
import type { LlmService } from "./Llm.js"
import * as ReactAgent from "./ReactAgent.js"
import * as Replay from "./Replay.js"
import type { RunResult } from "./RunEvent.js"

const Json = Schema.Unknown

/**
 * One scorer of a case.
 *
 * @since 0.1.0
 * @category models
 */
export const Scorer = Schema.Union(
  Schema.Struct({ type: Schema.Literal("exact"), value: Schema.String }),
  Schema.Struct({
    type: Schema.Literal("contains"),
    value: Schema.String,
    ignore_case: Schema.optional(Schema.Boolean)
  }),
  Schema.Struct({ type: Schema.Literal("regex"), pattern: Schema.String, flags: Schema.optional(Schema.String) }),
  Schema.Struct({ type: Schema.Literal("json_schema"), schema: Schema.Record({ key: Schema.String, value: Json }) }),
  Schema.Struct({
    type: Schema.Literal("tool_calls"),
    name: Schema.String,
    /** A regular expression the call's JSON arguments must match. */
    args: Schema.optional(Schema.String),
    /** How many matching calls: exactly (a number) or at least/at most. */
    count: Schema.optional(
      Schema.Union(
        Schema.Number,
        Schema.Struct({ min: Schema.optional(Schema.Number), max: Schema.optional(Schema.Number) })
      )
    )
  }),
  Schema.Struct({
    type: Schema.Literal("limits"),
    max_tokens: Schema.optional(Schema.Number),
    max_cost_usd: Schema.optional(Schema.Number),
    max_latency_ms: Schema.optional(Schema.Number)
  }),
  Schema.Struct({ type: Schema.Literal("judge"), rubric: Schema.String, pass_score: Schema.optional(Schema.Number) })
)
/**
 * @since 0.1.0
 * @category models
 */
export type Scorer = typeof Scorer.Type

/**
 * One case: `input` (a query) or `cassette` (a path, resolved by the runner,
 * or the cassette itself), and its scorers.
 *
 * @since 0.1.0
 * @category models
 */
export const Case = Schema.Struct({
  id: Schema.String,
  input: Schema.optional(Schema.String),
  cassette: Schema.optional(Json),
  scorers: Schema.Array(Scorer)
})
/**
 * @since 0.1.0
 * @category models
 */
export type Case = typeof Case.Type

/**
 * A case that is not well formed (line `line` of its file).
 *
 * @since 0.1.0
 * @category errors
 */
export class EvalCaseError extends Schema.TaggedError<EvalCaseError>()("EvalCaseError", {
  line: Schema.Number,
  message: Schema.String
}) {}

/**
 * Parses a JSONL file's text: one case per non-empty line.
 *
 * @since 0.1.0
 * @category decoding
 */
export const parseCases = (text: string): Either.Either<ReadonlyArray<Case>, EvalCaseError> => {
  const cases: Array<Case> = []
  const lines = text.split("\n")
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim()
    if (line === "" || line.startsWith("//")) continue
    let value: unknown
    try {
      value = JSON.parse(line)
    } catch (e) {
      return Either.left(new EvalCaseError({ line: i + 1, message: `not JSON: ${(e as Error).message}` }))
    }
    const decoded = Schema.decodeUnknownEither(Case)(value, { errors: "all" })
    if (Either.isLeft(decoded)) {
      return Either.left(
        new EvalCaseError({ line: i + 1, message: ParseResult.TreeFormatter.formatErrorSync(decoded.left) })
      )
    }
    if (decoded.right.input === undefined && decoded.right.cassette === undefined) {
      return Either.left(
        new EvalCaseError({ line: i + 1, message: `case "${decoded.right.id}" has neither "input" nor "cassette"` })
      )
    }
    cases.push(decoded.right)
  }
  return Either.right(cases)
}

/**
 * Reads a cases file (JSONL, `parseCases`) and the cassettes its cases name by
 * path, relative to the file, through `FileSystem`. A file that cannot be read
 * fails with line 0; a case whose cassette cannot be read, with the case's line.
 *
 * @since 0.1.0
 * @category decoding
 */
export const readCases = (path: string): Effect.Effect<ReadonlyArray<Case>, EvalCaseError, FileSystem.FileSystem> =>
  Effect.flatMap(
    FileSystem.FileSystem,
    (fs) => readCasesWith(path, (file) => Effect.mapError(fs.readFileString(file), (e) => e.message))
  )

/**
 * `readCases` with the reader given: `read` yields a file's text or the reason
 * it cannot be read (`EvalSuite` reads synchronously, at test collection).
 *
 * @since 0.1.0
 * @category decoding
 */
export const readCasesWith = <R>(
  path: string,
  read: (file: string) => Effect.Effect<string, string, R>
): Effect.Effect<ReadonlyArray<Case>, EvalCaseError, R> =>
  Effect.gen(function*() {
    const text = yield* Effect.mapError(read(path), (reason) =>
      new EvalCaseError({ line: 0, message: `cannot read ${path}: ${reason}` }))
    const cases = yield* parseCases(text)
    return yield* Effect.forEach(cases, (c, i) =>
      typeof c.cassette !== "string" ? Effect.succeed(c) : read(resolve(dirname(path), c.cassette)).pipe(
        Effect.flatMap((json) =>
          Effect.try({
            try: () =>
              JSON.parse(json) as unknown,
            catch: (e) =>
              `not JSON: ${(e as Error).message}`
          })
        ),
        Effect.map((cassette): Case => ({ ...c, cassette })),
        Effect.mapError((message) =>
          new EvalCaseError({ line: lineOf(text, i), message: `cassette ${c.cassette}: ${message}` })
        )
      ))
  })

/** The 1-based line of the `index`th case of a cases file. */
const lineOf = (text: string, index: number): number => {
  const lines = text.split("\n")
  let seen = -1
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim()
    if (line !== "" && !line.startsWith("//") && ++seen === index) return i + 1
  }
  return 0
}

/**
 * One scorer's verdict.
 *
 * @since 0.1.0
 * @category models
 */
export interface Score {
  readonly scorer: string
  readonly score: number
  readonly passed: boolean
  readonly reason: string
}

/**
 * One tool call of a run, as the report shows it.
 *
 * @since 0.1.0
 * @category models
 */
export interface TraceStep {
  readonly tool: string
  readonly args: unknown
  readonly observation: string
  readonly error: string | null
}

/**
 * A case's result.
 *
 * @since 0.1.0
 * @category models
 */
export interface CaseResult {
  readonly id: string
  readonly score: number
  readonly passed: boolean
  readonly answer: string
  readonly scores: ReadonlyArray<Score>
  readonly trace: ReadonlyArray<TraceStep>
  readonly tokens: number
  readonly cost_usd: number | null
  readonly latency_ms: number
  readonly error: string | null
}

/**
 * Scores one run.
 *
 * @since 0.1.0
 * @category scoring
 */
export const score: (
  scorer: Scorer,
  run: { readonly question: string; readonly result: RunResult; readonly latencyMs: number },
  judgeLlm?: LlmService
) => Effect.Effect<Score> = scorers.score

/**
 * How cases run: the agent for `input` cases (a layer, built once per case),
 * a judge model, how many cases at once, and a callback after each case.
 *
 * @since 0.1.0
 * @category models
 */
export interface RunOptions {
  readonly agent: Layer.Layer<ReactAgent.ReactAgent, unknown>
  readonly judge?: LlmService
  readonly concurrency?: number
  readonly onResult?: (result: CaseResult, done: number, total: number) => Effect.Effect<void>
}

const queryText = (query: unknown): string => (typeof query === "string" ? query : JSON.stringify(query))

/**
 * Runs one case: its input on the agent, or its cassette replayed (leniently:
 * the case scores the answer, a divergence is reported as its error).
 *
 * @since 0.1.0
 * @category running
 */
export const runCase = (c: Case, options: Pick<RunOptions, "agent" | "judge">): Effect.Effect<CaseResult> =>
  Effect.gen(function*() {
    const started = performance.now()
    let question = c.input ?? ""
    let error: string | null = null
    let result: RunResult
    if (c.cassette !== undefined) {
      const cassette = Cassette.decode(c.cassette)
      if (Either.isLeft(cassette)) return failed(c, cassette.left.message)
      question = queryText(cassette.right.input.query)
      const replayed = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) => Replay.run(agent)).pipe(
        Effect.provide(Replay.layerAgent(cassette.right, { lenient: true })),
        Effect.either
      )
      if (Either.isLeft(replayed)) {
        return failed(
          c,
          replayed.left instanceof Replay.ReplayDivergence ? replayed.left.message : String(replayed.left)
        )
      }
      result = replayed.right.result
    } else {
      const ran = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) => agent.runCollect({ query: question })).pipe(
        Effect.provide(options.agent),
        Effect.either
      )
      if (Either.isLeft(ran)) return failed(c, `the agent could not be built: ${String(ran.left)}`)
      result = ran.right
    }
    if (result.error !== undefined) error = result.error.message
    const latencyMs = performance.now() - started
    const scores = yield* Effect.forEach(c.scorers, (s) => score(s, { question, result, latencyMs }, options.judge))
    const mean = scores.length === 0
      ? (error === null ? 1 : 0)
      : scores.reduce((a, s) => a + s.score, 0) / scores.length
    return {
      id: c.id,
      score: Math.round(mean * 1000) / 1000,
      passed: error === null && scores.every((s) => s.passed),
      answer: result.answer,
      scores,
      trace: result.steps.map((s) => ({
        tool: s.tool_name,
        args: s.tool_args,
        observation: scorers.truncate(s.observation, 2000),
        error: s.error
      })),
      tokens: result.usage.total_tokens,
      cost_usd: (result.usage as { cost_usd?: number }).cost_usd ?? null,
      latency_ms: Math.round(latencyMs),
      error
    }
  })

const failed = (c: Case, message: string): CaseResult => ({
  id: c.id,
  score: 0,
  passed: false,
  answer: "",
  scores: [],
  trace: [],
  tokens: 0,
  cost_usd: null,
  latency_ms: 0,
  error: message
})

/**
 * A suite's report: the summary and every case's result.
 *
 * @since 0.1.0
 * @category models
 */
export interface Report {
  readonly summary: {
    readonly cases: number
    readonly passed: number
    readonly failed: number
    readonly score: number
    readonly tokens: number
    readonly cost_usd: number | null
    readonly latency_ms: number
  }
  readonly cases: ReadonlyArray<CaseResult>
}

/**
 * Runs the cases, at most `concurrency` (default 4) at once; results in case order.
 *
 * @since 0.1.0
 * @category running
 */
export const run = (cases: ReadonlyArray<Case>, options: RunOptions): Effect.Effect<Report> =>
  Effect.gen(function*() {
    let done = 0
    const results = yield* Effect.forEach(cases, (c) =>
      Effect.tap(runCase(c, options), (r) =>
        Effect.suspend(() => {
          done++
          return options.onResult ? options.onResult(r, done, cases.length) : Effect.void
        })), { concurrency: options.concurrency ?? 4 })
    return summarize(results)
  })

/**
 * The report of these results.
 *
 * @since 0.1.0
 * @category utils
 */
export const summarize = (results: ReadonlyArray<CaseResult>): Report => {
  const costs = results.map((r) => r.cost_usd).filter((c): c is number => c !== null)
  return {
    summary: {
      cases: results.length,
      passed: results.filter((r) => r.passed).length,
      failed: results.filter((r) => !r.passed).length,
      score: results.length === 0
        ? 0
        : Math.round((results.reduce((a, r) => a + r.score, 0) / results.length) * 1000) / 1000,
      tokens: results.reduce((a, r) => a + r.tokens, 0),
      cost_usd: costs.length === 0 ? null : costs.reduce((a, c) => a + c, 0),
      latency_ms: results.reduce((a, r) => a + r.latency_ms, 0)
    },
    cases: results
  }
}
