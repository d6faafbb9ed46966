/**
 * Options of the ReAct agent: defaults, the `REACT_*` environment
 * variables (`config`, read only in the agent's layer constructor; the files
 * they name through `FileSystem`) and validation (`resolve`). Options given to
 * `ReactAgent.layerConfig` win over the environment; an invalid value (given or
 * from the environment) is a `ConfigError` naming the option or variable.
 *
 * @since 0.1.0
 */
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Budget from "./Budget.js"
import * as Guardrail from "./Guardrail.js"
import * as Hooks from "./Hooks.js"

/**
 * Every knob of the loop. See docs/agent-loop.md for what each one does.
 *
 * @since 0.1.0
 * @category models
 */
export interface AgentOptions {
  /** Cap on loop LLM calls. `REACT_MAX_ITERATIONS`, default 50. */
  readonly maxIterations: number
  /** Native function calling when the model supports it; JSON mode otherwise. Default true. */
  readonly useNativeTools: boolean
  /** The one-time completion checklist. Default true. */
  readonly completionCheck: boolean
  /** Identical calls before the cycle warning. `REACT_CYCLE_DETECTION_THRESHOLD`, default 3. */
  readonly cycleDetectionThreshold: number
  /** Tool calls (JSON) / rounds (native) between self-reflection prompts. `REACT_SELF_REFLECTION_INTERVAL`, default 6 (0 = off). */
  readonly selfReflectionInterval: number
  /** Tool calls before the completion checklist applies. `REACT_COMPLETION_CHECK_MIN_TOOLS`, default 3. */
  readonly completionCheckMinTools: number
  /** Tool selection runs when the toolkit has more tools than this. `REACT_TOOL_SELECTION_THRESHOLD`, default 12. */
  readonly toolSelectionThreshold: number
  /** At most this many selected tools. `REACT_TOOL_SELECTION_MAX`, default 6. */
  readonly toolSelectionMax: number
  /** Per-run cap on the tokens of tool observations the model sees. `REACT_TOOL_RESULT_BUDGET`, default 40000 (0 = off). */
  readonly toolResultBudget: number
  /** Stop the loop once its LLM calls used this many tokens. `REACT_MAX_TURN_TOKENS`, default 0 (off). */
  readonly maxTurnTokens: number
  /** Tool results are cut to this many chars in the synthesis trace. `REACT_TOOL_OBS_TRUNCATION`, default 2000. */
  readonly toolObsTruncation: number
  /**
   * A typed answer (`RunInput.output`) that does not validate is asked again this
   * many times, with the validation message, before the run fails with
   * `output_invalid`. `REACT_OUTPUT_RETRIES`, default 1.
   */
  readonly outputRetries: number
  /**
   * A timeout for every call of a tool that declares none (a tool's own
   * `timeout` wins). `REACT_TOOL_TIMEOUT_MS`, default none: a tool without a
   * timeout of its own runs without a timer, bounded by the run's deadline
   * (`runTimeout`).
   */
  readonly toolTimeout?: Duration.DurationInput
  /**
   * The run's deadline: past it the run is interrupted — its model call, its
   * tools — and ends with `RunFailed` ("The run timed out after …") and `Done`.
   * Working time: its clock stops while the run waits for a person (an
   * approval, a budget extension; `AgentRun.waitingForPerson`). Per
   * execution: a durable run resumed after a restart has the whole deadline
   * again. `REACT_RUN_TIMEOUT_MS` (`0`: none), default 1 hour.
   */
  readonly runTimeout: Duration.DurationInput
  /** Extra instructions appended to the loop's system prompt. */
  readonly systemPrompt?: string
  /**
   * Tool-name globs (hook matcher rules: `*`, `?`) whose calls a person approves
   * before they run, besides tools made with `needsApproval`.
   * `REACT_APPROVAL_TOOLS` (comma list, e.g. `fx__write_*,filesystem__*`), default none.
   */
  readonly approvalTools: ReadonlyArray<string>
  /**
   * How long a call waits for a person before it is denied with reason `timed out`.
   * `REACT_APPROVAL_TIMEOUT_MS`, default none (it waits as long as it takes).
   */
  readonly approvalTimeout?: Duration.DurationInput
  /**
   * Who writes the answer the user sees. `always`: a second, streamed LLM call
   * (answer synthesis) rewrites the run's trace into the answer after the loop.
   * `auto`: the loop's own final reply is the answer, streamed as the model
   * writes it (native mode) — synthesis runs only when the loop ended without a
   * reply of the model's (iteration cap, turn token budget, an unparseable JSON
   * reply). `REACT_SYNTHESIS`, default `auto` (see docs/agent-loop.md for the
   * measurements behind the default).
   */
  readonly synthesis: SynthesisPolicy
  /**
   * Limits on what a run may spend on model calls, in tokens and/or USD, with
   * the price table and the exhaustion policy (see docs/budgets.md).
   * `REACT_RUN_BUDGET_TOKENS`, `REACT_RUN_BUDGET_USD`, `REACT_BUDGET_POLICY`,
   * `MODEL_PRICES_FILE`; default none.
   */
  readonly budget?: Budget.BudgetOptions
  /**
   * Input and output guardrails and the refusal (see docs/guardrails.md).
   * `REACT_GUARDRAILS_FILE`; default none.
   */
  readonly guardrails?: Guardrail.GuardrailOptions
}

/**
 * @since 0.1.0
 * @category models
 */
export type SynthesisPolicy = "always" | "auto"

/**
 * @since 0.1.0
 * @category constants
 */
export const SYNTHESIS_ENV = "REACT_SYNTHESIS"

/**
 * @since 0.1.0
 * @category constants
 */
export const defaults: AgentOptions = {
  maxIterations: 50,
  useNativeTools: true,
  completionCheck: true,
  cycleDetectionThreshold: 3,
  selfReflectionInterval: 6,
  completionCheckMinTools: 3,
  toolSelectionThreshold: 12,
  toolSelectionMax: 6,
  toolResultBudget: 40000,
  maxTurnTokens: 0,
  toolObsTruncation: 2000,
  outputRetries: 1,
  runTimeout: Duration.hours(1),
  approvalTools: [],
  synthesis: "auto"
}

/**
 * Answers longer than this skip the completion checklist.
 *
 * @since 0.1.0
 * @category constants
 */
export const CHECKLIST_MAX_ANSWER_CHARS = 800

/**
 * @since 0.1.0
 * @category constants
 */
export const GUARDRAILS_ENV = "REACT_GUARDRAILS_FILE"

type IntKey =
  | "maxIterations"
  | "cycleDetectionThreshold"
  | "selfReflectionInterval"
  | "completionCheckMinTools"
  | "toolSelectionThreshold"
  | "toolSelectionMax"
  | "toolResultBudget"
  | "maxTurnTokens"
  | "toolObsTruncation"
  | "outputRetries"

/**
 * The environment variable of each integer option, and its minimum.
 *
 * @since 0.1.0
 * @category constants
 */
export const envVariables: { readonly [K in IntKey]: { readonly name: string; readonly min: number } } = {
  maxIterations: { name: "REACT_MAX_ITERATIONS", min: 1 },
  cycleDetectionThreshold: { name: "REACT_CYCLE_DETECTION_THRESHOLD", min: 1 },
  selfReflectionInterval: { name: "REACT_SELF_REFLECTION_INTERVAL", min: 0 },
  completionCheckMinTools: { name: "REACT_COMPLETION_CHECK_MIN_TOOLS", min: 0 },
  toolSelectionThreshold: { name: "REACT_TOOL_SELECTION_THRESHOLD", min: 0 },
  toolSelectionMax: { name: "REACT_TOOL_SELECTION_MAX", min: 1 },
  toolResultBudget: { name: "REACT_TOOL_RESULT_BUDGET", min: 0 },
  maxTurnTokens: { name: "REACT_MAX_TURN_TOKENS", min: 0 },
  toolObsTruncation: { name: "REACT_TOOL_OBS_TRUNCATION", min: 1 },
  outputRetries: { name: "REACT_OUTPUT_RETRIES", min: 0 }
}

/**
 * @since 0.1.0
 * @category constants
 */
export const TOOL_TIMEOUT_ENV = "REACT_TOOL_TIMEOUT_MS"

/**
 * @since 0.1.0
 * @category constants
 */
export const RUN_TIMEOUT_ENV = "REACT_RUN_TIMEOUT_MS"

/**
 * @since 0.1.0
 * @category constants
 */
export const APPROVAL_TOOLS_ENV = "REACT_APPROVAL_TOOLS"

/**
 * @since 0.1.0
 * @category constants
 */
export const APPROVAL_TIMEOUT_ENV = "REACT_APPROVAL_TIMEOUT_MS"

/** The globs of a comma list (blank entries dropped). */
const globList = (text: string): ReadonlyArray<string> => text.split(",").map((g) => g.trim()).filter((g) => g !== "")

/** The problem with a list of tool-name globs, if any. */
const globsProblem = (globs: unknown): string | undefined => {
  if (!Array.isArray(globs)) return "must be a list of tool-name globs"
  if (globs.length === 0) return undefined
  try {
    Hooks.compile(globs as ReadonlyArray<string>)
  } catch (e) {
    return `must be a list of tool-name globs: ${(e as Error).message}`
  }
  return undefined
}

const checkGlobs = (key: string, globs: unknown): Effect.Effect<ReadonlyArray<string>, ConfigError.ConfigError> => {
  const problem = globsProblem(globs)
  return problem === undefined
    ? Effect.succeed([...(globs as ReadonlyArray<string>)])
    : Effect.fail(ConfigError.InvalidData([key], `${key} ${problem}`))
}

const positiveDuration = (
  key: string,
  value: Duration.DurationInput
): Effect.Effect<Duration.Duration, ConfigError.ConfigError> => {
  const d = Duration.decodeUnknown(value)
  return Option.isNone(d) || Duration.toMillis(d.value) <= 0
    ? Effect.fail(ConfigError.InvalidData([key], `option ${key} must be a positive duration`))
    : Effect.succeed(d.value)
}

const isPolicy = (value: unknown): value is SynthesisPolicy => value === "always" || value === "auto"

const checkPolicy = (key: string, value: unknown): Effect.Effect<SynthesisPolicy, ConfigError.ConfigError> =>
  isPolicy(value)
    ? Effect.succeed(value)
    : Effect.fail(ConfigError.InvalidData([key], `${key} must be "always" or "auto", got ${JSON.stringify(value)}`))

const intFromEnv = (name: string, min: number): Config.Config<Option.Option<number>> =>
  Config.option(
    Config.integer(name).pipe(
      Config.validate({ message: `${name} must be an integer >= ${min}`, validation: (n) => n >= min })
    )
  )

const checkInt = (key: string, value: number, min: number): Effect.Effect<number, ConfigError.ConfigError> =>
  Number.isInteger(value) && value >= min
    ? Effect.succeed(value)
    : Effect.fail(ConfigError.InvalidData([key], `option ${key} must be an integer >= ${min}, got ${value}`))

const ints = Object.fromEntries(
  (Object.keys(envVariables) as Array<IntKey>).map((
    key
  ) => [key, intFromEnv(envVariables[key].name, envVariables[key].min)])
) as { readonly [K in IntKey]: Config.Config<Option.Option<number>> }

/**
 * The options the `REACT_*` variables set (`REACT_MAX_ITERATIONS`,
 * `REACT_TOOL_TIMEOUT_MS`, `REACT_RUN_TIMEOUT_MS`, `REACT_APPROVAL_TOOLS`, `REACT_APPROVAL_TIMEOUT_MS`,
 * `REACT_SYNTHESIS`, … see docs/configuration.md), as a `Config`: an unset
 * variable sets nothing; an invalid one is a `ConfigError` naming it. The
 * options read from files (`MODEL_PRICES_FILE`, `REACT_GUARDRAILS_FILE`) are
 * `load`'s: a `Config` reads no file.
 *
 * @since 0.1.0
 * @category configuration
 */
export const config: Config.Config<Partial<AgentOptions>> = Config.all({
  ...ints,
  toolTimeout: intFromEnv(TOOL_TIMEOUT_ENV, 1),
  runTimeout: intFromEnv(RUN_TIMEOUT_ENV, 0),
  approvalTimeout: intFromEnv(APPROVAL_TIMEOUT_ENV, 1),
  approvalTools: Config.option(
    Config.string(APPROVAL_TOOLS_ENV).pipe(
      Config.map(globList),
      Config.mapOrFail((globs) => {
        const problem = globsProblem(globs)
        return problem === undefined
          ? Either.right(globs)
          : Either.left(ConfigError.InvalidData([APPROVAL_TOOLS_ENV], `${APPROVAL_TOOLS_ENV} ${problem}`))
      })
    )
  ),
  synthesis: Config.option(
    Config.string(SYNTHESIS_ENV).pipe(
      Config.map((value) => value.trim()),
      Config.mapOrFail((value) =>
        isPolicy(value)
          ? Either.right(value)
          : Either.left(
            ConfigError.InvalidData(
              [SYNTHESIS_ENV],
              `${SYNTHESIS_ENV} must be "always" or "auto", got ${JSON.stringify(value)}`
            )
          )
      )
    )
  )
}).pipe(Config.map(({ approvalTimeout, runTimeout, toolTimeout, ...rest }) => {
  const out: Record<string, unknown> = {}
  for (const [key, value] of Object.entries(rest) as Array<[string, Option.Option<unknown>]>) {
    if (Option.isSome(value)) out[key] = value.value
  }
  if (Option.isSome(toolTimeout)) out.toolTimeout = Duration.millis(toolTimeout.value)
  if (Option.isSome(runTimeout)) {
    out.runTimeout = runTimeout.value === 0
      ? Duration.infinity
      : Duration.millis(runTimeout.value)
  }
  if (Option.isSome(approvalTimeout)) out.approvalTimeout = Duration.millis(approvalTimeout.value)
  return out as Partial<AgentOptions>
}))

/**
 * Resolves the options from explicit values and the defaults (the environment
 * is not read). Fails with a `ConfigError` naming the option when a value is
 * invalid.
 *
 * @since 0.1.0
 * @category constructors
 */
export const resolve = (explicit: Partial<AgentOptions> = {}): Effect.Effect<AgentOptions, ConfigError.ConfigError> =>
  Effect.gen(function*() {
    const out: { -readonly [K in keyof AgentOptions]: AgentOptions[K] } = { ...defaults }
    for (const key of Object.keys(envVariables) as Array<IntKey>) {
      const given = explicit[key]
      if (given !== undefined) out[key] = yield* checkInt(key, given, envVariables[key].min)
    }
    if (explicit.toolTimeout !== undefined) {
      out.toolTimeout = yield* positiveDuration("toolTimeout", explicit.toolTimeout)
    }
    if (explicit.runTimeout !== undefined) out.runTimeout = yield* positiveDuration("runTimeout", explicit.runTimeout)
    if (explicit.approvalTools !== undefined) {
      out.approvalTools = yield* checkGlobs("approvalTools", explicit.approvalTools)
    }
    if (explicit.approvalTimeout !== undefined) {
      out.approvalTimeout = yield* positiveDuration("approvalTimeout", explicit.approvalTimeout)
    }
    if (explicit.synthesis !== undefined) out.synthesis = yield* checkPolicy("synthesis", explicit.synthesis)
    if (explicit.budget !== undefined) out.budget = yield* Budget.check(explicit.budget, [])
    if (explicit.guardrails !== undefined) out.guardrails = yield* Guardrail.check(explicit.guardrails)
    if (explicit.useNativeTools !== undefined) out.useNativeTools = explicit.useNativeTools
    if (explicit.completionCheck !== undefined) out.completionCheck = explicit.completionCheck
    if (explicit.systemPrompt !== undefined) out.systemPrompt = explicit.systemPrompt
    return out
  })

/**
 * Resolves the options: explicit values, else the environment (`config`, through
 * the current `ConfigProvider`; the files its variables name — `MODEL_PRICES_FILE`,
 * `REACT_GUARDRAILS_FILE` — through the `FileSystem` in context, read only for
 * options not given), else the defaults. Fails with a `ConfigError` naming the
 * option or variable when a value is invalid.
 *
 * @since 0.1.0
 * @category constructors
 */
export const load = (
  explicit: Partial<AgentOptions> = {}
): Effect.Effect<AgentOptions, ConfigError.ConfigError, FileSystem.FileSystem> =>
  Effect.gen(function*() {
    const fromEnv: { -readonly [K in keyof AgentOptions]?: AgentOptions[K] } = { ...(yield* config) }
    if (explicit.budget === undefined) {
      const budget = yield* Budget.loadConfig
      if (budget !== undefined) fromEnv.budget = budget
    }
    if (explicit.guardrails === undefined) {
      const file = yield* Config.option(Config.string(GUARDRAILS_ENV))
      if (Option.isSome(file) && file.value.trim() !== "") {
        fromEnv.guardrails = yield* Guardrail.loadFile(file.value.trim())
      }
    }
    return yield* resolve({ ...fromEnv, ...definedOf(explicit) })
  })

/** The options that are set (an explicit `undefined` does not hide the environment's value). */
const definedOf = (options: Partial<AgentOptions>): Partial<AgentOptions> =>
  Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<AgentOptions>
