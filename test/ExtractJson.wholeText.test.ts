/**
 * What decides `extractJson`'s answer at the edges of its stages: which inputs
 * the whole-text stage repairs, what it trims, what a fence's content may be
 * wrapped in, and where the brace scan's work budget ends.
 *
 * Written from a full mutation run (docs/testing.md#mutation-testing) that left
 * these as "equivalent" while each changes an answer a caller sees: repairing
 * the whole text only when it starts with `{` or `[` decides whether a reply
 * that is an array after repair is `none` or the object inside it; the budget
 * decides whether an object after a megabyte of unmatched braces is found.
 */
import { assert, describe, it } from "@effect/vitest"
import { Option } from "effect"
import { braceScanBudget, extractJson } from "../src/ExtractJson.js"

const result = (text: string) => Option.getOrUndefined(extractJson(text))

describe("extractJson: the whole-text stage", () => {
  it("a non-string input is none, also a String object holding an object's text", () => {
    assert.isTrue(Option.isNone(extractJson(new String("{\"a\": 1}") as unknown as string)))
    assert.isTrue(Option.isNone(extractJson(42 as unknown as string)))
    assert.isTrue(Option.isNone(extractJson(null as unknown as string)))
  })

  it("a reply that is a JSON array only after repair is none, as a valid array is — with whitespace around it too", () => {
    // \alpha is no JSON escape: the array parses only once the backslash is escaped
    assert.isUndefined(result("[{\"f\": \"\\alpha\"}]"))
    assert.isUndefined(result("\n  [{\"f\": \"\\alpha\"}]\n"))
    // the same object on its own is found (the repair is what makes it parse)
    assert.deepStrictEqual(result("{\"f\": \"\\alpha\"}"), { f: "\\alpha" })
  })

  it("a reply that is an object only after repair is taken whole, not a fenced block inside one of its strings", () => {
    // raw line breaks inside the string: valid only after repair
    const text = "{\"answer\": \"Run this:\n```json\n{}\n```\nand see.\"}"
    assert.deepStrictEqual(result(text), { answer: "Run this:\n```json\n{}\n```\nand see." })
  })

  it("only text starting with { or [ is repaired whole: a quoted reply with a LaTeX backslash is prose, its braces are searched", () => {
    // repaired whole, this would be a JSON string (not an object: none)
    assert.deepStrictEqual(result("\"\\alpha {}\""), {})
    // as it is, a valid JSON string is a whole reply that is no object
    assert.isUndefined(result("\"\\\\alpha {}\""))
  })
})

describe("extractJson: the fenced stage", () => {
  it("a fenced object wrapped in Unicode white space (no-break space, BOM, ideographic space) is read from the fence", () => {
    const prose = "Not this one: {\"prose\": 1}\n"
    for (const ws of ["\u00a0", "\ufeff", "\u3000"]) {
      const text = prose + "```json\n" + ws + "{\"fenced\": true}" + ws + "\n```"
      assert.deepStrictEqual(result(text), { fenced: true }, `U+${ws.charCodeAt(0).toString(16)}`)
    }
  })
})

describe("extractJson: the brace scan's work budget (braceScanBudget)", () => {
  // Five unmatched `{`, then prose, then an object. Each of the five scans runs to
  // the end of the text and is charged the characters it read (length - start);
  // what is left of braceScanBudget(length) is the room to scan the object.
  const OBJECT = "{\"a\":1}"
  const unmatched = (prose: number) => "{".repeat(5) + "x".repeat(prose) + OBJECT
  const left = (text: string) => {
    let budget = braceScanBudget(text.length)
    for (let i = 0; i < 5; i++) budget -= text.length - i
    return budget
  }

  it("scans that find no match are charged their length: the object is found with exactly its length left, not with one character less", () => {
    const fits = unmatched(999_991)
    const short = unmatched(999_992)
    assert.strictEqual(left(fits), OBJECT.length)
    assert.strictEqual(left(short), OBJECT.length - 1)
    assert.deepStrictEqual(result(fits), { a: 1 })
    assert.isUndefined(result(short))
  })

  // Two nested balanced candidates that do not parse ({{x…x}} and {x…x}), then an
  // object: each candidate is charged four times its length (scan, parse, repair,
  // parse again).
  const nested = (prose: number) => "{{" + "x".repeat(prose) + "}}" + OBJECT
  const leftNested = (prose: number) => braceScanBudget(nested(prose).length) - 4 * (prose + 4) - 4 * (prose + 2)

  it("balanced candidates that fail to parse are charged four times their length", () => {
    assert.strictEqual(leftNested(250_003), 8)
    assert.strictEqual(leftNested(250_004), 4)
    assert.deepStrictEqual(result(nested(250_003)), { a: 1 })
    assert.isUndefined(result(nested(250_004)))
    // one such candidate leaves room for the object whatever its length
    assert.deepStrictEqual(result("{" + "x".repeat(1_000_000) + "}" + OBJECT), { a: 1 })
  })
})
