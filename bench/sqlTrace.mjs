/**
 * Preload (`--import`) for bench/sqlCount.ts: counts every SQLite statement the
 * process executes through better-sqlite3 (the driver under
 * `@effect/sql-sqlite-node`), by its text, and every `prepare` (a statement
 * compiled again costs as much as a short statement run). Answers the IPC
 * message `{ type: "sqlcount" }` with `{ type: "sqlcount", runs, prepares }`
 * (cumulative, keyed by the statement's normalised text) and `spent`: the ms spent
 * inside the driver running statements (`run`, fsyncs included) and compiling them (`prepare`).
 */
import Database from "better-sqlite3"

const runs = new Map()
// time spent inside the driver (statement runs and prepares), ms
const spent = { run: 0, prepare: 0 }
const prepares = new Map()
const norm = (source) =>
  source.replace(/\s+/g, " ").replace(/(\?, ?){3,}\?/g, "?…").replace(/'[^']*'/g, "'…'").replace(/\d+/g, "N")
    .replace(/(N, ?){3,}N/g, "N…").trim().slice(0, 160)
const bump = (map, key) => map.set(key, (map.get(key) ?? 0) + 1)

const probe = new Database(":memory:")
const StatementProto = Object.getPrototypeOf(probe.prepare("SELECT 1"))
probe.close()
for (const method of ["run", "all", "get", "iterate"]) {
  const original = StatementProto[method]
  StatementProto[method] = function(...args) {
    bump(runs, norm(this.source))
    const t = performance.now()
    try {
      return original.apply(this, args)
    } finally {
      spent.run += performance.now() - t
    }
  }
}
const prepare = Database.prototype.prepare
Database.prototype.prepare = function(source, ...rest) {
  bump(prepares, norm(source))
  const t = performance.now()
  try {
    return prepare.call(this, source, ...rest)
  } finally {
    spent.prepare += performance.now() - t
  }
}
const exec = Database.prototype.exec
Database.prototype.exec = function(source) {
  bump(runs, norm(source))
  return exec.call(this, source)
}
process.on("message", (message) => {
  if (message?.type === "sqlcount") {
    process.send?.({
      type: "sqlcount",
      runs: Object.fromEntries(runs),
      prepares: Object.fromEntries(prepares),
      spent: { ...spent }
    })
  }
})
