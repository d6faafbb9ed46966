import { assert, describe, it } from "@effect/vitest"
import { FastCheck as fc, Option } from "effect"
import { extractJson } from "../src/ExtractJson.js"
import { repairJson } from "../src/internal/extractJson/repair.js"

const some = (text: string): Record<string, unknown> => {
  const result = extractJson(text)
  assert.isTrue(Option.isSome(result), `expected an object in: ${JSON.stringify(text).slice(0, 200)}`)
  return Option.getOrThrow(result)
}
const none = (text: string) =>
  assert.isTrue(Option.isNone(extractJson(text)), `expected none for: ${text.slice(0, 200)}`)

describe("extractJson: examples", () => {
  it("parses a bare object", () => {
    assert.deepStrictEqual(some("{\"a\": 1, \"b\": [true, null]}"), { a: 1, b: [true, null] })
    assert.deepStrictEqual(some("  \n {\"a\":1}\n "), { a: 1 })
  })

  it("finds an object surrounded by prose", () => {
    assert.deepStrictEqual(some("Sure, here it is: {\"tools\": [\"search\", \"fetch\"]} — hope that helps!"), {
      tools: ["search", "fetch"]
    })
  })

  it("reads a ```json fenced block", () => {
    assert.deepStrictEqual(some("Here:\n```json\n{\"x\": \"y\"}\n```\nDone."), { x: "y" })
    assert.deepStrictEqual(some("```JSON\n{\"x\": 2}\n```"), { x: 2 })
  })

  it("reads a bare ``` fenced block and skips other languages", () => {
    assert.deepStrictEqual(some("```\n{\"x\": 1}\n```"), { x: 1 })
    // the python block's dict is not JSON; the later json block wins over the scan
    assert.deepStrictEqual(
      some("```python\nd = {'a': 1}\n```\nand\n```json\n{\"b\": 2}\n```"),
      { b: 2 }
    )
  })

  it("prefers the fenced block over an earlier brace in prose", () => {
    assert.deepStrictEqual(some("Use {braces} carefully.\n```json\n{\"ok\": true}\n```"), { ok: true })
  })

  it("handles nested braces and braces inside strings", () => {
    assert.deepStrictEqual(some("result: {\"a\": {\"b\": \"}{ not a brace\"}, \"c\": \"\\\"{\"} trailing }"), {
      a: { b: "}{ not a brace" },
      c: "\"{"
    })
  })

  it("tries each { start in order until one parses", () => {
    assert.deepStrictEqual(some("In set notation {x | x > 0} and then {\"answer\": 42}"), { answer: 42 })
    assert.deepStrictEqual(some("{bad {\"inner\": 1} still bad"), { inner: 1 })
  })

  it("returns the first of several objects", () => {
    assert.deepStrictEqual(some("first {\"n\": 1} second {\"n\": 2}"), { n: 1 })
  })

  it("repairs LaTeX backslashes (invalid escapes)", () => {
    assert.deepStrictEqual(some("{\"answer\": \"$\\alpha + \\beta = \\frac{1}{2}$, \\(x\\)\"}"), {
      answer: "$\\alpha + \\beta = \\frac{1}{2}$, \\(x\\)"
    })
    assert.deepStrictEqual(some("{\"f\": \"\\sqrt{2} \\theta \\nabla \\right) \\times\"}"), {
      f: "\\sqrt{2} \\theta \\nabla \\right) \\times"
    })
  })

  it("keeps valid escapes while repairing the others", () => {
    assert.deepStrictEqual(some("{\"s\": \"tab\\tq \\\"quoted\\\" \\\\ \\/ \\u00e9 line\\nThen \\alpha\"}"), {
      s: "tab\tq \"quoted\" \\ / é line\nThen \\alpha"
    })
  })

  it("a plain parse wins: \\frac alone is valid JSON (form feed)", () => {
    // documented trade-off: the repair pass only runs when the plain parse failed
    assert.deepStrictEqual(some("{\"a\": \"\\frac\"}"), { a: "\frac" })
  })

  it("escapes raw newlines, tabs and control characters inside strings", () => {
    assert.deepStrictEqual(some("{\"text\": \"line one\nline two\tindented\u0001\"}"), {
      text: "line one\nline two\tindented\u0001"
    })
    assert.deepStrictEqual(some("Answer:\n{\"text\": \"a\r\nb\"}\nthanks"), { text: "a\r\nb" })
  })

  it("repairs inside fenced blocks", () => {
    assert.deepStrictEqual(some("```json\n{\"m\": \"\\mu\nnext\"}\n```"), { m: "\\mu\nnext" })
  })

  it("arrays are not objects", () => {
    none("[1, 2, 3]")
    none("[{\"a\": 1}]")
    none("```json\n[1]\n```")
  })

  it("scalars and null are not objects", () => {
    none("42")
    none("\"{\\\"a\\\": 1}\"")
    none("null")
    none("true")
  })

  it("no object at all", () => {
    none("")
    none("just prose, no braces")
    none("{ unbalanced")
    none("{not: json}")
    none("}{")
  })

  it("never throws on pathological inputs and stays fast", () => {
    const big = "{".repeat(200_000) + "\"a" + "\\".repeat(100_000)
    none(big)
    none("{\"a\": \"" + "x".repeat(2_000_000))
    none("```".repeat(10_000))
    const start = Date.now()
    none("{x} ".repeat(250_000))
    assert.isBelow(Date.now() - start, 5_000)
    // a large valid object embedded in prose is still found
    const large = { items: Array.from({ length: 20_000 }, (_, i) => ({ i, s: `v${i}` })) }
    assert.deepStrictEqual(some("prefix " + JSON.stringify(large) + " suffix"), large)
  })
})

describe("repairJson", () => {
  it("returns the input itself when nothing changes", () => {
    const s = "{\"a\": \"b\\n\"}"
    assert.strictEqual(repairJson(s), s)
  })
  it("leaves text outside strings alone", () => {
    assert.strictEqual(repairJson("{\n\"a\": \"\\x\"\n}"), "{\n\"a\": \"\\\\x\"\n}")
  })
  it("escapes a trailing lone backslash and a short \\u", () => {
    assert.strictEqual(repairJson("\"ab\\"), "\"ab\\\\")
    assert.strictEqual(repairJson("\"\\u12\""), "\"\\\\u12\"")
  })
})

// ---------------------------------------------------------------------------
// properties

/** A JSON object, normalised through a JSON round trip (drops -0, etc.). */
const jsonObject = fc
  .dictionary(fc.string(), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 6 })
  .map((o) => JSON.parse(JSON.stringify(o)) as Record<string, unknown>)

/** Prose that cannot interfere: no braces, brackets or double quotes. */
const prose = fc.string({ maxLength: 60 }).map((s) => s.replace(/[{}[\]"]/g, ""))

describe("extractJson: properties", () => {
  it.prop("never throws on arbitrary strings", [fc.string({ maxLength: 300 })], ([s]) => {
    const result = extractJson(s)
    assert.isTrue(Option.isOption(result))
  })

  it.prop(
    "never throws on JSON-ish noise",
    [fc.array(fc.constantFrom("{", "}", "\"", "\\", ":", ",", "a", "1", "\n", "```", "json", "[", "]", " "), {
      maxLength: 200
    })],
    ([parts]) => {
      const result = extractJson(parts.join(""))
      if (Option.isSome(result)) {
        assert.isTrue(typeof result.value === "object" && result.value !== null && !Array.isArray(result.value))
      }
    }
  )

  it.prop(
    "finds any JSON object embedded in prose without braces",
    [prose, jsonObject, prose, fc.boolean()],
    ([before, object, after, pretty]) => {
      const text = before + (pretty ? JSON.stringify(object, null, 2) : JSON.stringify(object)) + after
      assert.deepStrictEqual(some(text), object)
    }
  )

  it.prop("finds any JSON object in a fenced block", [prose, jsonObject, prose], ([before, object, after]) => {
    const text = `${before}\n\`\`\`json\n${JSON.stringify(object, null, 2)}\n\`\`\`\n${after}`
    assert.deepStrictEqual(some(text), object)
  })

  it.prop(
    "is idempotent on its own output",
    [fc.oneof(fc.string({ maxLength: 200 }), jsonObject.map((o) => "x " + JSON.stringify(o)))],
    ([s]) => {
      const first = extractJson(s)
      if (Option.isSome(first)) {
        assert.deepStrictEqual(some(JSON.stringify(first.value)), first.value)
      }
    }
  )

  // LaTeX commands colliding with \n, \r, \t (\theta, \nabla, \right) are recognised as whole
  // words only, hence the trailing space after \theta (\thetax would stay a tab + "hetax").
  it.prop(
    "repaired LaTeX strings round-trip the backslashes",
    [fc.array(
      fc.constantFrom("\\alpha", "\\frac{1}{2}", "\\(", "\\)", "\\sqrt", "\\beta", " ", "x", "\\theta ", "\\sum_{i}"),
      { maxLength: 12 }
    )],
    ([parts]) => {
      const latex = parts.join("") + "\\gamma" // guarantee one invalid escape, so the repair pass runs
      assert.deepStrictEqual(some(`{"answer": "${latex}"}`), { answer: latex })
    }
  )
})
