/**
 * A real MCP server over stdio whose tool has an effect that deduplicates on
 * the call's idempotency key, the way a payments API does: `pay {label, ms}`
 * (annotated `idempotentHint`) reads `_meta.idempotencyKey` from the request,
 * writes its effect row into a real SQLite table with a unique key
 * (`LEDGER_DB`, `INSERT … ON CONFLICT(key) DO NOTHING`), appends the attempt
 * to `ATTEMPTS_FILE` (one JSON line: `{label, key, fresh}`), then sleeps `ms`
 * before it answers — so a kill during the sleep lands after the effect was
 * written and before the engine stored the call's outcome. A request without
 * a key is refused (an error result) and writes nothing.
 *
 * It exits as soon as its parent goes (stdin closes).
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { appendFileSync } from "node:fs"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import { z } from "zod"

/** The part of better-sqlite3 used here (the package ships no types). */
export interface SqliteDatabase {
  readonly pragma: (source: string) => unknown
  readonly exec: (source: string) => void
  readonly prepare: (source: string) => {
    readonly run: (...params: ReadonlyArray<unknown>) => { readonly changes: number }
    readonly all: (...params: ReadonlyArray<unknown>) => ReadonlyArray<Record<string, unknown>>
  }
  readonly close: () => void
}

/** Opens a SQLite file with better-sqlite3. */
export const openSqlite = (path: string): SqliteDatabase => {
  const Database = createRequire(import.meta.url)("better-sqlite3") as new(path: string) => SqliteDatabase
  const db = new Database(path)
  db.pragma("busy_timeout = 5000")
  return db
}

/** Opens (creating) the ledger database with its table. */
export const openLedger = (path: string): SqliteDatabase => {
  const db = openSqlite(path)
  db.exec("CREATE TABLE IF NOT EXISTS ledger (key TEXT PRIMARY KEY, label TEXT NOT NULL)")
  return db
}

/** One attempt of `pay`, as `ATTEMPTS_FILE` records it. */
export interface Attempt {
  readonly label: string
  readonly key: string
  /** True when this attempt wrote the effect row (false: the key was there already). */
  readonly fresh: boolean
}

const main = async () => {
  const db = openLedger(process.env.LEDGER_DB ?? ":memory:")
  const attempts = process.env.ATTEMPTS_FILE ?? "/dev/null"
  const insert = db.prepare("INSERT INTO ledger (key, label) VALUES (?, ?) ON CONFLICT(key) DO NOTHING")

  const server = new McpServer({ name: "ledger", version: "1.0.0" })
  server.registerTool("pay", {
    description: "Pays a label once per idempotency key (a side effect, deduplicated)",
    inputSchema: { label: z.string(), ms: z.number() },
    annotations: { idempotentHint: true, readOnlyHint: false }
  }, async ({ label, ms }, extra) => {
    const key = extra._meta?.idempotencyKey
    if (typeof key !== "string" || key === "") {
      return { isError: true, content: [{ type: "text" as const, text: "no idempotency key in _meta" }] }
    }
    const fresh = insert.run(key, label).changes === 1
    appendFileSync(attempts, JSON.stringify({ label, key, fresh } satisfies Attempt) + "\n")
    await new Promise((resolve) => setTimeout(resolve, ms))
    return { content: [{ type: "text" as const, text: `paid ${label}` }] }
  })

  process.stdin.on("end", () => process.exit(0))
  process.stdin.on("close", () => process.exit(0))
  await server.connect(new StdioServerTransport())
}

// a test imports it for `openLedger`: only the process started with this file serves
if (process.argv[1] === fileURLToPath(import.meta.url)) await main()
