/**
 * Headless Chromium for the page's browser tests, driven by playwright-core.
 *
 * The browser is found without any setup step, in this order:
 * 1. `CHROMIUM_PATH`, when set (it must exist);
 * 2. the system `chromium` on `PATH` (Debian's package, what CI installs);
 * 3. the Chromium build shipped in the `@sparticuz/chromium` devDependency,
 *    unpacked once per machine into the temporary directory (no download).
 *
 * A browser that cannot be found or launched is a test failure saying why,
 * never a silent skip.
 */
import { Context, Data, Effect, Layer } from "effect"
import { execFile } from "node:child_process"
import { accessSync, constants, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { delimiter, dirname, join } from "node:path"
import { pathToFileURL } from "node:url"
import { promisify } from "node:util"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"

export class BrowserUnavailable extends Data.TaggedError("BrowserUnavailable")<{ readonly message: string }> {}

/** A browser executable and where it came from (for messages). */
export interface ChromiumBinary {
  readonly path: string
  readonly source: "CHROMIUM_PATH" | "system" | "@sparticuz/chromium"
}

/**
 * The same flags for every browser. (`@sparticuz/chromium`'s own `args` are tuned
 * for AWS Lambda — `--single-process`, `--disable-web-security` — which would hide
 * what the page's CSP and same-origin rules do; its binary runs fine with these.)
 */
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync"
]

const isExecutable = (path: string): boolean => {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** The first `chromium` on the search path, if any. */
export const systemChromium = (searchPath: string | undefined): string | undefined =>
  (searchPath ?? "").split(delimiter).filter((dir) => dir !== "").map((dir) => join(dir, "chromium")).find(isExecutable)

const require = createRequire(import.meta.url)

/**
 * Unpacks the Chromium build of `@sparticuz/chromium` once per machine: its
 * `executablePath()` inflates into `os.tmpdir()`, so it runs in a child process
 * whose `TMPDIR` is a fresh staging directory, which is then renamed into place.
 * The rename is atomic: test workers (or two test runs) racing here either win
 * or find the finished copy, never a half-written binary.
 */
export const bundledChromium: Effect.Effect<string, BrowserUnavailable> = Effect.gen(function*() {
  const entry = yield* Effect.try({
    try: () => require.resolve("@sparticuz/chromium"),
    catch: () =>
      new BrowserUnavailable({ message: "the devDependency @sparticuz/chromium is not installed (run `npm ci`)" })
  })
  const root = dirname(dirname(dirname(entry))) // <root>/build/cjs/index.cjs
  const version = (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { version: string }).version
  const target = join(tmpdir(), `react-engine-chromium-${version}`)
  const binary = join(target, "chromium")
  if (isExecutable(binary)) return binary
  const staging = mkdtempSync(join(tmpdir(), "react-engine-chromium-staging-"))
  const esm = pathToFileURL(join(root, "build", "esm", "index.js")).href
  const script = `const c = (await import(${
    JSON.stringify(esm)
  })).default; process.stdout.write(await c.executablePath())`
  const unpacked = yield* Effect.tryPromise({
    try: (signal) =>
      promisify(execFile)(process.execPath, ["--input-type=module", "-e", script], {
        cwd: root,
        env: { ...process.env, TMPDIR: staging },
        signal,
        timeout: 120_000
      }),
    catch: (e) => new BrowserUnavailable({ message: `unpacking @sparticuz/chromium ${version} failed: ${String(e)}` })
  }).pipe(Effect.onError(() => Effect.sync(() => rmSync(staging, { recursive: true, force: true }))))
  if (unpacked.stdout.trim() !== join(staging, "chromium")) {
    rmSync(staging, { recursive: true, force: true })
    return yield* new BrowserUnavailable({
      message: `@sparticuz/chromium unpacked to ${unpacked.stdout.trim()}, expected ${staging}`
    })
  }
  try {
    renameSync(staging, target)
  } catch {
    // another worker finished first: use its copy
    rmSync(staging, { recursive: true, force: true })
  }
  if (!isExecutable(binary)) {
    return yield* new BrowserUnavailable({ message: `no executable Chromium at ${binary} after unpacking` })
  }
  return binary
})

/**
 * Finds the browser: `CHROMIUM_PATH`, else the system `chromium`, else the
 * bundled build.
 */
export const findChromium = (
  env: NodeJS.ProcessEnv = process.env
): Effect.Effect<ChromiumBinary, BrowserUnavailable> => {
  const explicit = env.CHROMIUM_PATH?.trim()
  if (explicit) {
    return isExecutable(explicit)
      ? Effect.succeed({ path: explicit, source: "CHROMIUM_PATH" })
      : Effect.fail(new BrowserUnavailable({ message: `CHROMIUM_PATH=${explicit} is not an executable file` }))
  }
  const system = systemChromium(env.PATH)
  if (system !== undefined) return Effect.succeed({ path: system, source: "system" })
  return Effect.map(bundledChromium, (path) => ({ path, source: "@sparticuz/chromium" }))
}

const explain = (message: string) =>
  new BrowserUnavailable({
    message: `The web page tests need a real browser and none could be launched: ${message}. ` +
      "They look for CHROMIUM_PATH, then `chromium` on PATH, then the Chromium build of the @sparticuz/chromium devDependency."
  })

/** Launch a browser binary headless; a failure names the binary and its source. */
export const launch = (binary: ChromiumBinary): Effect.Effect<Browser, BrowserUnavailable> =>
  Effect.tryPromise({
    // playwright gives each launch its own fresh temporary profile
    try: () => chromium.launch({ executablePath: binary.path, args: ARGS, timeout: 60_000 }),
    catch: (e) => explain(`${binary.path} (${binary.source}) failed to start: ${String(e)}`)
  })

/** Launch Chromium for the scope of a test; closed (and its profile removed) when the scope ends. */
export const launchBrowser = Effect.acquireRelease(
  Effect.flatMap(Effect.mapError(findChromium(), (e) => explain(e.message)), launch),
  (browser) => Effect.promise(() => browser.close())
)

/** A fresh page (own storage) that records console errors and page errors. */
export const openPage = (
  browser: Browser,
  options: { readonly width?: number; readonly height?: number; readonly colorScheme?: "light" | "dark" } = {}
) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const context: BrowserContext = await browser.newContext({
        viewport: { width: options.width ?? 1200, height: options.height ?? 860 },
        colorScheme: options.colorScheme ?? "light"
      })
      const page: Page = await context.newPage()
      page.setDefaultTimeout(15_000)
      const errors: Array<string> = []
      const dialogs: Array<string> = []
      page.on("pageerror", (e) => errors.push(String(e)))
      page.on("console", (m) => {
        if (m.type() === "error") errors.push(m.text())
      })
      page.on("dialog", (d) => {
        dialogs.push(d.message())
        void d.dismiss()
      })
      return { page, context, errors, dialogs }
    }),
    ({ context }) => Effect.promise(() => context.close())
  )

/** Run a Playwright call as an Effect (failures are test failures with the message). */
export const pw = <A>(f: () => Promise<A>): Effect.Effect<A, Error> =>
  Effect.tryPromise({ try: f, catch: (e) => (e instanceof Error ? e : new Error(String(e))) })

export const RESULTS_DIR = join(process.cwd(), "test-results")

/** Save a screenshot under test-results/ and return its path. */
export const screenshot = (page: Page, name: string) =>
  pw(async () => {
    mkdirSync(RESULTS_DIR, { recursive: true })
    const path = join(RESULTS_DIR, `${name}.png`)
    await page.screenshot({ path, fullPage: false })
    return path
  })

/** One Chromium shared by the tests of a file (`layer(ChromiumLive)(...)`). */
export class Chromium extends Context.Tag("test/Chromium")<Chromium, Browser>() {}

export const ChromiumLive: Layer.Layer<Chromium, BrowserUnavailable> = Layer.scoped(Chromium, launchBrowser)
