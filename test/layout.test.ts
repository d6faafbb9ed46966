/**
 * The layout rules of docs/architecture.md, enforced: dependency-cruiser checks the import
 * rules of .dependency-cruiser.cjs (library never imports server/app, internal folders only
 * from the module they serve, no value import cycles); this file judges the type-only cycles
 * it reports and the size of every module.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { promisify } from "node:util"

const root = path.resolve(import.meta.dirname, "..")

interface Violation {
  readonly from: string
  readonly to: string
  readonly rule: { readonly name: string; readonly severity: string }
  readonly cycle?: ReadonlyArray<{ readonly name: string } | string>
}

const cruise = async (): Promise<ReadonlyArray<Violation>> => {
  const bin = path.join(root, "node_modules", "dependency-cruiser", "bin", "dependency-cruise.mjs")
  // exit code 1 with violations: the JSON report is on stdout either way
  const { stdout } = await promisify(execFile)(process.execPath, [bin, "src", "--output-type", "json"], {
    cwd: root,
    maxBuffer: 64 * 1024 * 1024
  }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? "" }))
  return JSON.parse(stdout).summary.violations
}

/** The family of a module: `src/<X>.ts` and `src/internal/<x>/…` share the key `x`. */
const family = (file: string): string | undefined => {
  const internal = /^src\/internal\/([^/]+)\//.exec(file)
  if (internal) return internal[1].toLowerCase()
  const top = /^src\/([A-Za-z]+)\.ts$/.exec(file)
  return top ? top[1].toLowerCase() : undefined
}

/**
 * Type-only cycles between public modules whose types name each other, kept on purpose:
 * each pair is one vocabulary split over two modules for size, and a value import runs in
 * one direction only.
 */
const allowedTypeCycles: ReadonlyArray<readonly [string, string, string]> = [
  [
    "src/RunEvent.ts",
    "src/Tool.ts",
    "a tool's rich result (Artifact) is part of the ToolDone event; a tool's context can emit events"
  ],
  ["src/Hooks.ts", "src/Tool.ts", "a hook sees the tool it guards; a tool's handler receives the hook's use context"],
  [
    "src/AgentTool.ts",
    "src/ReactAgent.ts",
    "an agent as a tool takes the agent's run input; ReactAgent.asTool builds it"
  ]
]

/** Modules over the 400-line rule, each with the issue that splits it (none left). */
const allowedLong: Record<string, string> = {}

const srcFiles = (dir: string): ReadonlyArray<string> =>
  fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? srcFiles(path.join(dir, entry.name))
      : entry.name.endsWith(".ts")
      ? [path.join(dir, entry.name)]
      : []
  )

describe("layout rules (docs/architecture.md)", () => {
  it("dependency-cruiser: no import breaks a rule; type-only cycles stay inside a module's family", {
    timeout: 120_000
  }, async () => {
    const violations = await cruise()
    const errors = violations.filter((v) => v.rule.severity === "error").map((v) =>
      `${v.rule.name}: ${v.from} → ${v.to}`
    )
    assert.deepStrictEqual(errors, [])
    const strayCycles = violations
      .filter((v) => v.rule.name === "type-only-circular")
      .map((v) => (v.cycle ?? []).map((c) => (typeof c === "string" ? c : c.name)))
      .filter((cycle) => {
        const families = new Set(cycle.map(family))
        if (families.size === 1 && !families.has(undefined)) return false
        // an allowed pair, directly or through the pair's own internal files
        return !allowedTypeCycles.some(([a, b]) =>
          families.size === 2 && families.has(family(a)) && families.has(family(b)) && cycle.includes(a) &&
          cycle.includes(b)
        )
      })
      .map((cycle) => cycle.join(" → "))
    assert.deepStrictEqual(strayCycles, [])
  })

  it("no module over 400 lines, except the listed ones", () => {
    const long = srcFiles("src")
      .map((file) => [file, fs.readFileSync(path.join(root, file), "utf8").split("\n").length - 1] as const)
      .filter(([file, lines]) => lines > 400 && !(file in allowedLong))
      .map(([file, lines]) => `${file}: ${lines} lines`)
    assert.deepStrictEqual(long, [])
  })
})
