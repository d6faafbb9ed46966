/**
 * SQL statements per stored loop iteration: the real server (bench/serverProcess.ts,
 * embedded SQLite, zero-latency scripted model) with every statement counted by
 * bench/sqlTrace.mjs; runs of SHORT and LONG tool steps, one at a time, each
 * measured as the counters' difference across the run; per iteration =
 * (median over runs of LONG − of SHORT) ÷ (LONG − SHORT), statement by statement.
 *
 * `npx tsx bench/sqlCount.ts [short] [long] [samples]` prints a Markdown table.
 *
 * @since 0.1.0
 */
import type { ChildProcess } from "node:child_process"
import { fileURLToPath } from "node:url"
import { runOnce } from "./durableStep.js"
import { quantile } from "./harness.js"
import { startServerProcess } from "./serverLoad.js"

interface Counts {
  readonly runs: Record<string, number>
  readonly prepares: Record<string, number>
  readonly spent: { readonly run: number; readonly prepare: number }
}

const SHORT = Number(process.argv[2] ?? 2)
const LONG = Number(process.argv[3] ?? 12)
const SAMPLES = Number(process.argv[4] ?? 5)

const snapshot = (child: ChildProcess): Promise<Counts> =>
  new Promise((resolve) => {
    const on = (m: any) => {
      if (m?.type === "sqlcount") {
        child.off("message", on)
        resolve(m as Counts)
      }
    }
    child.on("message", on)
    child.send({ type: "sqlcount" })
  })

const diff = (a: Record<string, number>, b: Record<string, number>) => {
  const out: Record<string, number> = {}
  for (const [k, v] of Object.entries(b)) if (v - (a[k] ?? 0) !== 0) out[k] = v - (a[k] ?? 0)
  return out
}

const trace = fileURLToPath(new URL("./sqlTrace.mjs", import.meta.url))
const server = await startServerProcess({
  BENCH_LATENCY_MS: "0",
  BENCH_CHUNKS: "1",
  NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ""} --import ${trace}`
})
try {
  for (let i = 0; i < 2; i++) await runOnce(server.port, SHORT, i)
  const per = (steps: number) => async (i: number) => {
    const before = await snapshot(server.child)
    await runOnce(server.port, steps, 100 + i)
    const after = await snapshot(server.child)
    return {
      runs: diff(before.runs, after.runs),
      prepares: diff(before.prepares, after.prepares),
      spent: { run: after.spent.run - before.spent.run, prepare: after.spent.prepare - before.spent.prepare }
    }
  }
  const shorts: Array<Counts> = []
  const longs: Array<Counts> = []
  for (let i = 0; i < SAMPLES; i++) {
    shorts.push(await per(SHORT)(i))
    longs.push(await per(LONG)(i))
  }
  const keys = new Set([...shorts, ...longs].flatMap((c) => Object.keys(c.runs)))
  const med = (cs: Array<Counts>, k: string, field: "runs" | "prepares") =>
    quantile(cs.map((c) => c[field][k] ?? 0), 0.5)
  const rows = [...keys].map((k) => ({
    k,
    short: med(shorts, k, "runs"),
    long: med(longs, k, "runs"),
    perIteration: (med(longs, k, "runs") - med(shorts, k, "runs")) / (LONG - SHORT),
    prepPerIteration: (med(longs, k, "prepares") - med(shorts, k, "prepares")) / (LONG - SHORT)
  })).sort((a, b) => b.perIteration - a.perIteration || b.short - a.short)
  const total = (cs: Array<Counts>, field: "runs" | "prepares") =>
    quantile(cs.map((c) => Object.values(c[field]).reduce((s, v) => s + v, 0)), 0.5)
  const tx = (cs: Array<Counts>) => quantile(cs.map((c) => c.runs["BEGIN"] ?? 0), 0.5)
  console.log(`| statement | run of ${SHORT} steps | run of ${LONG} | per iteration | prepared per iteration |`)
  console.log("|---|---:|---:|---:|---:|")
  for (const r of rows) {
    console.log(
      `| \`${r.k.replace(/\|/g, "\\|")}\` | ${r.short} | ${r.long} | ${r.perIteration.toFixed(2)} | ${
        r.prepPerIteration.toFixed(2)
      } |`
    )
  }
  const sT = total(shorts, "runs"), lT = total(longs, "runs")
  console.log(
    `| **all statements** | ${sT} | ${lT} | ${((lT - sT) / (LONG - SHORT)).toFixed(2)} | ${
      ((total(longs, "prepares") - total(shorts, "prepares")) / (LONG - SHORT)).toFixed(2)
    } |`
  )
  const spent = (cs: Array<Counts>, k: "run" | "prepare") => quantile(cs.map((c) => c.spent[k]), 0.5)
  const perIt = (k: "run" | "prepare") => ((spent(longs, k) - spent(shorts, k)) / (LONG - SHORT)).toFixed(3)
  console.log(
    `| **ms inside the driver: running / compiling** | ${spent(shorts, "run").toFixed(1)} / ${
      spent(shorts, "prepare").toFixed(1)
    } | ${spent(longs, "run").toFixed(1)} / ${spent(longs, "prepare").toFixed(1)} | ${perIt("run")} / ${
      perIt("prepare")
    } | |`
  )
  console.log(
    `| **transactions (BEGIN)** | ${tx(shorts)} | ${tx(longs)} | ${
      ((tx(longs) - tx(shorts)) / (LONG - SHORT)).toFixed(2)
    } | |`
  )
} finally {
  await server.stop()
}
