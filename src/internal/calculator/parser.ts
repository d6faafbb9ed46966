/**
 * A safe arithmetic expression evaluator: tokenizer, recursive-descent parser
 * and evaluator. No `eval`, no `Function`: only the grammar below is understood.
 *
 * ```
 * expr     := term (("+" | "-") term)*
 * term     := unary (("*" | "/" | "%") unary)*
 * unary    := ("-" | "+") unary | power
 * power    := primary ("^" unary)?          right-associative: 2^3^2 = 2^9
 * primary  := number | name | name "(" args ")" | "(" expr ")"
 * ```
 *
 * Unary minus binds looser than `^` (as in mathematics: -2^2 = -4). Positions in
 * error messages are 1-based character columns.
 *
 * @internal
 */

/** @internal */
export const MAX_LENGTH = 1000
/** @internal */
export const MAX_DEPTH = 100

/** An evaluation failure with a human-readable message. @internal */
export class CalcFailure {
  readonly _tag = "CalcFailure"
  constructor(readonly message: string, readonly position?: number) {}
}

type Token =
  | { readonly kind: "num"; readonly value: number; readonly pos: number; readonly text: string }
  | { readonly kind: "name"; readonly value: string; readonly pos: number; readonly text: string }
  | { readonly kind: "op"; readonly value: string; readonly pos: number; readonly text: string }
  | { readonly kind: "end"; readonly pos: number; readonly text: string }

const OPS = new Set(["+", "-", "*", "/", "%", "^", "(", ")", ","])
const ALIASES: Record<string, string> = { "×": "*", "·": "*", "÷": "/", "−": "-", "–": "-" }
const NUMBER = /^(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?/
const NAME = /^[a-zA-Z_][a-zA-Z_0-9]*/

const tokenize = (input: string): Array<Token> => {
  const tokens: Array<Token> = []
  let i = 0
  while (i < input.length) {
    const ch = input[i]
    if (/\s/.test(ch)) {
      i++
      continue
    }
    const rest = input.slice(i, i + 400)
    const num = NUMBER.exec(rest)
    if (num) {
      // Reject things like "1.2.3" or "2e" glued to more digits/dots.
      const text = num[0]
      const next = input[i + text.length]
      if (next === "." || (next !== undefined && /[0-9]/.test(next))) {
        throw new CalcFailure(`Malformed number at ${i + 1}`, i + 1)
      }
      tokens.push({ kind: "num", value: Number(text), pos: i + 1, text })
      i += text.length
      continue
    }
    const name = NAME.exec(rest)
    if (name) {
      tokens.push({ kind: "name", value: name[0].toLowerCase(), pos: i + 1, text: name[0] })
      i += name[0].length
      continue
    }
    if (ch === "*" && input[i + 1] === "*") {
      tokens.push({ kind: "op", value: "^", pos: i + 1, text: "**" })
      i += 2
      continue
    }
    const op = ALIASES[ch] ?? ch
    if (OPS.has(op)) {
      tokens.push({ kind: "op", value: op, pos: i + 1, text: ch })
      i++
      continue
    }
    throw new CalcFailure(`Unexpected character '${ch}' at ${i + 1}`, i + 1)
  }
  tokens.push({ kind: "end", pos: input.length + 1, text: "end of input" })
  return tokens
}

/** @internal */
export type Node =
  | { readonly _tag: "Num"; readonly value: number }
  | { readonly _tag: "Neg"; readonly operand: Node }
  | { readonly _tag: "Bin"; readonly op: string; readonly left: Node; readonly right: Node; readonly pos: number }
  | { readonly _tag: "Call"; readonly name: string; readonly args: ReadonlyArray<Node>; readonly pos: number }

const CONSTANTS: Record<string, number> = { pi: Math.PI, e: Math.E, tau: 2 * Math.PI }

interface Fn {
  readonly arity: readonly [number, number]
  readonly apply: (args: ReadonlyArray<number>, pos: number) => number
}

const unary = (f: (x: number) => number): Fn => ({ arity: [1, 1], apply: (a) => f(a[0]) })

const FUNCTIONS: Record<string, Fn> = {
  sqrt: {
    arity: [1, 1],
    apply: ([x], pos) => {
      if (x < 0) throw new CalcFailure(`sqrt of a negative number (${x}) at ${pos}`, pos)
      return Math.sqrt(x)
    }
  },
  abs: unary(Math.abs),
  round: {
    arity: [1, 2],
    apply: ([x, digits], pos) => {
      if (digits === undefined) return Math.round(x)
      if (!Number.isInteger(digits) || digits < 0 || digits > 15) {
        throw new CalcFailure(`round: digits must be an integer between 0 and 15 at ${pos}`, pos)
      }
      const f = Math.pow(10, digits)
      return Math.round(x * f) / f
    }
  },
  floor: unary(Math.floor),
  ceil: unary(Math.ceil),
  min: { arity: [1, Infinity], apply: (a) => Math.min(...a) },
  max: { arity: [1, Infinity], apply: (a) => Math.max(...a) },
  log: {
    arity: [1, 2],
    apply: ([x, base], pos) => {
      if (x <= 0) throw new CalcFailure(`log of a non-positive number (${x}) at ${pos}`, pos)
      if (base === undefined) return Math.log10(x)
      if (base <= 0 || base === 1) throw new CalcFailure(`log: invalid base ${base} at ${pos}`, pos)
      return Math.log(x) / Math.log(base)
    }
  },
  ln: {
    arity: [1, 1],
    apply: ([x], pos) => {
      if (x <= 0) throw new CalcFailure(`ln of a non-positive number (${x}) at ${pos}`, pos)
      return Math.log(x)
    }
  },
  exp: unary(Math.exp),
  sin: unary(Math.sin),
  cos: unary(Math.cos),
  tan: unary(Math.tan)
}

/** The function names the evaluator knows. @internal */
export const functionNames: ReadonlyArray<string> = Object.keys(FUNCTIONS)
/** The constant names the evaluator knows. @internal */
export const constantNames: ReadonlyArray<string> = Object.keys(CONSTANTS)

const describe = (t: Token): string => (t.kind === "end" ? "end of input" : `token '${t.text}' at ${t.pos}`)

/** Parses an expression to a tree, throwing `CalcFailure`. @internal */
export const parse = (input: string): Node => {
  const tokens = tokenize(input)
  let i = 0
  let depth = 0
  const peek = () => tokens[i]
  const isOp = (value: string) => {
    const t = tokens[i]
    return t.kind === "op" && t.value === value
  }
  const unexpected = (t: Token): CalcFailure =>
    t.kind === "end"
      ? new CalcFailure(`Unexpected end of input at ${t.pos}`, t.pos)
      : new CalcFailure(`Unexpected ${describe(t)}`, t.pos)
  const enter = () => {
    if (++depth > MAX_DEPTH) throw new CalcFailure(`Expression is nested too deeply (max ${MAX_DEPTH})`, peek().pos)
  }

  const expr = (): Node => {
    enter()
    let left = term()
    while (isOp("+") || isOp("-")) {
      const t = tokens[i++]
      left = { _tag: "Bin", op: t.kind === "op" ? t.value : "+", left, right: term(), pos: t.pos }
    }
    depth--
    return left
  }
  const term = (): Node => {
    let left = unaryExpr()
    while (isOp("*") || isOp("/") || isOp("%")) {
      const t = tokens[i++]
      left = { _tag: "Bin", op: t.kind === "op" ? t.value : "*", left, right: unaryExpr(), pos: t.pos }
    }
    return left
  }
  const unaryExpr = (): Node => {
    if (isOp("-") || isOp("+")) {
      const negative = isOp("-")
      i++
      enter()
      const operand = unaryExpr()
      depth--
      return negative ? { _tag: "Neg", operand } : operand
    }
    return power()
  }
  const power = (): Node => {
    const base = primary()
    if (isOp("^")) {
      const t = tokens[i++]
      enter()
      const exponent = unaryExpr()
      depth--
      return { _tag: "Bin", op: "^", left: base, right: exponent, pos: t.pos }
    }
    return base
  }
  const primary = (): Node => {
    const t = peek()
    if (t.kind === "num") {
      i++
      return { _tag: "Num", value: t.value }
    }
    if (t.kind === "op" && t.value === "(") {
      i++
      const inner = expr()
      if (!isOp(")")) {
        const c = peek()
        throw c.kind === "end"
          ? new CalcFailure(`Missing ')' for '(' at ${t.pos}`, c.pos)
          : new CalcFailure(`Expected ')' but found ${describe(c)}`, c.pos)
      }
      i++
      return inner
    }
    if (t.kind === "name") {
      i++
      if (isOp("(")) {
        const fn = FUNCTIONS[t.value]
        if (fn === undefined) {
          throw new CalcFailure(`Unknown function '${t.text}' at ${t.pos} (known: ${functionNames.join(", ")})`, t.pos)
        }
        const open = tokens[i++]
        const args: Array<Node> = []
        if (!isOp(")")) {
          args.push(expr())
          while (isOp(",")) {
            i++
            args.push(expr())
          }
        }
        if (!isOp(")")) {
          const c = peek()
          throw c.kind === "end"
            ? new CalcFailure(`Missing ')' for '(' at ${open.pos}`, c.pos)
            : new CalcFailure(`Expected ',' or ')' but found ${describe(c)}`, c.pos)
        }
        i++
        const [lo, hi] = fn.arity
        if (args.length < lo || args.length > hi) {
          const expected = lo === hi ? `${lo}` : hi === Infinity ? `at least ${lo}` : `${lo} to ${hi}`
          throw new CalcFailure(
            `${t.value}() takes ${expected} argument${expected === "1" ? "" : "s"}, got ${args.length} at ${t.pos}`,
            t.pos
          )
        }
        return { _tag: "Call", name: t.value, args, pos: t.pos }
      }
      const constant = CONSTANTS[t.value]
      if (constant === undefined) {
        throw FUNCTIONS[t.value] !== undefined
          ? new CalcFailure(`Function '${t.text}' needs parentheses, e.g. ${t.value}(2), at ${t.pos}`, t.pos)
          : new CalcFailure(`Unknown name '${t.text}' at ${t.pos} (constants: ${constantNames.join(", ")})`, t.pos)
      }
      return { _tag: "Num", value: constant }
    }
    throw unexpected(t)
  }

  if (tokens.length === 1) throw new CalcFailure("Empty expression")
  const tree = expr()
  if (peek().kind !== "end") throw unexpected(peek())
  return tree
}

/** Evaluates a tree, throwing `CalcFailure` on division by zero or a domain error. @internal */
export const evaluateNode = (node: Node): number => {
  switch (node._tag) {
    case "Num":
      return node.value
    case "Neg":
      return -evaluateNode(node.operand)
    case "Call":
      return FUNCTIONS[node.name].apply(node.args.map(evaluateNode), node.pos)
    case "Bin": {
      const a = evaluateNode(node.left)
      const b = evaluateNode(node.right)
      switch (node.op) {
        case "+":
          return a + b
        case "-":
          return a - b
        case "*":
          return a * b
        case "/":
          if (b === 0) throw new CalcFailure(`Division by zero at ${node.pos}`, node.pos)
          return a / b
        case "%":
          if (b === 0) throw new CalcFailure(`Modulo by zero at ${node.pos}`, node.pos)
          return a % b
        default:
          return Math.pow(a, b)
      }
    }
  }
}

/**
 * Parses and evaluates; a result that is not a finite number is a failure.
 * Never throws anything but `CalcFailure`.
 *
 * @internal
 */
export const evaluate = (input: string): number => {
  if (input.length > MAX_LENGTH) throw new CalcFailure(`Expression too long (${input.length} chars, max ${MAX_LENGTH})`)
  let value: number
  try {
    value = evaluateNode(parse(input))
  } catch (e) {
    if (e instanceof CalcFailure) throw e
    // e.g. a RangeError from the runtime: report it, never crash.
    throw new CalcFailure(`Could not evaluate: ${e instanceof Error ? e.message : String(e)}`)
  }
  if (Number.isNaN(value)) throw new CalcFailure("Result is not a number")
  if (!Number.isFinite(value)) throw new CalcFailure("Result is too large (overflow)")
  return value
}

/** Formats a result, hiding floating-point noise (0.1 + 0.2 → 0.3). @internal */
export const format = (value: number): string => {
  if (Object.is(value, -0)) return "0"
  const rounded = Number(value.toPrecision(15))
  return String(rounded)
}
