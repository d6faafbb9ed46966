import { assert, describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as FC from "effect/FastCheck"
import * as BuiltinTools from "../../src/BuiltinTools.js"
import * as Tool from "../../src/Tool.js"
import * as Calculator from "../../src/tools/Calculator.js"

const value = (expression: string): number => {
  const result = Calculator.evaluate(expression)
  if (Either.isLeft(result)) throw new Error(`expected a value for ${expression}, got: ${result.left}`)
  return result.right
}
const error = (expression: string): string => {
  const result = Calculator.evaluate(expression)
  if (Either.isRight(result)) throw new Error(`expected an error for ${expression}, got ${result.right}`)
  return result.left
}

// ---- a reference evaluator over random integer trees --------------------------------

type Tree =
  | { readonly t: "num"; readonly v: number }
  | { readonly t: "neg"; readonly x: Tree }
  | { readonly t: "bin"; readonly op: "+" | "-" | "*" | "/" | "%" | "^"; readonly l: Tree; readonly r: Tree }

const { tree } = FC.letrec<{ tree: Tree }>((tie) => ({
  tree: FC.oneof(
    { depthSize: "small", withCrossShrink: true },
    FC.integer({ min: 0, max: 50 }).map((v): Tree => ({ t: "num", v })),
    tie("tree").map((x): Tree => ({ t: "neg", x })),
    FC.record({
      t: FC.constant("bin" as const),
      op: FC.constantFrom("+" as const, "-" as const, "*" as const, "/" as const, "%" as const),
      l: tie("tree"),
      r: tie("tree")
    }),
    // powers with a small literal exponent keep values finite
    FC.record({
      t: FC.constant("bin" as const),
      op: FC.constant("^" as const),
      l: tie("tree"),
      r: FC.integer({ min: 0, max: 3 }).map((v): Tree => ({ t: "num", v }))
    })
  )
}))

/** The reference: evaluates the tree itself; `undefined` when the calculator must refuse it. */
const reference = (node: Tree): number | undefined => {
  switch (node.t) {
    case "num":
      return node.v
    case "neg": {
      const x = reference(node.x)
      return x === undefined ? undefined : -x
    }
    case "bin": {
      const a = reference(node.l)
      const b = reference(node.r)
      if (a === undefined || b === undefined) return undefined
      if ((node.op === "/" || node.op === "%") && b === 0) return undefined
      const v = node.op === "+" ? a + b : node.op === "-" ? a - b : node.op === "*" ? a * b : node.op === "/" ?
        a / b
        : node.op === "%"
        ? a % b
        : Math.pow(a, b)
      return Number.isFinite(v) ? v : undefined
    }
  }
}

const PREC = { "+": 1, "-": 1, "*": 2, "/": 2, "%": 2 } as const
const prec = (node: Tree): number => (node.t === "num" ? 9 : node.t === "neg" ? 3 : node.op === "^" ? 4 : PREC[node.op])

/** Prints with the fewest parentheses the grammar needs (exercises precedence and associativity). */
const print = (node: Tree): string => {
  switch (node.t) {
    case "num":
      return String(node.v)
    case "neg":
      return "-" + (prec(node.x) < 3 ? `(${print(node.x)})` : print(node.x))
    case "bin": {
      const p = prec(node)
      if (node.op === "^") {
        const left = prec(node.l) <= 4 ? `(${print(node.l)})` : print(node.l)
        return `${left}^${print(node.r)}`
      }
      const left = prec(node.l) < p ? `(${print(node.l)})` : print(node.l)
      const right = prec(node.r) <= p ? `(${print(node.r)})` : print(node.r)
      return `${left} ${node.op} ${right}`
    }
  }
}

describe("Calculator", () => {
  it("respects precedence, associativity and unary minus", () => {
    assert.strictEqual(value("2+3*4"), 14)
    assert.strictEqual(value("(2+3)*4"), 20)
    assert.strictEqual(value("2^3^2"), 512)
    assert.strictEqual(value("2**3"), 8)
    assert.strictEqual(value("-2^2"), -4)
    assert.strictEqual(value("(-2)^2"), 4)
    assert.strictEqual(value("2^-1"), 0.5)
    assert.strictEqual(value("10 - 4 - 3"), 3)
    assert.strictEqual(value("100 / 10 / 5"), 2)
    assert.strictEqual(value("7 % 4"), 3)
    assert.strictEqual(value("--3"), 3)
    assert.strictEqual(value("3 × 4 ÷ 2"), 6)
  })

  it("reads decimals and scientific notation", () => {
    assert.strictEqual(value(".5 + 1.25"), 1.75)
    assert.strictEqual(value("1.5e3"), 1500)
    assert.strictEqual(value("2E-2"), 0.02)
  })

  it("knows its functions and constants", () => {
    assert.strictEqual(value("sqrt(16) + abs(-3)"), 7)
    assert.strictEqual(value("round(2.5) + floor(2.7) + ceil(2.1)"), 8)
    assert.strictEqual(value("round(pi, 2)"), 3.14)
    assert.strictEqual(value("min(3, 1, 2) + max(3, 1, 2)"), 4)
    assert.strictEqual(value("log(1000)"), 3)
    assert.strictEqual(value("log(8, 2)"), 3)
    assert.strictEqual(value("ln(e)"), 1)
    assert.strictEqual(value("exp(0) + sin(0) + cos(0) + tan(0)"), 2)
    assert.strictEqual(value("PI"), Math.PI)
  })

  it("reports errors with their position", () => {
    assert.strictEqual(error("(2 + 3))"), "Unexpected token ')' at 8")
    assert.strictEqual(error("2 +"), "Unexpected end of input at 4")
    assert.strictEqual(error("2 $ 3"), "Unexpected character '$' at 3")
    assert.strictEqual(error("(1 + 2"), "Missing ')' for '(' at 1")
    assert.strictEqual(error("1 / (3 - 3)"), "Division by zero at 3")
    assert.strictEqual(error("5 % 0"), "Modulo by zero at 3")
    assert.include(error("foo(2)"), "Unknown function 'foo' at 1")
    assert.include(error("x + 1"), "Unknown name 'x' at 1")
    assert.include(error("sqrt 4"), "needs parentheses")
    assert.include(error("sqrt(-1)"), "negative")
    assert.include(error("log(0)"), "non-positive")
    assert.include(error("sqrt(1, 2)"), "takes 1 argument, got 2")
    assert.include(error("10^400"), "too large")
    assert.include(error("1.2.3"), "Malformed number")
    assert.strictEqual(error("   "), "Empty expression")
  })

  it("caps the length and the nesting depth", () => {
    assert.include(error("1+".repeat(600) + "1"), "too long")
    assert.include(error("(".repeat(300) + "1" + ")".repeat(300)), "nested too deeply")
    assert.include(error("-".repeat(500) + "1"), "nested too deeply")
  })

  it.prop("random integer trees evaluate like the reference", [tree], ([t]) => {
    const expected = reference(t)
    const got = Calculator.evaluate(print(t))
    if (expected === undefined) {
      assert.isTrue(Either.isLeft(got), `${print(t)} should fail, got ${JSON.stringify(got)}`)
    } else {
      assert.deepStrictEqual(got, Either.right(expected), print(t))
    }
  }, { fastCheck: { numRuns: 500 } })

  it.prop("never throws on arbitrary text", [FC.string({ maxLength: 60 })], ([s]) => {
    assert.isTrue(Either.isEither(Calculator.evaluate(s)))
  }, { fastCheck: { numRuns: 500 } })

  it.prop(
    "never throws on calculator-like text",
    [FC.array(FC.constantFrom(..."0123456789.eE+-*/%^(),  piqrtlnsmaxbd".split("")), { maxLength: 40 })],
    ([chars]) => {
      assert.isTrue(Either.isEither(Calculator.evaluate(chars.join(""))))
    },
    { fastCheck: { numRuns: 1000 } }
  )

  it.effect("the tool answers `expression = result` and hides float noise", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* Tool.execute(BuiltinTools.calculator, { expression: " 2+3*4 " }), "2+3*4 = 14")
      assert.strictEqual(yield* Tool.execute(BuiltinTools.calculator, { expression: "0.1+0.2" }), "0.1+0.2 = 0.3")
    }))

  it.effect("the tool fails with a ToolError, never a defect", () =>
    Effect.gen(function*() {
      const bad = yield* Effect.exit(Tool.execute(BuiltinTools.calculator, { expression: "1/0" }))
      assert.isTrue(Exit.isFailure(bad))
      const err = yield* Effect.flip(Tool.execute(BuiltinTools.calculator, { expression: "1/0" }))
      assert.instanceOf(err, Tool.ToolError)
      assert.strictEqual(err.message, "Division by zero at 2")
      const missing = yield* Effect.flip(Tool.execute(BuiltinTools.calculator, {}))
      assert.include(missing.message, "expression")
    }))

  it.prop("the tool never dies on arbitrary arguments", [FC.anything()], ([args]) => {
    // A defect would make runSync throw; a ToolError is a Left.
    const result = Effect.runSync(Effect.either(Tool.execute(BuiltinTools.calculator, args)))
    if (Either.isLeft(result)) assert.instanceOf(result.left, Tool.ToolError)
  })

  it("the built-in set is small and well-formed", () => {
    assert.isAtMost(BuiltinTools.tools.length, 6)
    assert.deepStrictEqual(BuiltinTools.tools.map((t) => t.name), ["calculator", "current_time"])
    const schema = BuiltinTools.calculator.jsonSchema as { type: string; required: Array<string> }
    assert.strictEqual(schema.type, "object")
    assert.deepStrictEqual(schema.required, ["expression"])
  })
})
