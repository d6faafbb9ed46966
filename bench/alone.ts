/**
 * One engine alone in a fresh process: `node --import tsx bench/alone.ts <engine>`
 * runs every loop-overhead case for that engine only and prints the figures as
 * JSON on stdout. `runAlone` forks it for each engine (the side-by-side figures
 * run all engines in one process, where each one's code and garbage shape the
 * heap and JIT state the others run in).
 *
 * @since 0.1.0
 */
import { spawn } from "node:child_process"
import { fileURLToPath, pathToFileURL } from "node:url"
import * as Loop from "./loopOverhead.js"
import { engine as agentsSdk } from "./peers/agentsSdk.js"
import { engine as aiSdk } from "./peers/aiSdk.js"
import { engine as ours } from "./peers/ours.js"
import type { Engine } from "./scenario.js"

const engines: Record<string, Engine> = { ours, aiSdk, agentsSdk }

/** @since 0.1.0 */
export interface AloneFigures {
  readonly engine: string
  readonly cases: ReadonlyArray<
    { readonly title: string; readonly perIterationUs: number; readonly marginalUs: number }
  >
  readonly error?: string
}

/** Runs each engine in its own child process. @since 0.1.0 */
export const runAlone = async (options: { readonly quick: boolean }): Promise<Array<AloneFigures>> => {
  const out: Array<AloneFigures> = []
  for (const key of Object.keys(engines)) {
    const result = await new Promise<AloneFigures>((resolve) => {
      const child = spawn(process.execPath, [
        "--import",
        "tsx",
        fileURLToPath(import.meta.url),
        key,
        options.quick ? "quick" : "full"
      ], {
        stdio: ["ignore", "pipe", "inherit"]
      })
      let stdout = ""
      child.stdout.on("data", (d) => (stdout += d.toString()))
      child.on("exit", (code) => {
        try {
          resolve(JSON.parse(stdout.trim().split("\n").pop() ?? "") as AloneFigures)
        } catch {
          resolve({ engine: engines[key].name, cases: [], error: `child exited with ${code}` })
        }
      })
    })
    out.push(result)
  }
  return out
}

const main = async (key: string, quick: boolean) => {
  const engine = engines[key]
  const cases: Array<AloneFigures["cases"][number]> = []
  for (const c of Loop.cases) {
    const r = await Loop.runCase([engine], c, {
      flavour: "generate",
      // as many rounds as the shared run (bench/index.ts), under a shorter cap per case
      warmup: quick ? 2 : 20,
      samples: quick ? 12 : 250,
      afterGcRounds: quick ? 2 : 5,
      maxMsPerCase: quick ? 10_000 : 30_000,
      allocRepeats: 1,
      log: (line) => process.stderr.write(`${line}\n`)
    })
    const f = r.figures[0]
    cases.push({ title: c.title, perIterationUs: f.perIterationUs, marginalUs: f.marginalUs })
  }
  process.stdout.write(`${JSON.stringify({ engine: engine.name, cases })}\n`)
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const key = process.argv[2] ?? ""
  if (!(key in engines)) {
    process.stderr.write(`usage: bench/alone.ts ${Object.keys(engines).join("|")} [quick]\n`)
    process.exit(2)
  }
  main(key, process.argv[3] === "quick").then(() => process.exit(0), (e) => {
    process.stderr.write(`${e instanceof Error ? e.stack : String(e)}\n`)
    process.exit(1)
  })
}
