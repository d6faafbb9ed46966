/**
 * Headless Debian Chromium for the page's browser tests, driven by playwright-core.
 * A missing browser is a test failure with a message saying how to install it,
 * never a silent skip.
 */
import { Context, Data, Effect, Layer } from "effect"
import { existsSync, mkdirSync } from "node:fs"
import { join } from "node:path"
import { type Browser, type BrowserContext, chromium, type Page } from "playwright-core"

export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium"

export class BrowserUnavailable extends Data.TaggedError("BrowserUnavailable")<{ readonly message: string }> {}

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

/** Launch Chromium for the scope of a test; closed (and its profile removed) when the scope ends. */
export const launchBrowser = Effect.acquireRelease(
  Effect.gen(function*() {
    if (!existsSync(CHROMIUM_PATH)) {
      return yield* new BrowserUnavailable({
        message: `Chromium is not installed at ${CHROMIUM_PATH}: the web page tests need a real browser. ` +
          `Install it with \`apt-get install -y chromium\` (or set CHROMIUM_PATH).`
      })
    }
    // playwright gives each launch its own fresh temporary profile
    const browser = yield* Effect.tryPromise({
      try: () => chromium.launch({ executablePath: CHROMIUM_PATH, args: ARGS }),
      catch: (e) => new BrowserUnavailable({ message: `Chromium at ${CHROMIUM_PATH} failed to start: ${String(e)}` })
    })
    return browser
  }),
  (browser) => Effect.promise(() => browser.close())
)

/** A fresh page (own storage) that records console errors and page errors. */
export const openPage = (browser: Browser, options: { readonly width?: number; readonly height?: number; readonly colorScheme?: "light" | "dark" } = {}) =>
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
