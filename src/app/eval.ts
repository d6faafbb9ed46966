/**
 * `npm run eval -- <cases.jsonl> [options]` (and `react-engine eval`): runs an
 * eval suite (`Eval`) on the agent the server would run — the same
 * configuration, the offline demo model when no `LLM_*` is set — or on the
 * cassettes the cases name, and prints a summary table.
 *
 *   --report FILE      the JSON report (and FILE with .html: the HTML report)
 *   --html FILE        the HTML report elsewhere
 *   --baseline FILE    a previous JSON report: per-case changes
 *   --min-score N      exit 1 when the mean score is below N (0..1)
 *   --concurrency N    cases at once (default 4)
 */
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import { readFileSync, writeFileSync } from "node:fs"
import * as Eval from "../Eval.js"
import { changes, html, table } from "../EvalReport.js"
import * as ModelRegistry from "../ModelRegistry.js"
import * as App from "./App.js"

const USAGE =
  "usage: react-engine eval <cases.jsonl> [--report out.json] [--html out.html] [--baseline old.json] [--min-score 0.8] [--concurrency 4]"

interface Args {
  readonly file: string
  readonly report?: string
  readonly html?: string
  readonly baseline?: string
  readonly minScore?: number
  readonly concurrency: number
}

const parseArgs = (argv: ReadonlyArray<string>): Either.Either<Args, string> => {
  let file: string | undefined
  const out: Record<string, string> = {}
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a.startsWith("--")) {
      const value = argv[i + 1]
      if (value === undefined) return Either.left(`${a} needs a value\n${USAGE}`)
      if (!["--report", "--html", "--baseline", "--min-score", "--concurrency"].includes(a)) {
        return Either.left(`unknown option ${a}\n${USAGE}`)
      }
      out[a.slice(2)] = value
      i++
    } else if (file === undefined) file = a
    else return Either.left(`one cases file only\n${USAGE}`)
  }
  if (file === undefined) return Either.left(USAGE)
  const minScore = out["min-score"] !== undefined ? Number(out["min-score"]) : undefined
  if (minScore !== undefined && !(minScore >= 0 && minScore <= 1)) {
    return Either.left("--min-score must be a number between 0 and 1")
  }
  const concurrency = out.concurrency !== undefined ? Number(out.concurrency) : 4
  if (!Number.isInteger(concurrency) || concurrency < 1) return Either.left("--concurrency must be a positive integer")
  return Either.right({
    file,
    concurrency,
    ...(out.report !== undefined ? { report: out.report } : {}),
    ...(out.html !== undefined
      ? { html: out.html }
      : out.report !== undefined
      ? { html: out.report.replace(/(\.json)?$/, ".html") }
      : {}),
    ...(out.baseline !== undefined ? { baseline: out.baseline } : {}),
    ...(minScore !== undefined ? { minScore } : {})
  })
}

const progress = (done: number, total: number, passed: number) => {
  if (!process.stderr.isTTY) return
  const width = 30
  const filled = Math.round((done / total) * width)
  process.stderr.write(
    `\r[${"#".repeat(filled)}${"-".repeat(width - filled)}] ${done}/${total} cases, ${passed} passed`
  )
  if (done === total) process.stderr.write("\n")
}

/** Runs the command; the exit code. */
export const main = (argv: ReadonlyArray<string>): Effect.Effect<number> =>
  Effect.gen(function*() {
    const parsed = parseArgs(argv)
    if (Either.isLeft(parsed)) {
      yield* Effect.sync(() => console.error(parsed.left))
      return 2
    }
    const args = parsed.right
    const cases = yield* Effect.either(Eval.readCases(args.file).pipe(Effect.provide(NodeFileSystem.layer)))
    if (Either.isLeft(cases)) {
      const { line, message } = cases.left
      yield* Effect.sync(() => console.error(line === 0 ? message : `${args.file}:${line}: ${message}`))
      return 2
    }
    const context = yield* Layer.build(App.AppLayer).pipe(Effect.orDie)
    const registry = yield* Effect.provide(ModelRegistry.ModelRegistry, context)
    let passed = 0
    const report = yield* Eval.run(cases.right, {
      agent: Layer.succeedContext(context),
      judge: registry.fast,
      concurrency: args.concurrency,
      onResult: (r, done, total) =>
        Effect.sync(() => {
          if (r.passed) passed++
          progress(done, total, passed)
        })
    })
    yield* Effect.sync(() => {
      console.log(table(report))
      let baseline: Eval.Report | undefined
      if (args.baseline !== undefined) {
        baseline = JSON.parse(readFileSync(args.baseline, "utf8")) as Eval.Report
        console.log(`\nchanges against ${args.baseline}:\n${changes(report, baseline)}`)
      }
      if (args.report !== undefined) {
        writeFileSync(args.report, JSON.stringify(report, null, 2) + "\n")
        console.log(`\nJSON report: ${args.report}`)
      }
      if (args.html !== undefined) {
        writeFileSync(args.html, html(report, baseline))
        console.log(`HTML report: ${args.html}`)
      }
    })
    if (args.minScore !== undefined && report.summary.score < args.minScore) {
      yield* Effect.sync(() =>
        console.error(`mean score ${report.summary.score} is below --min-score ${args.minScore}`)
      )
      return 1
    }
    return 0
  }).pipe(Effect.scoped, Logger.withMinimumLogLevel(LogLevel.Error))

/** Runs the command in this process and exits with its code (`npm run eval`, `react-engine eval`). */
export const runMain = (argv: ReadonlyArray<string>): void =>
  NodeRuntime.runMain(Effect.flatMap(main(argv), (code) => Effect.sync(() => process.exit(code))))

if (import.meta.url === `file://${process.argv[1]}` || process.argv[1]?.endsWith("/app/eval.ts")) {
  runMain(process.argv.slice(2))
}
