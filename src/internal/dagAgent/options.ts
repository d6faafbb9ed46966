/**
 * DAG mode's knobs (re-exported by DagAgent.ts): the options, their defaults,
 * the environment variables that set them, and their check into the settings a
 * run uses.
 *
 * @internal
 */
import * as Config from "effect/Config"
import * as ConfigError from "effect/ConfigError"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { AgentOptions } from "../../AgentConfig.js"
import type { DagSettings } from "./run.js"

/**
 * The knobs of DAG mode. See docs/dag-mode.md.
 *
 * @since 0.1.0
 * @category models
 */
export interface DagOptions {
  /** Steps running at once. `DAG_MAX_CONCURRENCY`, default 5. */
  readonly maxConcurrency: number
  /** A step running longer is cancelled and fails. `DAG_STEP_TIMEOUT_MS`, default 600000 (10 min). */
  readonly stepTimeout: Duration.DurationInput
  /** Planning rounds in all (the first plan included; re-plans after a user interrupt do not count). `DAG_MAX_REPLAN_ROUNDS`, default 3. */
  readonly maxRounds: number
  /** No re-plan once the analyzer is at least this confident (0–1). `DAG_REPLAN_STOP_CONFIDENCE`, default 0.8. */
  readonly replanStopConfidence: number
  /** Options of the ReAct agents that run the steps (and the ReAct fallback); `REACT_*` variables otherwise. */
  readonly agent?: Partial<AgentOptions>
}

/**
 * @since 0.1.0
 * @category constants
 */
export const defaults: Required<Omit<DagOptions, "agent">> = {
  maxConcurrency: 5,
  stepTimeout: Duration.minutes(10),
  maxRounds: 3,
  replanStopConfidence: 0.8
}

const intAtLeast = (name: string, min: number) =>
  Config.integer(name).pipe(
    Config.validate({ message: `${name} must be an integer >= ${min}`, validation: (n) => n >= min })
  )

/**
 * The options from the environment: `DAG_MAX_CONCURRENCY`, `DAG_STEP_TIMEOUT_MS`,
 * `DAG_MAX_REPLAN_ROUNDS`, `DAG_REPLAN_STOP_CONFIDENCE` (defaults when unset).
 *
 * @since 0.1.0
 * @category config
 */
export const config: Config.Config<Omit<DagOptions, "agent">> = Config.all({
  maxConcurrency: intAtLeast("DAG_MAX_CONCURRENCY", 1).pipe(Config.withDefault(defaults.maxConcurrency)),
  stepTimeout: intAtLeast("DAG_STEP_TIMEOUT_MS", 1).pipe(
    Config.map(Duration.millis),
    Config.withDefault(Duration.decode(defaults.stepTimeout))
  ),
  maxRounds: intAtLeast("DAG_MAX_REPLAN_ROUNDS", 1).pipe(Config.withDefault(defaults.maxRounds)),
  replanStopConfidence: Config.number("DAG_REPLAN_STOP_CONFIDENCE").pipe(
    Config.validate({
      message: "DAG_REPLAN_STOP_CONFIDENCE must be a number from 0 to 1",
      validation: (n) => n >= 0 && n <= 1
    }),
    Config.withDefault(defaults.replanStopConfidence)
  )
})

/** The settings of a run from explicit options (the defaults for the others), each checked. */
export const settingsOf = (options: Partial<DagOptions>): Effect.Effect<DagSettings, ConfigError.ConfigError> => {
  const invalid = (key: string, expected: string) =>
    Effect.fail(ConfigError.InvalidData([key], `option ${key} must be ${expected}`))
  const maxConcurrency = options.maxConcurrency ?? defaults.maxConcurrency
  const maxRounds = options.maxRounds ?? defaults.maxRounds
  const replanStopConfidence = options.replanStopConfidence ?? defaults.replanStopConfidence
  const stepTimeout = Duration.decodeUnknown(options.stepTimeout ?? defaults.stepTimeout)
  if (!Number.isInteger(maxConcurrency) || maxConcurrency < 1) return invalid("maxConcurrency", "an integer >= 1")
  if (!Number.isInteger(maxRounds) || maxRounds < 1) return invalid("maxRounds", "an integer >= 1")
  if (!(replanStopConfidence >= 0 && replanStopConfidence <= 1)) {
    return invalid("replanStopConfidence", "a number from 0 to 1")
  }
  if (Option.isNone(stepTimeout) || Duration.toMillis(stepTimeout.value) <= 0) {
    return invalid("stepTimeout", "a positive duration")
  }
  return Effect.succeed({ maxConcurrency, maxRounds, replanStopConfidence, stepTimeout: stepTimeout.value })
}
