/**
 * The published package, as an embedder gets it: `npm pack` (which builds dist/
 * through `prepack`), the tarball installed into a fresh ESM project with EXACTLY the
 * commands README.md's "Installing the library" shows (its ```sh blocks, taken verbatim,
 * the package name standing for the tarball): the library line first, after which the
 * main entry must import; then the server entry's line, after which the server entry must
 * import. Only then the embedder's own tools (TypeScript, vitest): the embedder's code
 * compiled by `tsc` under `tsc --init`'s strict config and run by plain `node` (no tsx),
 * and a vitest suite of theirs that uses `ScriptedLlm`. Slow (about a minute and a half:
 * a build, an install from the npm cache, a type check of the consumer's whole dependency tree).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { rm } from "node:fs/promises"
import { tmpdir } from "node:os"
import { delimiter, join } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

// ---------------------------------------------------------------------------
// The quick start compiled and run is the first ```ts block under
// "## Quick start (library)" in README.md, taken verbatim (it runs offline on DemoLlm).
/** What the quick start must print (each pattern somewhere in its stdout). */
const QUICK_START_OUTPUT: ReadonlyArray<RegExp> = [/→ calculator/, /\b85\b/, /\(2 iterations, \d+ tokens\)/]
// ---------------------------------------------------------------------------

/** The embedder's one-test suite, run by their vitest straight from TypeScript. */
const AGENT_TEST = `import { assert, describe, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { BuiltinTools, ContextGuard, Hooks, Interrupts, ReactAgent, ScriptedLlm, Toolkit } from "effect-react-engine"

describe("my agent", () => {
  it.effect("calls the calculator, then answers", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([
        ScriptedLlm.toolCall("calculator", { expression: "12*7+1" }),
        ScriptedLlm.text("12*7+1 = **85**")
      ])
      const agent = ReactAgent.layer({ completionCheck: false }).pipe(
        Layer.provide(Layer.mergeAll(
          llm.layer,
          Toolkit.layer(BuiltinTools.tools),
          Hooks.layerNoop,
          ContextGuard.layer(),
          Interrupts.layerMemory
        ))
      )
      const result = yield* Effect.flatMap(ReactAgent.ReactAgent, (a) => a.runCollect({ query: "What is 12*7+1?" }))
        .pipe(Effect.provide(agent))
      assert.strictEqual(result.answer, "12*7+1 = **85**")
      const step = result.steps[0]
      assert.strictEqual(step?.tool_name, "calculator")
      assert.include(step?.observation, "85")
      // synthesis policy auto: the loop calls stream, the final reply is the answer
      assert.deepStrictEqual(llm.requests.map((r) => r.method), ["stream", "stream"])
    }))
})
`

/** The server entry: loads (platform, SQLite client…) and finds its web assets next to dist/. */
const SERVER_CHECK = `import { existsSync } from "node:fs"
import { Database, ServerConfig, WebPage } from "effect-react-engine/server"
import { Effect, Layer, Redacted } from "effect"

const assets = WebPage.webAssets()
const missing = assets.filter((asset) => !existsSync(asset.file)).map((asset) => asset.file)
if (missing.length > 0) throw new Error(\`missing web assets: \${missing.join(", ")}\`)
if (!assets.some((asset) => asset.route === "/") || !assets.some((asset) => asset.route === "/assets/app.js")) {
  throw new Error(\`unexpected web assets: \${assets.map((asset) => asset.route).join(", ")}\`)
}
if (typeof ServerConfig.ServerConfig !== "function") throw new Error("ServerConfig.ServerConfig is not exported")

const internal: string = "effect-react-engine/internal/reactAgent/run.js"
const blocked = await import(internal).then(() => "importable", (e: { code?: string }) => e.code ?? String(e))
console.log(\`server entry: \${assets.length} web assets; internal modules: \${blocked}\`)

// without the optional @effect/sql-pg installed, a PostgreSQL URL is a clear error (SQLite needs nothing more)
const pg = await Effect.runPromise(Layer.launch(Database.layer({ _tag: "Postgres", url: Redacted.make("postgres://127.0.0.1:1/x") })).pipe(
  Effect.flip,
  Effect.map((e) => e.message)
))
console.log(\`postgres without @effect/sql-pg: \${pg}\`)
`

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as {
  name: string
  version: string
  peerDependencies: Record<string, string>
}
const lock = JSON.parse(readFileSync(join(ROOT, "package-lock.json"), "utf8")) as {
  packages: Record<string, { version?: string }>
}
const locked = (name: string): string => {
  const version = lock.packages[`node_modules/${name}`]?.version
  if (version === undefined) throw new Error(`${name} is not in package-lock.json`)
  return `${name}@${version}`
}

/** The embedder's own tools, not the engine's dependencies: installed after README's commands. */
const CONSUMER_TOOLS = ["typescript", "@types/node", "vitest", "@effect/vitest"].map(locked)

/**
 * README.md's install commands: the `npm install …` lines of the ```sh blocks under
 * "## Installing the library", in order, split into words (the library line, then the server's).
 */
const readmeInstalls = (): ReadonlyArray<ReadonlyArray<string>> => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8")
  const section = readme.split(/^## Installing the library\s*$/m)[1]?.split(/^## /m)[0] ?? ""
  const commands = [...section.matchAll(/^```sh\n([\s\S]*?)^```/gm)]
    .flatMap((block) => (block[1] ?? "").split("\n"))
    .filter((line) => line.startsWith("npm install "))
    .map((line) => line.split(/\s+/).filter((word) => word !== ""))
  if (commands.length !== 2) {
    throw new Error(
      `README.md: expected 2 npm install lines under "## Installing the library", found ${commands.length}`
    )
  }
  return commands
}

/** Imports `specifier` in `cwd` with plain node: the names it exports, or node's error. */
const importEntry = (cwd: string, specifier: string): Promise<Run> =>
  run(cwd, process.execPath, [
    "--input-type=module",
    "-e",
    `const m = await import(${JSON.stringify(specifier)}); console.log(Object.keys(m).sort().join(","))`
  ], 60_000)

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

// The child processes see neither this run (vitest's, npm's, this repo's node_modules/.bin)
// nor the engine's configuration: the quick start must work with nothing set.
const childEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined) continue
    if (/^(?:VITEST|npm_|INIT_CWD$|NODE_ENV$|NODE_OPTIONS$|(?:FAST_)?LLM_|MCP_CONFIG$|REACT_|CONTEXT_GUARD_)/.test(k)) {
      continue
    }
    env[k] = v
  }
  env.PATH = (process.env.PATH ?? "").split(delimiter).filter((p) => !p.includes("node_modules")).join(delimiter)
  return env
}

const run = (cwd: string, command: string, args: ReadonlyArray<string>, timeout = 240_000): Promise<Run> =>
  new Promise((resolve) => {
    execFile(command, args, { cwd, env: childEnv(), timeout, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr })
    })
  })

const ok = (result: Run, what: string): Run => {
  assert.strictEqual(result.code, 0, `${what} failed:\n${result.stdout}\n${result.stderr}`)
  return result
}

const quickStart = (): string => {
  const readme = readFileSync(join(ROOT, "README.md"), "utf8")
  const section = readme.split(/^## Quick start \(library\)\s*$/m)[1]
  const block = section === undefined ? undefined : /^```ts\n([\s\S]*?)^```/m.exec(section)?.[1]
  if (block === undefined) throw new Error("README.md: no ```ts block under \"## Quick start (library)\"")
  return block
}

/** `tsc --init`'s config (TypeScript 5.9: strict, noUncheckedIndexedAccess, exactOptionalPropertyTypes,
 * verbatimModuleSyntax…) with Node's types (`types: []` otherwise) and the library check on, so the
 * package's own .d.ts are checked too under these options. `lib` stays tsc's default for the target
 * (with DOM): with `lib: ["esnext"]`, @effect/platform's own .d.ts fail the library check. */
const strictTsconfig = (dir: string): void => {
  const file = join(dir, "tsconfig.json")
  const read = ts.readConfigFile(file, ts.sys.readFile)
  if (read.error !== undefined) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, "\n"))
  const config = read.config as { compilerOptions: Record<string, unknown> }
  assert.strictEqual(config.compilerOptions.strict, true)
  config.compilerOptions = {
    ...config.compilerOptions,
    module: "nodenext",
    moduleResolution: "nodenext",
    noUncheckedIndexedAccess: true,
    types: ["node"],
    rootDir: "./src",
    outDir: "./dist",
    skipLibCheck: false
  }
  writeFileSync(file, JSON.stringify(config, null, 2))
}

describe("the published package", () => {
  let work = ""
  let tarball = ""
  let app = ""
  let libraryImport: Run = { code: null, stdout: "", stderr: "not run" }
  let serverImport: Run = { code: null, stdout: "", stderr: "not run" }

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "effect-react-engine-package-"))
    ok(await run(ROOT, "npm", ["pack", "--pack-destination", work, "--silent"]), "npm pack")
    const file = readdirSync(work).find((name) => name.endsWith(".tgz"))
    assert.strictEqual(file, `${pkg.name}-${pkg.version}.tgz`)
    tarball = join(work, file ?? "")

    app = join(work, "app")
    mkdirSync(join(app, "src"), { recursive: true })
    writeFileSync(
      join(app, "package.json"),
      JSON.stringify({ name: "embedder", version: "1.0.0", private: true, type: "module" }, null, 2)
    )
    // --ignore-scripts: the tarball has no install scripts; this skips the native build of
    // better-sqlite3 (the SQLite driver, never opened here).
    // README's commands as written, the package name standing for the tarball. The flags only
    // change how, not what, npm installs: from the cache when it can, no audit, and no install
    // scripts (the native build of better-sqlite3, the SQLite driver, never opened here).
    const flags = ["--prefer-offline", "--no-audit", "--no-fund", "--ignore-scripts"]
    const [library = [], server = []] = readmeInstalls()
    const asWritten = (command: ReadonlyArray<string>) =>
      command.slice(1).map((word) => (word === pkg.name ? tarball : word))
    ok(await run(app, "npm", [...asWritten(library), ...flags]), library.join(" "))
    libraryImport = await importEntry(app, pkg.name)
    ok(await run(app, "npm", [...asWritten(server), ...flags]), server.join(" "))
    serverImport = await importEntry(app, `${pkg.name}/server`)
    ok(await run(app, "npm", ["install", ...flags, ...CONSUMER_TOOLS]), "npm install (the embedder's tools)")
    ok(await run(app, process.execPath, [join(app, "node_modules/typescript/bin/tsc"), "--init"]), "tsc --init")
    strictTsconfig(app)
    writeFileSync(join(app, "src/quickstart.ts"), quickStart())
    writeFileSync(join(app, "src/server.ts"), SERVER_CHECK)
    writeFileSync(join(app, "src/agent.test.ts"), AGENT_TEST)
  }, 420_000)

  // asynchronous: removing the consumer's node_modules takes a minute on a loaded machine, and a
  // synchronous rm blocks the worker (its reports to vitest time out) for all that time
  afterAll(async () => {
    if (work !== "") await rm(work, { recursive: true, force: true })
  }, 300_000)

  it("README's library install gives a main entry that imports; its server line, a server entry that imports", () => {
    const library = readmeInstalls()[0]?.join(" ")
    assert.strictEqual(
      libraryImport.code,
      0,
      `after \`${library}\`, import("${pkg.name}") failed:\n${libraryImport.stderr}`
    )
    assert.include(libraryImport.stdout.split(","), "ReactAgent")
    const server = readmeInstalls()[1]?.join(" ")
    assert.strictEqual(
      serverImport.code,
      0,
      `after \`${server}\`, import("${pkg.name}/server") failed:\n${serverImport.stderr}`
    )
    assert.include(serverImport.stdout.trim().split(","), "Server")
  })

  it("holds the build, the types and the web assets; no tests, bench, CI or app", async () => {
    const files = ok(await run(work, "tar", ["-tzf", tarball]), "tar").stdout.split("\n").filter((f) => f !== "")
    for (
      const file of [
        "package.json",
        "README.md",
        "dist/index.js",
        "dist/index.d.ts",
        "dist/server/index.js",
        "dist/server/index.d.ts",
        "dist/web/index.html",
        "dist/web/app.js",
        "dist/bin/react-engine.js"
      ]
    ) {
      assert.include(files, `package/${file}`)
    }
    const unwanted = files.filter((f) =>
      /^package\/(?:test|bench|docs|scripts|\.ci|node_modules|src\/app|dist\/app)\//.test(f) ||
      /\.test\.|tsconfig/.test(f)
    )
    assert.deepStrictEqual(unwanted, [])
    assert.strictEqual(existsSync(join(app, "node_modules/effect-react-engine/dist/index.d.ts")), true)
  })

  it("the embedder's code type-checks under tsc --init's strict config (noUncheckedIndexedAccess)", async () => {
    ok(await run(app, process.execPath, [join(app, "node_modules/typescript/bin/tsc"), "-p", "."]), "tsc")
    assert.strictEqual(existsSync(join(app, "dist/quickstart.js")), true)
  }, 300_000)

  it("the quick start runs with plain node, offline", async () => {
    const result = ok(await run(app, process.execPath, ["dist/quickstart.js"], 60_000), "node dist/quickstart.js")
    for (const pattern of QUICK_START_OUTPUT) assert.match(result.stdout, pattern)
  }, 120_000)

  it("the server entry loads and serves its web assets from the package; internals stay private", async () => {
    const result = ok(await run(app, process.execPath, ["dist/server.js"], 60_000), "node dist/server.js")
    assert.match(result.stdout, /server entry: \d+ web assets; internal modules: ERR_PACKAGE_PATH_NOT_EXPORTED/)
    assert.include(
      result.stdout,
      "postgres without @effect/sql-pg: DATABASE_URL is a PostgreSQL URL but @effect/sql-pg is not installed"
    )
  }, 120_000)

  it("the package's binary runs the example eval suite offline (node_modules/.bin/react-engine eval)", async () => {
    const evals = join(app, "evals")
    mkdirSync(evals, { recursive: true })
    for (const file of ["cases.jsonl", "calculator.cassette.json"]) {
      writeFileSync(join(evals, file), readFileSync(join(ROOT, "examples/evals", file)))
    }
    const bin = join(app, "node_modules/.bin/react-engine")
    const result = ok(
      await run(app, bin, ["eval", "evals/cases.jsonl", "--report", "evals/report.json"], 120_000),
      "react-engine eval"
    )
    assert.match(result.stdout, /5\/5 passed, mean score 0\.900/)
    const report = JSON.parse(readFileSync(join(evals, "report.json"), "utf8")) as { summary: { passed: number } }
    assert.strictEqual(report.summary.passed, 5)
    assert.strictEqual(existsSync(join(evals, "report.html")), true)
    const low = await run(app, bin, ["eval", "evals/cases.jsonl", "--min-score", "0.95"], 120_000)
    assert.strictEqual(low.code, 1, low.stderr)
  }, 300_000)

  it("the embedder's vitest suite passes with ScriptedLlm", async () => {
    const result = ok(
      await run(app, process.execPath, [join(app, "node_modules/vitest/vitest.mjs"), "run", "src"], 120_000),
      "vitest run"
    )
    assert.match(result.stdout.replace(/\x1b\[[0-9;]*m/g, ""), /Tests\s+1 passed/)
  }, 180_000)

  it("a project on effect@4 gets npm's peer-dependency error, not a crash at run time", async () => {
    const v4 = join(work, "on-effect-4")
    mkdirSync(v4)
    writeFileSync(
      join(v4, "package.json"),
      JSON.stringify({ name: "on-effect-4", version: "1.0.0", private: true, dependencies: { effect: "^4.0.0" } })
    )
    const result = await run(v4, "npm", [
      "install",
      "--dry-run",
      "--prefer-offline",
      "--no-audit",
      "--no-fund",
      tarball
    ])
    assert.notStrictEqual(result.code, 0)
    assert.include(result.stderr, "ERESOLVE")
    assert.include(result.stderr, `peer effect@"${pkg.peerDependencies.effect}" from ${pkg.name}@${pkg.version}`)
  }, 120_000)
})
