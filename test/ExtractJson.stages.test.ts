/**
 * The stages of `extractJson` one by one, each where it decides the answer.
 *
 * Written from a mutation run (docs/testing.md#mutation-testing): the fenced
 * stage could be removed whole and every other test still passed, because the
 * balanced-brace scan finds the same object in a fence. Here a valid object in
 * the prose comes first, so only the fence stage can answer with the fenced one.
 */
import { assert, describe, it } from "@effect/vitest"
import { Option } from "effect"
import { braceScanBudget, extractJson, MAX_BRACE_STARTS, MAX_FENCES } from "../src/ExtractJson.js"
import { repairJson } from "../src/internal/extractJson/repair.js"

const result = (text: string) => Option.getOrUndefined(extractJson(text))
const fence = (lang: string, body: string, ticks = "```") => `${ticks}${lang}\n${body}\n${ticks}`
const PROSE = "For example {\"prose\": 1} looks like this:\n"

describe("extractJson: the fenced stage answers before the scan", () => {
  it("a fenced object wins over a valid object earlier in the prose, for each JSON language tag", () => {
    for (const lang of ["json", "", "jsonc", "json5", "JSON"]) {
      assert.deepStrictEqual(result(PROSE + fence(lang, "{\"fenced\": true}")), { fenced: true }, `tag "${lang}"`)
    }
  })

  it("a fence tagged with another language is skipped, a later json fence is read", () => {
    const text = fence("text", "{\"text\": 1}") + "\nand\n" + fence("json", "{\"json\": 2}")
    assert.deepStrictEqual(result(text), { json: 2 })
    assert.deepStrictEqual(result(PROSE + fence("python", "{\"py\": 1}")), { prose: 1 })
  })

  it("four backticks and an info word run into the content are read as fences", () => {
    assert.deepStrictEqual(result(PROSE + fence("json", "{\"four\": 4}", "````")), { four: 4 })
    assert.deepStrictEqual(result(PROSE + "```json{\"inline\": 1}```"), { inline: 1 })
  })

  it("at most MAX_FENCES fences are read: a json fence at that position is, the next one is not", () => {
    const others = (n: number) => Array.from({ length: n }, (_, i) => fence("text", `{"t": ${i}}`)).join("\n")
    assert.deepStrictEqual(result(PROSE + others(MAX_FENCES - 1) + "\n" + fence("json", "{\"last\": true}")), {
      last: true
    })
    assert.deepStrictEqual(result(PROSE + others(MAX_FENCES) + "\n" + fence("json", "{\"last\": true}")), { prose: 1 })
  })

  it("a fence that holds JSON but not an object answers nothing", () => {
    assert.isUndefined(result(fence("json", "null") + " {"))
    assert.isUndefined(result(fence("json", "[1]") + " {"))
  })

  it("a whole-text object wins over a fence quoted inside one of its strings", () => {
    const text = "{\"doc\": \"use ```json {} ``` blocks\"}"
    assert.deepStrictEqual(result(text), { doc: "use ```json {} ``` blocks" })
  })
})

describe("repairJson: escape boundaries", () => {
  it("\\b and \\f before an ASCII letter (A, Z, a, z) are LaTeX: the backslash is escaped", () => {
    assert.strictEqual(repairJson("\"\\fA \\fZ \\ba \\bz\""), "\"\\\\fA \\\\fZ \\\\ba \\\\bz\"")
  })

  it("\\b and \\f before the characters next to the letter ranges (@ [ ` {) stay JSON escapes", () => {
    const s = "\"\\f@ \\f[ \\b` \\b{\""
    assert.strictEqual(repairJson(s), s)
    assert.deepStrictEqual(result(`{"s": ${s}}`), { s: "\f@ \f[ \b` \b{" })
  })

  it("\\u needs four hex digits (0-9, A-F, a-f), checked at each of the four places", () => {
    const valid = "\"\\u09AF \\uafFA\""
    assert.strictEqual(repairJson(valid), valid)
    for (
      const bad of ["\\u/000", "\\u:000", "\\u@000", "\\uG000", "\\u`000", "\\ug000", "\\u0G00", "\\u00G0", "\\u000G"]
    ) {
      assert.strictEqual(repairJson(`"${bad}"`), `"\\${bad}"`, bad)
    }
  })

  it("raw backspace and form feed inside strings become \\b and \\f; a space stays a space", () => {
    assert.strictEqual(repairJson("\"a\bb\fc\""), "\"a\\bb\\fc\"")
    assert.strictEqual(repairJson("\"a b \\x\""), "\"a b \\\\x\"")
  })
})

describe("extractJson: the balanced-brace scan", () => {
  it("tries MAX_BRACE_STARTS positions, each at a {, the first prose character not counting as one", () => {
    const junk = (n: number) => "{ ".repeat(n) // unbalanced: each start scans to the end and fails
    assert.deepStrictEqual(result("x" + junk(MAX_BRACE_STARTS - 1) + "{\"a\": 1}"), { a: 1 })
    assert.isUndefined(result("x" + junk(MAX_BRACE_STARTS) + "{\"a\": 1}"))
  })
})

describe("braceScanBudget", () => {
  it("is 4 × the input length + 1,000,000", () => {
    assert.strictEqual(braceScanBudget(0), 1_000_000)
    assert.strictEqual(braceScanBudget(10), 1_000_040)
  })
})
