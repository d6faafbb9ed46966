/**
 * Options of the ReAct agent (SPEC §3.5): defaults, the `REACT_*` environment
 * variables (read through `Config`, only in the agent's layer constructor) and
 * validation. Explicit options passed to `ReactAgent.layer(options)` win over the
 * environment; an invalid value (explicit or from the environment) is a
 * `ConfigError` naming the option or variable.
 *
 * @since 0.1.0
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"

/**
 * Every knob of the loop. See docs/agent-loop.md for what each one does.
 *
 * @since 0.1.0 @category models
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
  /** Default tool timeout (a tool's own `timeout` wins). `REACT_TOOL_TIMEOUT_MS`, default 60 s. */
  readonly toolTimeout: Duration.DurationInput
  /** Extra instructions appended to the loop's system prompt. */
  readonly systemPrompt?: string
}

/** @since 0.1.0 @category constants */
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
  toolTimeout: Duration.seconds(60)
}

/** Answers longer than this skip the completion checklist. @since 0.1.0 @category constants */
export const CHECKLIST_MAX_ANSWER_CHARS = 800

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

/** The environment variable of each integer option, and its minimum. @since 0.1.0 @category constants */
export const envVariables: { readonly [K in IntKey]: { readonly name: string; readonly min: number } } = {
  maxIterations: { name: "REACT_MAX_ITERATIONS", min: 1 },
  cycleDetectionThreshold: { name: "REACT_CYCLE_DETECTION_THRESHOLD", min: 1 },
  selfReflectionInterval: { name: "REACT_SELF_REFLECTION_INTERVAL", min: 0 },
  completionCheckMinTools: { name: "REACT_COMPLETION_CHECK_MIN_TOOLS", min: 0 },
  toolSelectionThreshold: { name: "REACT_TOOL_SELECTION_THRESHOLD", min: 0 },
  toolSelectionMax: { name: "REACT_TOOL_SELECTION_MAX", min: 1 },
  toolResultBudget: { name: "REACT_TOOL_RESULT_BUDGET", min: 0 },
  maxTurnTokens: { name: "REACT_MAX_TURN_TOKENS", min: 0 },
  toolObsTruncation: { name: "REACT_TOOL_OBS_TRUNCATION", min: 1 }
}

/** @since 0.1.0 @category constants */
export const TOOL_TIMEOUT_ENV = "REACT_TOOL_TIMEOUT_MS"

const intFromEnv = (name: string, min: number): Config.Config<Option.Option<number>> =>
  Config.option(
    Config.integer(name).pipe(Config.validate({ message: `${name} must be an integer >= ${min}`, validation: (n) => n >= min }))
  )

const checkInt = (key: string, value: number, min: number): Effect.Effect<number, ConfigError.ConfigError> =>
  Number.isInteger(value) && value >= min
    ? Effect.succeed(value)
    : Effect.fail(ConfigError.InvalidData([key], `option ${key} must be an integer >= ${min}, got ${value}`))

const fromEnvironment = (explicit: Partial<AgentOptions>, env: boolean): Effect.Effect<AgentOptions, ConfigError.ConfigError> =>
  Effect.gen(function*() {
    const out: { -readonly [K in keyof AgentOptions]: AgentOptions[K] } = { ...defaults }
    for (const key of Object.keys(envVariables) as Array<IntKey>) {
      const { min, name } = envVariables[key]
      const given = explicit[key]
      if (given !== undefined) {
        out[key] = yield* checkInt(key, given, min)
      } else if (env) {
        const value = yield* intFromEnv(name, min)
        if (Option.isSome(value)) out[key] = value.value
      }
    }
    if (explicit.toolTimeout !== undefined) {
      const d = Duration.decodeUnknown(explicit.toolTimeout)
      if (Option.isNone(d) || Duration.toMillis(d.value) <= 0) {
        return yield* Effect.fail(ConfigError.InvalidData(["toolTimeout"], "option toolTimeout must be a positive duration"))
      }
      out.toolTimeout = d.value
    } else if (env) {
      const value = yield* intFromEnv(TOOL_TIMEOUT_ENV, 1)
      if (Option.isSome(value)) out.toolTimeout = Duration.millis(value.value)
    }
    if (explicit.useNativeTools !== undefined) out.useNativeTools = explicit.useNativeTools
    if (explicit.completionCheck !== undefined) out.completionCheck = explicit.completionCheck
    if (explicit.systemPrompt !== undefined) out.systemPrompt = explicit.systemPrompt
    return out
  })

/**
 * Resolves the options from explicit values and the defaults (the environment
 * is not read). Fails with a `ConfigError` naming the option when a value is
 * invalid.
 *
 * @since 0.1.0
 * @category constructors
 */
export const resolve = (explicit: Partial<AgentOptions> = {}): Effect.Effect<AgentOptions, ConfigError.ConfigError> =>
  fromEnvironment(explicit, false)

/**
 * Resolves the options: explicit values, else the environment (through the
 * current `ConfigProvider`), else the defaults. Fails with a `ConfigError`
 * naming the option or variable when a value is invalid.
 *
 * @since 0.1.0
 * @category constructors
 */
export const load = (explicit: Partial<AgentOptions> = {}): Effect.Effect<AgentOptions, ConfigError.ConfigError> =>
  fromEnvironment(explicit, true)
