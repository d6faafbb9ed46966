/**
 * The kill matrices in a loop under a CPU hog, counting tool re-executions
 * from the tools' own execution records (issue 46 item 1: "exactly once,
 * whatever the timing").
 *
 *   npx tsx test/durable/killMatrixLoop.ts [--runs 20] [--hogs 2] [--hog-nice 0]
 *     [--matrix sqlite,postgres] [--out DIR]
 *
 * Each round runs `test/durable/killMatrix.test.ts` (SQLite) and/or
 * `test/durable/killMatrix.postgres.test.ts` (two PostgreSQL instances) once,
 * one vitest process at a time (`TEST_WORKERS=1`), while `--hogs` processes
 * (`node -e 'for(;;){}'`) keep the CPUs busy: at the loop's own niceness
 * (run the loop under `nice` and the hogs are as nice as the tests), or
 * `--hog-nice N` higher. Every round gets a temporary directory of its own
 * (`TMPDIR`), so the recorder MCP server's record files (`records.txt`: a
 * `start <label>` / `end <label>` line per execution, written by the tool
 * itself) stay there to be read afterwards, with the matrix's report.
 *
 * Counted per record file (one kill point of one round):
 * - **non-idempotent re-executions**: starts of `slow` (the matrix's
 *   `rec__record`, not idempotent) after its first;
 * - **completed tools run again**: a label that ended more than once, or
 *   started again after it had ended (`fast`, idempotent, may start again after
 *   a kill cut it: that is not counted).
 * Tests that failed are listed with their first line. The summary goes to
 * stdout and to `<out>/summary.json`. Exit code 1 when anything was counted or
 * a test failed.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pathToFileURL } from "node:url"

const args = process.argv.slice(2)
const option = (name: string, fallback: string) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1] : fallback
}
const runs = Number(option("runs", "20"))
const hogs = Number(option("hogs", "2"))
const hogNice = Number(option("hog-nice", "0"))
const matrices = option("matrix", "sqlite,postgres").split(",")
const out = option("out", join(tmpdir(), `kill-matrix-loop-${process.pid}`))

const FILES: Record<string, string> = {
  sqlite: "test/durable/killMatrix.test.ts",
  postgres: "test/durable/killMatrix.postgres.test.ts"
}

// ---------------------------------------------------------------------------
// The hog

const hogProcesses: Array<ChildProcess> = []
const startHogs = () => {
  for (let i = 0; i < hogs; i++) {
    const [command, argv] = hogNice > 0
      ? ["nice", ["-n", String(hogNice), process.execPath, "-e", "for(;;){}"]]
      : [process.execPath, ["-e", "for(;;){}"]]
    hogProcesses.push(spawn(command, argv, { stdio: "ignore" }))
  }
}
const stopHogs = () => {
  for (const hog of hogProcesses) hog.kill("SIGKILL")
}

// ---------------------------------------------------------------------------
// Reading a round

/** Every `records.txt` under `dir`. */
const recordFiles = (dir: string): Array<string> => {
  if (!existsSync(dir)) return []
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name)
    let stat
    try {
      stat = statSync(path)
    } catch {
      return []
    }
    if (stat.isDirectory()) return recordFiles(path)
    return name === "records.txt" ? [path] : []
  })
}

interface Count {
  readonly nonIdempotentAgain: number
  readonly completedAgain: number
  readonly lines: string
}

/** What one record file shows (see the module comment). */
export const countRecords = (lines: ReadonlyArray<string>): Count => {
  const starts = new Map<string, number>()
  const ends = new Map<string, number>()
  let completedAgain = 0
  for (const line of lines) {
    const [what, label] = line.split(" ")
    if (what === "start") {
      if ((ends.get(label) ?? 0) > 0) completedAgain++
      starts.set(label, (starts.get(label) ?? 0) + 1)
    } else if (what === "end") {
      if ((ends.get(label) ?? 0) > 0) completedAgain++
      ends.set(label, (ends.get(label) ?? 0) + 1)
    }
  }
  return { nonIdempotentAgain: Math.max(0, (starts.get("slow") ?? 0) - 1), completedAgain, lines: lines.join(" | ") }
}

interface Round {
  readonly matrix: string
  readonly round: number
  readonly seconds: number
  readonly passed: number
  readonly failed: Array<string>
  readonly recordFiles: number
  readonly nonIdempotentAgain: number
  readonly completedAgain: number
  readonly offending: Array<string>
  readonly load: string
}

const loadAverage = () => {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ")
  } catch {
    return "?"
  }
}

const runRound = (matrix: string, round: number): Promise<Round> =>
  new Promise((resolve) => {
    const dir = join(out, `${matrix}-${String(round).padStart(2, "0")}`)
    mkdirSync(dir, { recursive: true })
    const json = join(dir, "vitest.json")
    const started = Date.now()
    const log: Array<string> = []
    const child = spawn("npx", [
      "vitest",
      "run",
      FILES[matrix],
      "--reporter=default",
      "--reporter=json",
      `--outputFile.json=${json}`
    ], {
      env: { ...process.env, TMPDIR: dir, KILL_MATRIX_REPORT_DIR: dir, TEST_WORKERS: "1" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    child.stdout!.on("data", (d) => log.push(d.toString()))
    child.stderr!.on("data", (d) => log.push(d.toString()))
    child.once("exit", () => {
      writeFileSync(join(dir, "vitest.log"), log.join(""))
      let passed = 0
      const failed: Array<string> = []
      try {
        const report = JSON.parse(readFileSync(json, "utf8"))
        for (const file of report.testResults ?? []) {
          for (const test of file.assertionResults ?? []) {
            if (test.status === "passed") passed++
            else if (test.status === "failed") {
              failed.push(`${test.title}: ${String(test.failureMessages?.[0] ?? "").split("\n")[0]}`)
            }
          }
        }
      } catch {
        failed.push(`no vitest report (see ${join(dir, "vitest.log")})`)
      }
      const counts = recordFiles(dir).map((path) => ({
        path,
        ...countRecords(readFileSync(path, "utf8").split("\n").filter((l) => l !== ""))
      }))
      resolve({
        matrix,
        round,
        seconds: (Date.now() - started) / 1000,
        passed,
        failed,
        recordFiles: counts.length,
        nonIdempotentAgain: counts.reduce((n, c) => n + c.nonIdempotentAgain, 0),
        completedAgain: counts.reduce((n, c) => n + c.completedAgain, 0),
        offending: counts.filter((c) => c.nonIdempotentAgain + c.completedAgain > 0).map((c) =>
          `${c.path}: ${c.lines}`
        ),
        load: loadAverage()
      })
    })
  })

// ---------------------------------------------------------------------------

const main = async () => {
  for (const m of matrices) if (FILES[m] === undefined) throw new Error(`unknown matrix ${m} (sqlite, postgres)`)
  mkdirSync(out, { recursive: true })
  process.on("exit", stopHogs)
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.on(signal, () => {
      stopHogs()
      process.exit(130)
    })
  }
  const niceness = (() => {
    try {
      return readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ")[16]
    } catch {
      return "?"
    }
  })()
  console.log(
    `kill-matrix loop: ${runs} round(s) of ${
      matrices.join(" + ")
    }, ${hogs} CPU hog(s) (node -e 'for(;;){}') at niceness ${niceness}${
      hogNice > 0 ? ` + ${hogNice}` : ""
    } (the tests at ${niceness}); output in ${out}`
  )
  startHogs()
  const rounds: Array<Round> = []
  for (let round = 1; round <= runs; round++) {
    for (const matrix of matrices) {
      const r = await runRound(matrix, round)
      rounds.push(r)
      console.log(
        `${matrix} round ${round}: ${r.passed} passed, ${r.failed.length} failed, ${r.recordFiles} record files, ` +
          `non-idempotent re-executions ${r.nonIdempotentAgain}, completed tools run again ${r.completedAgain} ` +
          `(${r.seconds.toFixed(0)} s, load ${r.load})`
      )
      for (const f of r.failed) console.log(`  FAILED ${f}`)
      for (const o of r.offending) console.log(`  RE-EXECUTION ${o}`)
      writeFileSync(
        join(out, "summary.json"),
        JSON.stringify({ runs, hogs, hogNice, niceness, matrices, rounds }, null, 2)
      )
    }
  }
  stopHogs()
  const total = (m: string, f: (r: Round) => number) =>
    rounds.filter((r) => r.matrix === m).reduce((n, r) => n + f(r), 0)
  console.log(
    "\n| matrix | rounds | tests passed | tests failed | record files | non-idempotent re-executions | completed tools run again |"
  )
  console.log("| --- | --- | --- | --- | --- | --- | --- |")
  for (const m of matrices) {
    console.log(
      `| ${m} | ${rounds.filter((r) => r.matrix === m).length} | ${total(m, (r) => r.passed)} | ${
        total(m, (r) => r.failed.length)
      } | ${total(m, (r) => r.recordFiles)} | ${total(m, (r) => r.nonIdempotentAgain)} | ${
        total(m, (r) => r.completedAgain)
      } |`
    )
  }
  const bad = rounds.some((r) => r.failed.length > 0 || r.nonIdempotentAgain > 0 || r.completedAgain > 0)
  process.exit(bad ? 1 : 0)
}

// run as a script (not when a test imports countRecords)
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) void main()
