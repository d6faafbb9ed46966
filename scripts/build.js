// `npm run build` (also run by `prepack`): the published package in dist/.
// - a clean dist/ (no stale files from renamed modules end up in the tarball);
// - tsc over src/ minus src/app (tsconfig.build.json): ESM .js, .d.ts, declaration and source maps;
// - the web page's static files next to the compiled server: WebPage.ts reads them from
//   `../web/` relative to itself, i.e. src/web when run from source, dist/web when installed.
//
// - the package's binary (package.json `bin`: `react-engine eval`) in dist/bin/: src/app/react-engine.ts
//   and the app files it imports (eval.ts, App.ts), each transpiled on its own (type-checked by
//   `tsc --noEmit` like all of src/). Their imports of the library (`../Eval.js`, `../server/…`)
//   land on dist/ as they land on src/, one folder up. Only these files: the bundled server
//   application (src/app/main.ts and the rest) is not part of the package.
//
// `node scripts/build.js --app` (what `npm start` runs when the build is stale, scripts/start.js):
// the server application, src/ with src/app → build/ (scripts/tsconfig.app.json: JavaScript and
// source maps, no declarations), so `node build/app/main.js` is the server in plain JavaScript.
// A directory of its own, not dist/: the package never ships the app (dist/ is what `npm pack`
// takes), and a package build (`npm pack`, `npm run bench`) that empties dist/ must not pull the
// files from under a server that runs, nor pick up the app's files in the tarball. build/ ignores
// itself for git (build/.gitignore).
//
// build/.build-stamp records when the last complete app build started; scripts/start.js compares
// it with the sources' modification times. It is written last: a build that failed or was stopped
// leaves none, so the next start builds again.
import { spawn } from "node:child_process"
import { chmodSync, cpSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { fileURLToPath, pathToFileURL } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const dist = fileURLToPath(new URL("../dist/", import.meta.url))
/** Where `--app` builds the server application: build/app/main.js is its entry. */
export const appDir = fileURLToPath(new URL("../build/", import.meta.url))
const require = createRequire(import.meta.url)
const tsc = require.resolve("typescript/bin/tsc")

/** build/.build-stamp: `{ started }`, when the last complete app build started. */
export const stampFile = `${appDir}.build-stamp`

/**
 * Builds dist/ (the package) or, with `app`, build/ (the server application) from scratch.
 * `signal` stops the compiler (the promise then rejects, and an app build is left without a
 * stamp, i.e. stale).
 *
 * @param {{ readonly app?: boolean, readonly signal?: AbortSignal }} [options]
 * @returns {Promise<void>}
 */
export const build = async (options = {}) => {
  const app = options.app === true
  const out = app ? appDir : dist
  // sources changed while tsc runs are newer than this, so they count as not built
  const started = Date.now()
  rmSync(out, { recursive: true, force: true })
  if (app) {
    mkdirSync(out, { recursive: true })
    writeFileSync(`${out}.gitignore`, "# the server application, built by `npm start` (scripts/build.js --app)\n*\n")
  }
  const project = app ? fileURLToPath(new URL("./tsconfig.app.json", import.meta.url)) : "tsconfig.build.json"
  await new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [tsc, "-p", project], { cwd: root, stdio: "inherit", signal: options.signal })
    child.once("error", reject)
    child.once(
      "exit",
      (code, signal) =>
        code === 0
          ? resolve(undefined)
          : reject(new Error(`tsc -p ${project} failed (${signal ?? `exit code ${code}`})`))
    )
  })
  cpSync(fileURLToPath(new URL("../src/web/", import.meta.url)), `${out}web`, { recursive: true })
  if (!app) buildBin()
  if (app) writeFileSync(stampFile, JSON.stringify({ started }) + "\n")
}

/** The binary's entry in src/app/; dist/bin/ gets it and every src/app file it imports (transitively). */
const binEntry = "react-engine.ts"

/** src/app/react-engine.ts and its src/app imports → dist/bin/*.js (ES modules, the shebang kept, made executable). */
const buildBin = () => {
  const ts = require("typescript")
  const appSrc = fileURLToPath(new URL("../src/app/", import.meta.url))
  const binDir = `${dist}bin/`
  mkdirSync(binDir, { recursive: true })
  const pending = [binEntry]
  const done = new Set()
  while (pending.length > 0) {
    const file = pending.pop()
    if (done.has(file)) continue
    done.add(file)
    const source = readFileSync(`${appSrc}${file}`, "utf8")
    for (const { fileName } of ts.preProcessFile(source, true, true).importedFiles) {
      const local = /^\.\/([^/]+)\.js$/.exec(fileName)
      if (local) pending.push(`${local[1]}.ts`)
    }
    const { outputText } = ts.transpileModule(source, {
      fileName: file,
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false }
    })
    const out = `${binDir}${file.replace(/\.ts$/, ".js")}`
    writeFileSync(out, outputText)
    if (file === binEntry) chmodSync(out, 0o755)
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  build({ app: process.argv.includes("--app") }).catch((error) => {
    console.error(error instanceof Error ? error.message : error)
    process.exitCode = 1
  })
}
