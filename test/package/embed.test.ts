/**
 * The docs' code, from the packed package (issue 32, "Docs out of step with the product"):
 * `npm pack` of a copy of the package's sources (its `prepack` builds the copy's dist/), the tarball unpacked into a fresh ESM project's
 * node_modules as `npm install` would place it, next to this repository's installed
 * packages (symlinked: the test runs offline and installs nothing), and then
 *
 * - README.md's library quick start (the first ```ts block under "## Quick start (library)")
 *   and docs/http-api.md's embedding program (the first ```ts block under "## Embedding the
 *   server") are compiled as they are by `tsc` under `tsc --init`'s strict configuration,
 *   which has `types: []`: no `@types/node` globals (`process`, `Buffer`) are in scope;
 * - the quick start runs with `node` and prints the tool call and the answer;
 * - the embedding program runs with `node` on a free `PORT`: `/health` answers, a run is
 *   served to its `done`, and SIGTERM stops it with exit code 0.
 *
 * test/package/install.test.ts checks the dependency declarations with a real `npm install`.
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { execFile, spawn } from "node:child_process"
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"
import { freePort } from "../utils/serverProcess.js"
import { openSse } from "../utils/sse.js"

const ROOT = fileURLToPath(new URL("../..", import.meta.url))
const TSC = join(ROOT, "node_modules/typescript/bin/tsc")
const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { name: string; version: string }

/** The first ```ts block under the heading `heading` of `file`. */
const codeBlock = (file: string, heading: string): string => {
  const text = readFileSync(join(ROOT, file), "utf8")
  const section = text.split(new RegExp(`^${heading.replace(/[()]/g, "\\$&")}\\s*$`, "m"))[1]
  const block = section === undefined ? undefined : /^```ts\n([\s\S]*?)^```/m.exec(section)?.[1]
  if (block === undefined) throw new Error(`${file}: no \`\`\`ts block under "${heading}"`)
  return block
}

interface Run {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Neither this run's configuration (vitest, npm, LLM_*, …) nor its PATH reach the child. */
const childEnv = (extra: Record<string, string> = {}): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (
      v === undefined ||
      /^(?:VITEST|npm_|NODE_CHANNEL|NODE_OPTIONS$|(?:FAST_)?LLM_|MCP_CONFIG$|REACT_|DATABASE_|PORT$|HOST$)/.test(k)
    ) continue
    env[k] = v
  }
  return { ...env, ...extra }
}

const run = (cwd: string, command: string, args: ReadonlyArray<string>, timeout = 120_000): Promise<Run> =>
  new Promise((resolve) => {
    execFile(command, args, { cwd, env: childEnv(), timeout, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === "number" ? error.code : null) : 0, stdout, stderr })
    })
  })

const ok = (result: Run, what: string): Run => {
  assert.strictEqual(result.code, 0, `${what} failed:\n${result.stdout}\n${result.stderr}`)
  return result
}

describe("the docs' code from the packed package (offline)", () => {
  let work = ""
  let app = ""
  const timings: Record<string, number> = {}
  const timed = async <A>(name: string, body: () => Promise<A>): Promise<A> => {
    const started = Date.now()
    try {
      return await body()
    } finally {
      timings[name] = Date.now() - started
    }
  }

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), "effect-react-engine-embed-"))
    // packed from a copy of the package's sources: its prepack build writes the copy's dist/, not
    // the checkout's, which another test (install.test.ts) may be packing at the same moment
    const source = join(work, "source")
    for (const entry of ["package.json", "README.md", "tsconfig.json", "tsconfig.build.json", "src", "scripts"]) {
      cpSync(join(ROOT, entry), join(source, entry), { recursive: true })
    }
    symlinkSync(join(ROOT, "node_modules"), join(source, "node_modules"))
    await timed(
      "npm pack (build included)",
      async () => ok(await run(source, "npm", ["pack", "--pack-destination", work, "--silent"], 240_000), "npm pack")
    )
    const tarball = join(work, `${pkg.name}-${pkg.version}.tgz`)
    app = join(work, "app")
    const modules = join(app, "node_modules")
    mkdirSync(join(app, "src"), { recursive: true })
    writeFileSync(
      join(app, "package.json"),
      JSON.stringify({ name: "embedder", private: true, type: "module" }, null, 2)
    )
    // where `npm install <tarball>` puts it; its dependencies and peers are this repository's installed ones
    mkdirSync(join(modules, pkg.name), { recursive: true })
    ok(await run(work, "tar", ["-xzf", tarball, "-C", join(modules, pkg.name), "--strip-components=1"]), "tar")
    for (const entry of readdirSync(join(ROOT, "node_modules"))) {
      if (entry === pkg.name || entry.startsWith(".")) continue
      symlinkSync(join(ROOT, "node_modules", entry), join(modules, entry))
    }
    // tsc --init's configuration as it is (strict, types: []), compiling src/ to dist/
    ok(await run(app, process.execPath, [TSC, "--init"]), "tsc --init")
    const file = join(app, "tsconfig.json")
    const read = ts.readConfigFile(file, ts.sys.readFile)
    if (read.error !== undefined) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, "\n"))
    const config = read.config as { compilerOptions: Record<string, unknown> }
    assert.deepStrictEqual(config.compilerOptions.types, [], "tsc --init puts no @types package in scope")
    config.compilerOptions = { ...config.compilerOptions, rootDir: "./src", outDir: "./dist" }
    writeFileSync(file, JSON.stringify(config, null, 2))
    writeFileSync(join(app, "src/quickstart.ts"), codeBlock("README.md", "## Quick start (library)"))
    writeFileSync(join(app, "src/embed.ts"), codeBlock("docs/http-api.md", "## Embedding the server"))
    await timed(
      "tsc",
      async () =>
        ok(
          await run(app, process.execPath, [TSC, "-p", "."]),
          "tsc (README quick start and the embedding program, as shown)"
        )
    )
  }, 420_000)

  afterAll(() => {
    console.log(
      `embed.test timings: ${Object.entries(timings).map(([k, v]) => `${k} ${(v / 1000).toFixed(1)} s`).join(", ")}`
    )
    if (work !== "") rmSync(work, { recursive: true, force: true })
  })

  it("README's quick start runs with plain node and prints the tool call and the answer", async () => {
    const result = await timed(
      "quick start",
      async () => ok(await run(app, process.execPath, ["dist/quickstart.js"], 60_000), "node dist/quickstart.js")
    )
    assert.match(result.stdout, /→ calculator/)
    assert.match(result.stdout, /12\*7\+1 = \*\*85\*\*/)
    assert.match(result.stdout, /\(2 iterations, \d+ tokens\)/)
  }, 90_000)

  it("the embedding program of docs/http-api.md serves a run and stops on SIGTERM", async () => {
    await timed("embedded server", async () => {
      const port = await freePort()
      const child = spawn(process.execPath, ["dist/embed.js"], {
        cwd: app,
        env: childEnv({ PORT: String(port), HOST: "127.0.0.1" }),
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout.on("data", (d) => (output += d.toString()))
      child.stderr.on("data", (d) => (output += d.toString()))
      const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
        child.once("exit", (code, signal) => resolve({ code, signal }))
      )
      try {
        const url = `http://127.0.0.1:${port}`
        const started = Date.now()
        for (;;) {
          const health = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) }).then(
            (r) => (r.ok ? r.json() : undefined),
            () => undefined
          )
          if (health !== undefined) {
            assert.strictEqual(health.demo, true)
            break
          }
          assert.isNull(child.exitCode, `the program exited:\n${output}`)
          assert.isBelow(Date.now() - started, 30_000, `no /health within 30 s:\n${output}`)
          await new Promise((r) => setTimeout(r, 100))
        }
        const stream = await openSse(`${url}/api/react`, {
          body: { query: "What is 12*7+1?", conversation_id: "embedded" },
          timeoutMs: 30_000
        })
        assert.strictEqual(stream.status, 200)
        const done = stream.events.at(-1)
        assert.strictEqual(done?.event, "done", output)
        assert.strictEqual(done?.data.answer, "12*7+1 = **85**")
        child.kill("SIGTERM")
        const exit = await Promise.race([exited, new Promise<"hung">((r) => setTimeout(() => r("hung"), 20_000))])
        assert.notStrictEqual(exit, "hung", `no exit within 20 s of SIGTERM:\n${output}`)
        assert.deepStrictEqual(exit, { code: 0, signal: null }, output)
      } finally {
        if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL")
      }
    })
  }, 90_000)
})
