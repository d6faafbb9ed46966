// One-off repair of test/mutation/stryker-incremental.json's test ids (kept for the record).
//
// StrykerJS's vitest runner numbers tests per run ("23", "24", …), and a mutant's
// killedBy/coveredBy name tests by those numbers. merge-incremental.mjs used to
// copy a partial run's mutants as they were and unite the test files, so the
// mutants of earlier runs kept numbers that, in the united test list, named other
// tests — and `npm run mutate` reused only 494 of 3,372 results. This rebuilds
// each file's mapping from the commit that brought its entry in (the oldest
// commit holding that entry unchanged, whose test list is its run's) and
// rewrites every id as `<test file>#<test name>`, which does not depend on a
// run's numbering (merge-incremental.mjs does the same for each new part).
import { execFileSync } from "node:child_process"
import { readFileSync, writeFileSync } from "node:fs"

const path = "test/mutation/stryker-incremental.json"
const commits = execFileSync("git", ["log", "--format=%H", "--", path], { encoding: "utf8" }).trim().split("\n")
const versions = commits.map((c) => ({ commit: c, report: JSON.parse(execFileSync("git", ["show", `${c}:${path}`], { encoding: "utf8", maxBuffer: 1 << 30 })) }))
const current = JSON.parse(readFileSync(path, "utf8"))

const idMap = (report) => {
  const map = new Map()
  for (const [file, entry] of Object.entries(report.testFiles)) for (const t of entry.tests) map.set(t.id, { file, name: t.name })
  return map
}
const canonical = ({ file, name }) => `${file}#${name}`

const extra = new Map() // test file -> names referenced but absent from the current list
const files = {}
for (const [file, entry] of Object.entries(current.files)) {
  const text = JSON.stringify(entry)
  // oldest version holding this entry unchanged: the run that measured it
  const origin = [...versions].reverse().find((v) => v.report.files[file] !== undefined && JSON.stringify(v.report.files[file]) === text)
  const map = idMap(origin?.report ?? current)
  const rename = (id) => {
    const t = map.get(id)
    if (t === undefined) throw new Error(`${file}: test id ${id} unknown in ${origin?.commit ?? "the working copy"}`)
    const names = extra.get(t.file) ?? new Set()
    names.add(t.name)
    extra.set(t.file, names)
    return canonical(t)
  }
  files[file] = {
    ...entry,
    mutants: entry.mutants.map((m) => ({
      ...m,
      ...(m.killedBy ? { killedBy: m.killedBy.map(rename) } : {}),
      ...(m.coveredBy ? { coveredBy: m.coveredBy.map(rename) } : {})
    }))
  }
  console.log(`${file}: from ${origin?.commit.slice(0, 7) ?? "working copy"}`)
}
const testFiles = {}
for (const [file, entry] of Object.entries(current.testFiles)) {
  const names = new Set(entry.tests.map((t) => t.name))
  for (const n of extra.get(file) ?? []) names.add(n)
  testFiles[file] = { ...entry, tests: [...names].map((name) => ({ id: canonical({ file, name }), name })) }
}
for (const [file, names] of extra) {
  if (testFiles[file] === undefined) testFiles[file] = { tests: [...names].map((name) => ({ id: canonical({ file, name }), name })), source: "" }
}
writeFileSync(path, JSON.stringify({ ...current, files, testFiles }, null, 2) + "\n")
