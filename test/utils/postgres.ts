/**
 * A real PostgreSQL server for the tests that need one. When `TEST_PG_URL` is
 * set (CI's `.ci/run` starts a server and sets it), each test database is
 * created on that server. Otherwise the Debian/Ubuntu binaries
 * (`/usr/lib/postgresql/<version>/bin`, or `PG_BIN`) give a fresh cluster in a
 * temporary directory on a free port of 127.0.0.1, started for the test file and
 * stopped (and removed) after it. PostgreSQL refuses to run as root: as
 * root, the cluster belongs to the `postgres` user and its commands run through
 * `runuser`. When PostgreSQL is not installed, `findPostgres` says so and the
 * tests that need it are skipped with that message (CI installs it).
 */
import { execFileSync, spawnSync } from "node:child_process"
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { freePort } from "./serverProcess.js"

/** Where the binaries are, or why there are none. */
export const findPostgres = (): { readonly bin: string } | { readonly missing: string } => {
  const candidates = process.env.PG_BIN ? [process.env.PG_BIN] : (() => {
    try {
      return readdirSync("/usr/lib/postgresql").sort().reverse().map((v) => `/usr/lib/postgresql/${v}/bin`)
    } catch {
      return []
    }
  })()
  const bin = candidates.find((dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl")))
  return bin !== undefined
    ? { bin }
    : {
      missing:
        "PostgreSQL is not installed (no initdb in /usr/lib/postgresql/*/bin or PG_BIN): the multi-instance tests are skipped. Install it with `apt-get install -y postgresql`."
    }
}

export interface Postgres {
  /** `postgres://postgres@127.0.0.1:<port>/<database>` for a new database. */
  readonly createDatabase: (name: string) => string
  readonly stop: () => void
}

const asRoot = typeof process.getuid === "function" && process.getuid() === 0

/** Runs a PostgreSQL command (as the `postgres` user when we are root). */
const run = (bin: string, command: string, args: ReadonlyArray<string>) => {
  const file = join(bin, command)
  const result = asRoot
    ? spawnSync("runuser", ["-u", "postgres", "--", file, ...args], { encoding: "utf8" })
    : spawnSync(file, args, { encoding: "utf8" })
  if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed: ${result.stderr || result.stdout}`)
  return result.stdout
}

/** Databases on the server of `TEST_PG_URL` (left running: its owner stops it). */
const onServer = (bin: string, url: string): Postgres => ({
  createDatabase: (name) => {
    const unique = `${name}_${process.pid}_${Date.now()}`
    execFileSync(join(bin, "psql"), [url, "-v", "ON_ERROR_STOP=1", "-c", `CREATE DATABASE "${unique}"`], {
      stdio: "pipe"
    })
    const target = new URL(url)
    target.pathname = `/${unique}`
    return target.toString()
  },
  stop: () => undefined
})

/** Initialises and starts a cluster (or uses `TEST_PG_URL`'s server); `stop()` stops and removes it. */
export const startPostgres = async (bin: string): Promise<Postgres> => {
  if (process.env.TEST_PG_URL) return onServer(bin, process.env.TEST_PG_URL)
  const root = mkdtempSync(join(tmpdir(), "react-pg-"))
  // every directory on the way must be traversable by the postgres user
  chmodSync(root, 0o755)
  const data = join(root, "data")
  if (asRoot) execFileSync("install", ["-d", "-o", "postgres", data])
  run(bin, "initdb", ["-D", data, "-A", "trust", "-U", "postgres", "--no-sync"])
  const port = await freePort()
  run(bin, "pg_ctl", [
    "-D",
    data,
    "-l",
    join(data, "log"),
    "-o",
    `-p ${port} -k ${data} -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off`,
    "-w",
    "start"
  ])
  return {
    createDatabase: (name) => {
      run(bin, "psql", ["-h", "127.0.0.1", "-p", String(port), "-U", "postgres", "-c", `CREATE DATABASE "${name}"`])
      return `postgres://postgres@127.0.0.1:${port}/${name}`
    },
    stop: () => {
      try {
        run(bin, "pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"])
      } finally {
        rmSync(root, { recursive: true, force: true })
      }
    }
  }
}
