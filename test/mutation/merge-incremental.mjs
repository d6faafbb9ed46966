// Merges StrykerJS reports of partial runs (`--mutate <some files>`) into the
// committed incremental file, test/mutation/stryker-incremental.json.
//
// Stryker writes its incremental file from the current run only: a run with
// `--mutate src/ExtractJson.ts` against the committed file would leave it with
// ExtractJson's mutants alone. So a partial run writes elsewhere, and this
// script folds it in: a file's mutants are replaced by the partial run's, test
// files are united (a test of the later report wins). Usage:
//
//   npx stryker run --mutate src/ExtractJson.ts --incrementalFile reports/part.json
//   node test/mutation/merge-incremental.mjs reports/part.json [more.json …]
import { readFileSync, writeFileSync, existsSync } from "node:fs"

const target = new URL("./stryker-incremental.json", import.meta.url)
const parts = process.argv.slice(2)
if (parts.length === 0) {
  console.error("usage: node test/mutation/merge-incremental.mjs <partial report.json> …")
  process.exit(2)
}
const base = existsSync(target) ? JSON.parse(readFileSync(target, "utf-8")) : undefined
const merged = parts.reduce((acc, file) => {
  const part = JSON.parse(readFileSync(file, "utf-8"))
  if (acc === undefined) return part
  return {
    ...acc,
    files: { ...acc.files, ...part.files },
    testFiles: { ...acc.testFiles, ...part.testFiles }
  }
}, base)
writeFileSync(target, JSON.stringify(merged, null, 2) + "\n")
const mutants = Object.values(merged.files).reduce((n, f) => n + f.mutants.length, 0)
console.log(`${target.pathname}: ${Object.keys(merged.files).length} files, ${mutants} mutants`)
