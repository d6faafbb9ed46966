// `npm start`: the server as compiled JavaScript, in this very process.
//
// 1. When the build is stale — no build/app/main.js, or a file of src/ (or a build setting)
//    changed after the last complete build started (build/.build-stamp) — it builds first:
//    `node scripts/build.js --app`, src/ → build/, some seconds. Two starts at once (two
//    instances on one checkout) do not build over each other: the build holds a lock, and the
//    second one waits for it and then finds the build fresh.
// 2. Then it imports build/app/main.js, so the process npm started is the server itself. npm
//    forwards SIGTERM / SIGINT to its child, the script's shell, and a shell that runs a command
//    dies of SIGTERM without passing it on (dash, Debian's sh, does not exec a lone command): the
//    server was left running, reparented, its port held. Hence `exec node scripts/start.js` in
//    package.json — the shell becomes this process, which gets npm's signal and stops gracefully.
//
// `node build/app/main.js` is the same server without the staleness check (for a container or a
// process manager that runs what was built beforehand). `--build-only` builds when stale and
// exits (e.g. in an image's build step).
import { mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import { appDir, build, stampFile } from "./build.js"

const root = fileURLToPath(new URL("..", import.meta.url))
const main = join(appDir, "app/main.js")
const src = join(root, "src")
// what the build reads besides src/
const settings = [
  "package.json",
  "tsconfig.json",
  "tsconfig.build.json",
  "scripts/tsconfig.app.json",
  "scripts/build.js"
]
  .map((file) => join(root, file))
const lock = join(root, "node_modules/.cache/effect-react-engine/build.lock")

const mtime = (path) => {
  try {
    return statSync(path).mtimeMs
  } catch {
    return undefined
  }
}

/** The newest modification time under `dir` (directories included: a deleted file touches its directory). */
const newest = (dir) => {
  let latest = mtime(dir) ?? 0
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    latest = Math.max(latest, entry.isDirectory() ? newest(path) : mtime(path) ?? 0)
  }
  return latest
}

/** Why src/ must be built before the server starts, or undefined when the build is up to date. */
const staleness = () => {
  if (mtime(main) === undefined) return "build/app/main.js does not exist"
  let started
  try {
    started = JSON.parse(readFileSync(stampFile, "utf8")).started
  } catch {
    return "the last build did not complete"
  }
  if (typeof started !== "number") return "the last build did not complete"
  // a copy without sources (built beforehand, the sources left out) is as fresh as it gets
  if (mtime(src) === undefined) return undefined
  if (newest(src) > started) return "src/ changed since the last build"
  if (settings.some((file) => (mtime(file) ?? 0) > started)) return "the build settings changed since the last build"
  return undefined
}

const alive = (pid) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return error.code === "EPERM"
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Runs `f` holding the build lock (a directory: created atomically), taken over from a holder that died. */
const withLock = async (f, signal) => {
  mkdirSync(join(lock, ".."), { recursive: true })
  let said = false
  for (;;) {
    signal.throwIfAborted()
    try {
      mkdirSync(lock)
      writeFileSync(join(lock, "pid"), String(process.pid))
      break
    } catch (error) {
      if (error.code !== "EEXIST") throw error
    }
    let holder
    try {
      holder = Number(readFileSync(join(lock, "pid"), "utf8"))
    } catch {
      // just created, the pid not written yet; or left empty by a holder killed at that instant
      holder = Date.now() - (mtime(lock) ?? 0) > 10_000 ? 0 : undefined
    }
    if (holder !== undefined && !(holder > 0 && alive(holder))) {
      rmSync(lock, { recursive: true, force: true })
      continue
    }
    if (!said) process.stderr.write("Another `npm start` is building the server: waiting for it\n")
    said = true
    await sleep(250)
  }
  try {
    return await f()
  } finally {
    rmSync(lock, { recursive: true, force: true })
  }
}

/** Builds when stale; a SIGTERM / SIGINT meanwhile stops the compiler and this process. */
const buildIfStale = async () => {
  if (staleness() === undefined) return
  const abort = new AbortController()
  let stoppedBy
  const stop = (signal) => {
    stoppedBy = signal
    abort.abort()
  }
  process.on("SIGTERM", stop)
  process.on("SIGINT", stop)
  try {
    await withLock(async () => {
      // another start may have built it while this one waited
      const why = staleness()
      if (why === undefined || stoppedBy !== undefined) return
      process.stderr.write(`Building the server into build/ (${why}): node scripts/build.js --app\n`)
      const began = Date.now()
      await build({ app: true, signal: abort.signal })
      process.stderr.write(`Built in ${((Date.now() - began) / 1000).toFixed(1)} s\n`)
    }, abort.signal)
  } catch (error) {
    if (stoppedBy === undefined) throw error
  } finally {
    process.off("SIGTERM", stop)
    process.off("SIGINT", stop)
  }
  if (stoppedBy !== undefined) {
    // die of the signal, as without a handler (npm reports it as such)
    process.kill(process.pid, stoppedBy)
    await sleep(1000)
  }
}

try {
  await buildIfStale()
} catch (error) {
  process.stderr.write(
    `npm start: the build failed, the server was not started\n${error instanceof Error ? error.message : error}\n`
  )
  process.exit(1)
}
if (process.argv.includes("--build-only")) process.exit(0)
// the build has source maps: NODE_OPTIONS=--enable-source-maps makes stack traces name the
// TypeScript sources (not on by default: it makes every read of an error's stack slower)
await import(pathToFileURL(main).href)
