/**
 * The scripted conversations every engine runs in the loop-overhead benchmark:
 * `steps` model turns that each call `calls` trivial tools, then a final answer.
 * The tool result is a short text or a fixed 20 KB text (the same string object
 * every time, so what is measured is what the engine allocates, not the tool).
 *
 * @since 0.1.0
 */

/** @since 0.1.0 */
export interface Scenario {
  readonly name: string
  /** Tool-calling model turns (the final-answer turn comes after them). */
  readonly steps: number
  /** Tool calls per turn (run concurrently by every engine). */
  readonly calls: number
  /** Characters in each tool result. */
  readonly resultChars: number
}

/** @since 0.1.0 */
export const QUERY = "Look up every record and tell me how many there are."
/** @since 0.1.0 */
export const FINAL = "There are 50 records."
/** The final answer as a streamed reply sends it: word-sized chunks, as `ScriptedLlm` splits it. @since 0.1.0 */
export const FINAL_CHUNKS: ReadonlyArray<string> = FINAL.match(/\s*\S+/g) ?? [FINAL]
/** @since 0.1.0 */
export const TOOL_NAME = "lookup"
/** @since 0.1.0 */
export const TOOL_DESCRIPTION = "Looks up one record by its index."

const cache = new Map<number, string>()

/** The tool result of a scenario (one shared string per size). @since 0.1.0 */
export const toolResult = (chars: number): string => {
  let s = cache.get(chars)
  if (s === undefined) {
    const unit = "record field value lorem ipsum dolor sit amet, "
    s = unit.repeat(Math.ceil(chars / unit.length)).slice(0, chars)
    // flatten (repeat may build a rope) so every engine gets a flat string
    s = JSON.parse(JSON.stringify(s)) as string
    cache.set(chars, s)
  }
  return s
}

/** Arguments of call `c` in turn `step` (distinct: no cycle warnings). @since 0.1.0 */
export const toolArgs = (step: number, c: number): { readonly index: number } => ({ index: step * 100 + c })

/** The tool handler's output for some arguments. @since 0.1.0 */
export const runTool = (scenario: Scenario, args: { readonly index: number }): string =>
  scenario.resultChars > 0 ? toolResult(scenario.resultChars) : `record ${args.index}: ok`

/**
 * How the loop's model calls are made, the same for every engine of a comparison (like with
 * like): `generate`, each call non-streamed (the AI SDK's `generateText`, the Agents SDK's
 * `run`, ours with synthesis policy `always`); `stream`, each call streamed and the stream
 * consumed in full (`streamText`, `run(…, { stream: true })`, ours with its default `auto`).
 *
 * @since 0.1.0
 */
export type Flavour = "generate" | "stream"

/** Both flavours, in the order the report shows them. @since 0.1.0 */
export const flavours: ReadonlyArray<Flavour> = ["generate", "stream"]

/** An engine under test: builds a fresh run of a scenario and executes it. @since 0.1.0 */
export interface Engine {
  readonly name: string
  /** Prepares what can be reused across runs (agents, tools); returns a function that performs one full run. */
  readonly prepare: (scenario: Scenario) => Promise<() => Promise<RunCheck>>
}

/** What a run reports so the harness can check it did the work. @since 0.1.0 */
export interface RunCheck {
  readonly answer: string
  readonly toolCalls: number
}

/** @since 0.1.0 */
export const verify = (engine: string, scenario: Scenario, check: RunCheck): void => {
  const expected = scenario.steps * scenario.calls
  if (check.toolCalls !== expected || !check.answer.includes("records")) {
    throw new Error(
      `${engine} / ${scenario.name}: expected ${expected} tool calls and the final answer, got ${check.toolCalls} calls and "${
        check.answer.slice(0, 80)
      }"`
    )
  }
}

/** A loop workload: a long and a short scenario (the marginal cost per step is their slope). @since 0.1.0 */
export interface Case {
  /** The workload's short name (w1, w2, w3), as outside harnesses name them. */
  readonly label: string
  readonly title: string
  readonly long: Scenario
  readonly short: Scenario
}

/**
 * The loop workloads (bench/loopOverhead.ts, bench/childProcess.ts): w1 50 single-tool steps, w2 10 steps × 4
 * parallel calls, w3 50 steps with 20 KB results (listed in the order the in-process tables show them).
 *
 * @since 0.1.0
 */
export const loopCases: ReadonlyArray<Case> = [
  {
    label: "w1",
    title: "50 sequential single-tool steps",
    long: { name: "seq50", steps: 50, calls: 1, resultChars: 0 },
    short: { name: "seq10", steps: 10, calls: 1, resultChars: 0 }
  },
  {
    label: "w3",
    title: "50 sequential steps, 20 KB tool results",
    long: { name: "seq50-20k", steps: 50, calls: 1, resultChars: 20 * 1024 },
    short: { name: "seq10-20k", steps: 10, calls: 1, resultChars: 20 * 1024 }
  },
  {
    label: "w2",
    title: "10 steps × 4 parallel tool calls",
    long: { name: "par10x4", steps: 10, calls: 4, resultChars: 0 },
    short: { name: "par2x4", steps: 2, calls: 4, resultChars: 0 }
  }
]
