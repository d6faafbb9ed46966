// Prints the mutation score of every file and module in the committed incremental
// file (test/mutation/stryker-incremental.json) as a markdown table: what the last
// runs counted, without running anything. Score = (killed + timed out) /
// (killed + timed out + survived + no coverage); static mutants are ignored.
//
//   node test/mutation/scores.mjs
import { readFileSync } from "node:fs"

const report = JSON.parse(readFileSync(new URL("./stryker-incremental.json", import.meta.url), "utf-8"))
const statuses = ["Killed", "Timeout", "Survived", "NoCoverage", "Ignored"]
const moduleOf = (file) => {
  const inner = /^src\/(?:server\/)?internal\/([^/]+)\//.exec(file)
  if (inner) return inner[1] === "extractJson" ? "extractJson" : inner[1]
  if (file === "src/ExtractJson.ts") return "extractJson"
  return file.replace(/^src\/(server\/internal\/)?/, "").replace(/\.ts$/, "")
}
const count = (mutants) => Object.fromEntries(statuses.map((s) => [s, mutants.filter((m) => m.status === s).length]))
const score = (c) => {
  const detected = c.Killed + c.Timeout
  const total = detected + c.Survived + c.NoCoverage
  return total === 0 ? "—" : `${((100 * detected) / total).toFixed(2)} %`
}
const row = (name, mutants) => {
  const c = count(mutants)
  return `| ${name} | ${mutants.length} | ${statuses.map((s) => c[s]).join(" | ")} | ${score(c)} |`
}
const modules = new Map()
for (const [file, entry] of Object.entries(report.files)) {
  const m = moduleOf(file)
  modules.set(m, [...(modules.get(m) ?? []), [file, entry.mutants]])
}
const lines = [
  "| Module / file | Mutants | Killed | Timeout | Survived | No cov. | Ignored (static) | Score |",
  "|---|---|---|---|---|---|---|---|"
]
for (const [m, files] of [...modules].sort((a, b) => a[0].localeCompare(b[0]))) {
  lines.push(row(`**${m}**`, files.flatMap(([, mutants]) => mutants)))
  if (files.length > 1) {
    for (const [file, mutants] of files.sort()) lines.push(row(`  \`${file.split("/").pop()}\``, mutants))
  }
}
lines.push(row("**all configured files**", Object.values(report.files).flatMap((e) => e.mutants)))
console.log(lines.join("\n"))
