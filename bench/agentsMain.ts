/**
 * `npx tsx bench/agentsMain.ts` (`BENCH_QUICK=1` for a smoke run): the
 * sub-agents and A2A section alone (bench/agents.ts), printed; with `--merge`
 * its figures replace the section's in bench/results.json and
 * docs/benchmarks.md is rendered again (as `BENCH_ONLY=agents npm run bench --
 * --merge` does, without building the package for the peers).
 *
 * @since 0.1.0
 */
import { readFileSync, writeFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import * as Agents from "./agents.js"
import * as Report from "./report.js"

const results = await Agents.run(process.env.BENCH_QUICK === "1")
console.log(Agents.section(results))
if (process.argv.includes("--merge")) {
  const resultsPath = fileURLToPath(new URL("./results.json", import.meta.url))
  const docPath = fileURLToPath(new URL("../docs/benchmarks.md", import.meta.url))
  const saved = JSON.parse(readFileSync(resultsPath, "utf8")) as Report.Results
  const when = `${results.date.slice(0, 16).replace("T", " ")} UTC`
  const merged: Report.Results = {
    ...saved,
    agents: results,
    env: { ...saved.env, merged: { ...saved.env.merged, agents: when } }
  }
  writeFileSync(resultsPath, JSON.stringify(merged, null, 1))
  writeFileSync(docPath, Report.markdown(merged))
}
process.exit(0)
