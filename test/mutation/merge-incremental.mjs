// Merges StrykerJS reports of partial runs (`--mutate <some files>`) into the
// committed incremental file, test/mutation/stryker-incremental.json.
//
// Stryker writes its incremental file from the current run only: a run with
// `--mutate src/ExtractJson.ts` against the committed file would leave it with
// ExtractJson's mutants alone. So a partial run writes elsewhere, and this
// script folds it in: a file's mutants are replaced by the partial run's, test
// files are united (a test of the later report wins). Only the files the partial
// run mutated are taken (`--files`, the run's `--mutate` list): a partial run
// started from a copy of the committed file carries every other file's entry
// as it was then, and taking those too put back stale results over newer ones
// (compact.ts's 94.92 % fell back to 87.30 % that way). Usage:
//
//   npx stryker run --mutate src/ExtractJson.ts --incrementalFile reports/part.json
//   node test/mutation/merge-incremental.mjs --files src/ExtractJson.ts reports/part.json [more.json …]
import { existsSync, readFileSync, writeFileSync } from "node:fs"

const target = new URL("./stryker-incremental.json", import.meta.url)
const args = process.argv.slice(2)
const at = args.indexOf("--files")
const files = at === -1 ? [] : (args[at + 1] ?? "").split(",").map((f) => f.trim()).filter(Boolean)
const parts = args.filter((_, i) => at === -1 || (i !== at && i !== at + 1))
if (parts.length === 0 || files.length === 0) {
  console.error(
    "usage: node test/mutation/merge-incremental.mjs --files <the run's --mutate list, comma-separated> <partial report.json> …"
  )
  process.exit(2)
}
/**
 * A report whose test ids are `<test file>#<test name>`. StrykerJS numbers the tests of each
 * run ("23", "24", …) and a mutant's killedBy/coveredBy use those numbers, which mean nothing
 * against another run's test list; names do. A report must be coherent (its mutants' ids in
 * its own test files).
 */
const canonical = (report, where) => {
  const names = new Map()
  for (const [testFile, entry] of Object.entries(report.testFiles)) {
    for (const t of entry.tests) names.set(t.id, t.id.includes("#") ? t.id : `${testFile}#${t.name}`)
  }
  const rename = (id) => {
    const name = names.get(id)
    if (name === undefined) throw new Error(`${where}: test id ${id} is not in its test files`)
    return name
  }
  return {
    ...report,
    files: Object.fromEntries(
      Object.entries(report.files).map(([file, entry]) => [file, {
        ...entry,
        mutants: entry.mutants.map((m) => ({
          ...m,
          ...(m.killedBy ? { killedBy: m.killedBy.map(rename) } : {}),
          ...(m.coveredBy ? { coveredBy: m.coveredBy.map(rename) } : {})
        }))
      }])
    ),
    testFiles: Object.fromEntries(
      Object.entries(report.testFiles).map(([testFile, entry]) => [testFile, {
        ...entry,
        tests: entry.tests.map((t) => ({ ...t, id: rename(t.id) }))
      }])
    )
  }
}

const base = existsSync(target) ? canonical(JSON.parse(readFileSync(target, "utf-8")), target.pathname) : undefined
const merged = parts.reduce((acc, file) => {
  const part = canonical(JSON.parse(readFileSync(file, "utf-8")), file)
  const missing = files.filter((f) => part.files[f] === undefined)
  if (missing.length > 0) {
    console.error(`${file} has no results for ${missing.join(", ")}`)
    process.exit(1)
  }
  const taken = Object.fromEntries(files.map((f) => [f, part.files[f]]))
  if (acc === undefined) return { ...part, files: taken }
  // a test file's list: the part's, plus the tests that earlier runs' mutants name and the part
  // no longer has (renamed or removed since: the next run sees them gone and retests those mutants)
  const testFiles = { ...acc.testFiles }
  for (const [testFile, entry] of Object.entries(part.testFiles)) {
    const ids = new Set(entry.tests.map((t) => t.id))
    const gone = (acc.testFiles[testFile]?.tests ?? []).filter((t) => !ids.has(t.id))
    testFiles[testFile] = { ...entry, tests: [...entry.tests, ...gone] }
  }
  return { ...acc, files: { ...acc.files, ...taken }, testFiles }
}, base)
writeFileSync(target, JSON.stringify(merged, null, 2) + "\n")
const mutants = Object.values(merged.files).reduce((n, f) => n + f.mutants.length, 0)
console.log(`${target.pathname}: ${Object.keys(merged.files).length} files, ${mutants} mutants`)
