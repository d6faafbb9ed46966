/**
 * The CLI's `--user` (docs/cli.md, docs/memory.md): the real CLI process on the
 * offline demo model, its memory in the SQLite file of `DATABASE_PATH` with
 * the local embedder. A turn of ada's is recalled in her next conversation,
 * not in bob's; without `--user` no memory event is sent; a bad user id is a
 * usage error.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import { parse } from "../src/app/cliArgs.js"

const ROOT = fileURLToPath(new URL("..", import.meta.url))

interface Line {
  readonly event: string
  readonly data: any
}

const cleanEnv = (): Record<string, string> => {
  const base: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(?:FAST_)?LLM_|^MCP_CONFIG$|^REACT_|^EMBEDDING_|^DATABASE_|^npm_/.test(k)) base[k] = v
  }
  return base
}

const cli = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<{ readonly code: number | null; readonly lines: Array<Line>; readonly stderr: string }>((resolve) => {
    execFile(
      process.execPath,
      ["--import", "tsx", "src/app/cli.ts", ...args],
      { cwd: ROOT, env: { ...cleanEnv(), ...env }, timeout: 120_000 },
      (error, stdout, stderr) => {
        const lines = stdout.trim() === "" ? [] : stdout.trim().split("\n").map((l) => JSON.parse(l) as Line)
        resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, lines, stderr })
      }
    )
  })

const memoryEvents = (lines: ReadonlyArray<Line>) => lines.filter((l) => l.event === "memory").map((l) => l.data)

describe("cli --user", () => {
  it("--user is checked like the API's user_id", () => {
    const ok = parse(["--user", "ada@example.com", "q"])
    assert.strictEqual(ok._tag === "Run" ? ok.options.userId : undefined, "ada@example.com")
    const none = parse(["q"])
    assert.isUndefined(none._tag === "Run" ? none.options.userId : "not a run")
    assert.strictEqual(parse(["--user", "ada lovelace", "q"])._tag, "Invalid")
    assert.strictEqual(parse(["--user", "x".repeat(129), "q"])._tag, "Invalid")
  })

  it("a turn of one user is recalled in their next conversation, never in another user's", async () => {
    const env = { DATABASE_PATH: join(mkdtempSync(join(tmpdir(), "cli-memory-")), "react.sqlite") }
    const told = await cli(
      ["--json", "--user", "ada", "--conversation", "ada-1", "what is 17*23 for my teal garden"],
      env
    )
    assert.strictEqual(told.code, 0, told.stderr)
    assert.deepStrictEqual(memoryEvents(told.lines), [{ type: "recalled", items: [] }])
    // one after the other: each process opens the same file
    const asked = await cli([
      "--json",
      "--user",
      "ada",
      "--conversation",
      "ada-2",
      "what is 17*23 for my teal garden again"
    ], env)
    const other = await cli([
      "--json",
      "--user",
      "bob",
      "--conversation",
      "bob-1",
      "what is 17*23 for my teal garden again"
    ], env)
    const nobody = await cli(["--json", "--conversation", "anon-1", "what is 17*23 for my teal garden again"], env)
    assert.strictEqual(asked.code, 0, asked.stderr)
    const recalled = memoryEvents(asked.lines).find((e) => e.type === "recalled")
    assert.deepStrictEqual(recalled?.items.map((i: any) => i.conversation_id), ["ada-1"])
    assert.isAbove(recalled?.items[0].score, 0.35)
    assert.strictEqual(other.code, 0, other.stderr)
    assert.deepStrictEqual(memoryEvents(other.lines), [{ type: "recalled", items: [] }])
    assert.strictEqual(nobody.code, 0, nobody.stderr)
    assert.deepStrictEqual(memoryEvents(nobody.lines), [])
  }, 400_000)

  it("a bad --user is a usage error (exit 2)", async () => {
    const run = await cli(["--user", "ada lovelace", "hi"], {})
    assert.strictEqual(run.code, 2)
    assert.include(run.stderr, "--user must be")
  }, 120_000)
})
