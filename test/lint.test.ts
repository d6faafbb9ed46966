/**
 * The house rules of eslint.config.mjs (Effect's repositories' rules, with dprint as the
 * formatter) hold over the whole tree: a lint error or an unformatted file fails `npm test`.
 * `npm run lint:fix` formats and fixes what can be fixed.
 */
import { assert, describe, it } from "@effect/vitest"
import { ESLint } from "eslint"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "..")

describe("lint", () => {
  it("eslint (with the dprint format) reports nothing", { timeout: 180_000 }, async () => {
    const eslint = new ESLint({ cwd: root })
    const results = await eslint.lintFiles(["."])
    const problems = results.flatMap((result) =>
      result.messages.map((m) =>
        `${path.relative(root, result.filePath)}:${m.line}:${m.column} ${m.ruleId ?? "parse"} ${m.message}`
      )
    )
    assert.deepStrictEqual(
      problems.slice(0, 50),
      [],
      `${problems.length} problems; npm run lint:fix formats and fixes what it can`
    )
  })
})
