/**
 * Guardrails: checks on what goes into a run (the query, every injected
 * message) and on what comes out of it (the answer). Each is an Effect giving
 * `pass` or a tripwire with a reason (docs/guardrails.md).
 *
 * - Input guardrails run concurrently with the run's first model call; the
 *   run shows nothing and runs no tool until they pass. When one trips, the
 *   model request in flight is aborted (its HTTP request cancelled: no more
 *   tokens are spent), and the run ends with `GuardrailTripped` (stage
 *   `input`), the refusal as its answer and `Done`. An injected message is
 *   checked when the loop takes it in.
 * - Output guardrails check the answer once it is written; when one trips,
 *   the streamed answer is retracted (`AnswerReset`) and replaced with the
 *   refusal.
 *
 * Built-ins: `pattern` (case-insensitive substrings or `/regex/flags`
 * strings), `length` (most characters), `classifier` (an LLM judges the text
 * against a rubric through `structuredCall`, on the fast model; its calls count
 * against the run's budget and in `usage.by_phase.guardrails`).
 *
 * @since 0.1.0
 */
import * as FileSystem from "@effect/platform/FileSystem"
import * as ConfigError from "effect/ConfigError"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as ErrorMessage from "./ErrorMessage.js"
import type { LlmService } from "./Llm.js"
import * as Message from "./Message.js"
import { structuredCallWith } from "./StructuredCall.js"
import * as Usage from "./Usage.js"

/**
 * What a guardrail decided; `usage`: the model calls it made (a classifier).
 *
 * @since 0.1.0
 * @category models
 */
export type Verdict =
  | { readonly _tag: "Pass"; readonly usage?: Usage.Usage }
  | { readonly _tag: "Tripped"; readonly reason: string; readonly usage?: Usage.Usage }

/**
 * @since 0.1.0
 * @category models
 */
export interface Guardrail {
  readonly name: string
  readonly check: (text: string) => Effect.Effect<Verdict>
}

/**
 * @since 0.1.0
 * @category models
 */
export type Stage = "input" | "output"

/**
 * A guardrail as configuration data (`REACT_GUARDRAILS_FILE` entries).
 *
 * @since 0.1.0
 * @category models
 */
export const GuardrailSpec = Schema.Union(
  Schema.Struct({ type: Schema.Literal("pattern"), name: Schema.String, patterns: Schema.Array(Schema.String) }),
  Schema.Struct({ type: Schema.Literal("length"), name: Schema.String, max: Schema.Int.pipe(Schema.positive()) }),
  Schema.Struct({ type: Schema.Literal("classifier"), name: Schema.String, rubric: Schema.String })
)
/**
 * @since 0.1.0
 * @category models
 */
export type GuardrailSpec = typeof GuardrailSpec.Type

/**
 * The guardrails file: `{"input": [...], "output": [...], "refusal"?: "..."}`.
 *
 * @since 0.1.0
 * @category models
 */
export const GuardrailsFile = Schema.Struct({
  input: Schema.optionalWith(Schema.Array(GuardrailSpec), { default: () => [] }),
  output: Schema.optionalWith(Schema.Array(GuardrailSpec), { default: () => [] }),
  refusal: Schema.optional(Schema.String)
})
/**
 * @since 0.1.0
 * @category models
 */
export type GuardrailsFile = typeof GuardrailsFile.Type

/**
 * The agent option `guardrails`: guardrails (or their specs, built on the
 * agent's tool-selection model, i.e. the fast one) per stage, and the refusal.
 *
 * @since 0.1.0
 * @category models
 */
export interface GuardrailOptions {
  readonly input?: ReadonlyArray<Guardrail | GuardrailSpec>
  readonly output?: ReadonlyArray<Guardrail | GuardrailSpec>
  readonly refusal?: string
}

/**
 * @since 0.1.0
 * @category constants
 */
export const DEFAULT_REFUSAL = "I can't help with that request."

const pass: Verdict = { _tag: "Pass" }

/** A `/…/flags` pattern's regular expression (throws a SyntaxError when it is not one); undefined for a substring. */
const regexOf = (p: string): RegExp | undefined => {
  const regex = /^\/(.+)\/([a-z]*)$/s.exec(p)
  return regex === null ? undefined : new RegExp(regex[1], regex[2])
}

/**
 * Why a pattern of a `pattern` guardrail cannot be used (a `/…/flags` string that is not a
 * valid regular expression), or undefined.
 *
 * @since 0.1.0
 * @category utils
 */
export const invalidPattern = (p: string): string | undefined => {
  try {
    regexOf(p)
    return undefined
  } catch (e) {
    return e instanceof Error ? e.message : String(e)
  }
}

/** The first entry of guardrails (a file's, or the agent option's) that cannot be built: where it is and why. */
const invalidEntry = (options: GuardrailOptions): string | undefined => {
  for (const stage of ["input", "output"] as const) {
    for (const [i, spec] of (options[stage] ?? []).entries()) {
      if (!("type" in spec) || spec.type !== "pattern") continue
      for (const [j, p] of spec.patterns.entries()) {
        const why = invalidPattern(p)
        if (why !== undefined) {
          return `${stage}[${i}] (${JSON.stringify(spec.name)}): patterns[${j}] ${JSON.stringify(p)}: ${why}`
        }
      }
    }
  }
  return undefined
}

/**
 * A pattern list: trips when the text contains one of `patterns`
 * (case-insensitive substrings; `/…/flags` strings are regular expressions).
 *
 * @since 0.1.0
 * @category constructors
 */
export const pattern = (name: string, patterns: ReadonlyArray<string>): Guardrail => {
  const tests = patterns.map((p): (text: string) => boolean => {
    const re = regexOf(p)
    if (re !== undefined) return (text) => re.test(text)
    const needle = p.toLowerCase()
    return (text) => text.toLowerCase().includes(needle)
  })
  return {
    name,
    check: (text) =>
      Effect.sync(() => {
        const i = tests.findIndex((t) => t(text))
        return i === -1 ? pass : { _tag: "Tripped", reason: `matched pattern ${JSON.stringify(patterns[i])}` }
      })
  }
}

/**
 * A length limit: trips when the text is longer than `max` characters.
 *
 * @since 0.1.0
 * @category constructors
 */
export const length = (name: string, max: number): Guardrail => ({
  name,
  check: (text) =>
    Effect.succeed(
      text.length <= max ? pass : { _tag: "Tripped", reason: `${text.length} characters, over the limit of ${max}` }
    )
})

const Judgement = Schema.Struct({
  violates: Schema.Boolean,
  reason: Schema.String
})

const CLASSIFIER_PROMPT = `You are a content classifier. Decide whether the TEXT violates the RUBRIC.
Answer with {"violates": true|false, "reason": "<one short sentence>"}.`

/**
 * An LLM classifier: `llm` (the fast model) judges the text against `rubric`
 * through `structuredCall`. A classifier that cannot answer (the model
 * failed, no usable reply) trips: a guardrail fails closed.
 *
 * @since 0.1.0
 * @category constructors
 */
export const classifier = (name: string, rubric: string, llm: LlmService): Guardrail => ({
  name,
  check: (text) =>
    structuredCallWith(llm, {
      messages: [Message.system(CLASSIFIER_PROMPT), Message.user(`RUBRIC:\n${rubric}\n\nTEXT:\n${text}`)],
      schema: Judgement,
      functionName: "classify",
      functionDescription: "Reports whether the text violates the rubric"
    }).pipe(
      Effect.map((r): Verdict =>
        r.value.violates
          ? { _tag: "Tripped", reason: r.value.reason, usage: r.usage }
          : { _tag: "Pass", usage: r.usage }
      ),
      Effect.catchAll((e) =>
        Effect.succeed<Verdict>({ _tag: "Tripped", reason: `the classifier could not decide: ${e.message}` })
      )
    )
})

const compiled = new WeakMap<GuardrailSpec, Guardrail>()

/**
 * A guardrail from its spec (`llm`: the classifier's model).
 *
 * @since 0.1.0
 * @category constructors
 */
export const fromSpec = (spec: GuardrailSpec | Guardrail, llm: LlmService): Guardrail => {
  if (!("type" in spec)) return spec
  switch (spec.type) {
    case "pattern": {
      // compiled once per spec (a run builds its guardrails from the agent's specs)
      const built = compiled.get(spec) ?? pattern(spec.name, spec.patterns)
      compiled.set(spec, built)
      return built
    }
    case "length":
      return length(spec.name, spec.max)
    case "classifier":
      return classifier(spec.name, spec.rubric, llm)
  }
}

/**
 * The first guardrail of `guardrails` that trips on `text` (all run
 * concurrently), with the usage of all of them. A guardrail that fails or
 * dies counts as tripped (fail closed).
 *
 * @since 0.1.0
 * @category utils
 */
export const firstTripped = (
  guardrails: ReadonlyArray<Guardrail>,
  text: string
): Effect.Effect<
  { readonly tripped?: { readonly name: string; readonly reason: string }; readonly usage: Usage.Usage }
> =>
  Effect.map(
    Effect.forEach(guardrails, (g) =>
      g.check(text).pipe(
        // a guardrail that fails or dies trips: guardrails fail closed
        Effect.catchAllCause((cause) =>
          Effect.succeed<Verdict>({ _tag: "Tripped", reason: `the guardrail failed: ${ErrorMessage.fromCause(cause)}` })
        ),
        Effect.map((v) => [g.name, v] as const)
      ), { concurrency: "unbounded" }),
    (verdicts) => {
      const usage = Usage.sum(verdicts.flatMap(([, v]) => (v.usage ? [v.usage] : [])))
      const hit = verdicts.find(([, v]) => v._tag === "Tripped")
      return hit === undefined || hit[1]._tag !== "Tripped"
        ? { usage }
        : { tripped: { name: hit[0], reason: hit[1].reason }, usage }
    }
  )

const decodeFile = Schema.decodeUnknownEither(Schema.parseJson(GuardrailsFile))

/**
 * Checks the agent option `guardrails`: every spec can be built (a `pattern` entry's
 * `/…/flags` strings are valid regular expressions), else a `ConfigError` naming the entry.
 *
 * @since 0.1.0
 * @category utils
 */
export const check = (options: GuardrailOptions): Effect.Effect<GuardrailOptions, ConfigError.ConfigError> => {
  const invalid = invalidEntry(options)
  return invalid === undefined
    ? Effect.succeed(options)
    : Effect.fail(ConfigError.InvalidData(["guardrails"], `guardrails: ${invalid}`))
}

/**
 * Reads `REACT_GUARDRAILS_FILE`'s JSON.
 *
 * @since 0.1.0
 * @category utils
 */
export const loadFile = (path: string): Effect.Effect<GuardrailsFile, ConfigError.ConfigError, FileSystem.FileSystem> =>
  FileSystem.FileSystem.pipe(
    Effect.flatMap((fs) => fs.readFileString(path)),
    Effect.mapError((e) =>
      ConfigError.InvalidData(["REACT_GUARDRAILS_FILE"], `REACT_GUARDRAILS_FILE: cannot read ${path}: ${e.message}`)
    ),
    Effect.flatMap((text) => {
      const decoded = decodeFile(text)
      // every entry is built now, at start-up: a pattern that is not a regular expression stops it, not every run
      const invalid = decoded._tag === "Right" ? invalidEntry(decoded.right) : decoded.left.message
      return invalid === undefined && decoded._tag === "Right"
        ? Effect.succeed(decoded.right)
        : Effect.fail(
          ConfigError.InvalidData(["REACT_GUARDRAILS_FILE"], `REACT_GUARDRAILS_FILE ${path} is invalid: ${invalid}`)
        )
    })
  )
