/**
 * How the browser tests find their browser (test/utils/browser.ts): CHROMIUM_PATH,
 * then the system `chromium`, then the build in the @sparticuz/chromium
 * devDependency — and a loud failure when none can be launched.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { chmodSync, mkdtempSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { findChromium, launch, pw } from "../utils/browser.js"

const fakeBinary = (dir: string, body = "#!/bin/sh\nexit 1\n") => {
  const path = join(dir, "chromium")
  writeFileSync(path, body)
  chmodSync(path, 0o755)
  return path
}

describe("finding a browser", () => {
  it.effect("CHROMIUM_PATH wins, and a missing one is an error naming it", () =>
    Effect.gen(function*() {
      const dir = mkdtempSync(join(tmpdir(), "browser-test-"))
      const path = fakeBinary(dir)
      const found = yield* findChromium({ CHROMIUM_PATH: path, PATH: "/usr/bin" })
      assert.deepStrictEqual(found, { path, source: "CHROMIUM_PATH" })
      const missing = yield* Effect.either(findChromium({ CHROMIUM_PATH: join(dir, "nope"), PATH: "" }))
      assert.isTrue(Either.isLeft(missing))
      if (Either.isLeft(missing)) assert.include(missing.left.message, `CHROMIUM_PATH=${join(dir, "nope")}`)
    }))

  it.effect("without CHROMIUM_PATH the first `chromium` on PATH is used", () =>
    Effect.gen(function*() {
      const empty = mkdtempSync(join(tmpdir(), "browser-test-"))
      const dir = mkdtempSync(join(tmpdir(), "browser-test-"))
      const path = fakeBinary(dir)
      assert.deepStrictEqual(yield* findChromium({ PATH: `${empty}:${dir}` }), { path, source: "system" })
    }))

  it.live(
    "with neither, the Chromium of @sparticuz/chromium is unpacked and launches headless",
    () =>
      Effect.gen(function*() {
        const found = yield* findChromium({ PATH: "" })
        assert.strictEqual(found.source, "@sparticuz/chromium")
        const browser = yield* launch(found)
        const page = yield* pw(() => browser.newPage())
        yield* pw(() => page.setContent("<p id=x>ok</p>"))
        assert.strictEqual(yield* pw(() => page.textContent("#x")), "ok")
        yield* pw(() => browser.close())
      }),
    150_000
  )

  it.live("a binary that cannot start is a loud failure naming it", () =>
    Effect.gen(function*() {
      const path = fakeBinary(mkdtempSync(join(tmpdir(), "browser-test-")))
      const result = yield* Effect.either(launch({ path, source: "CHROMIUM_PATH" }))
      assert.isTrue(Either.isLeft(result))
      if (Either.isLeft(result)) {
        assert.include(result.left.message, "none could be launched")
        assert.include(result.left.message, path)
      }
    }), 60_000)
})
