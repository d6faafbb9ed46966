/**
 * What every engine of the latency benchmark implements.
 *
 * @since 0.1.0
 */
import type { LatencyScenario } from "./scenarios.js"

/** What one run reports (times are taken by the harness). @since 0.1.0 */
export interface LatencyRun {
  /** The answer text the user received. */
  readonly answer: string
  /** Tool calls the engine executed. */
  readonly toolCalls: number
  /** Output tokens the engine's own usage reports for the run (undefined when it reports none). */
  readonly reportedOutputTokens: number | undefined
  /** LLM calls the engine's own usage reports (undefined when it reports none). */
  readonly reportedCalls: number | undefined
}

/**
 * Marks the engine calls as the run goes: `answerToken` on each answer text the
 * consumer receives (the harness keeps the first), `answerReset` when text shown
 * as answer is retracted (the next token counts as the first again).
 *
 * @since 0.1.0
 */
export interface RunMarks {
  readonly answerToken: () => void
  readonly answerReset: () => void
}

/** @since 0.1.0 */
export interface LatencyEngine {
  /** The row label, e.g. "ours (synthesis: always)". */
  readonly name: string
  /**
   * Builds what can be reused across runs against the provider at `baseURL`;
   * `run(marks)` performs one full run, calling `marks` as answer text reaches
   * the consumer (the harness stamps the times).
   */
  readonly prepare: (scenario: LatencyScenario, baseURL: string) => Promise<{
    readonly run: (marks: RunMarks) => Promise<LatencyRun>
    readonly close: () => Promise<void>
  }>
}
