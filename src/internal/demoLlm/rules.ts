/**
 * The offline demo model's rules: what a question asks for (arithmetic, the
 * time), in which language, and the answer texts.
 *
 * @internal
 */
import * as Either from "effect/Either"
import * as Calculator from "../../tools/Calculator.js"

/** @internal */
export type Lang = "en" | "zh"

/** Chinese characters → Chinese; everything else English. @internal */
export const detectLanguage = (text: string): Lang => (/[\u4e00-\u9fff]/.test(text) ? "zh" : "en")

/** A tool call the demo wants to make. @internal */
export interface PlannedCall {
  readonly tool: "calculator" | "current_time"
  readonly args: Record<string, unknown>
}

const FUNCS = "sqrt|abs|round|floor|ceil|min|max|log|ln|exp|sin|cos|tan"

/** Word operators → symbols, so "3 times 4" and "3乘以4" become "3 * 4". */
const normalize = (text: string): string =>
  text
    .replace(/(\d+(?:\.\d+)?)\s*%\s*of\s+/gi, "$1/100*")
    .replace(/\bsquare root of\s+(\d+(?:\.\d+)?)/gi, "sqrt($1)")
    .replace(/(\d+(?:\.\d+)?)\s+squared\b/gi, "$1^2")
    .replace(/(\d+(?:\.\d+)?)\s+cubed\b/gi, "$1^3")
    .replace(/\b(?:multiplied by|times)\b/gi, "*")
    .replace(/\bdivided by\b/gi, "/")
    .replace(/(\d)\s+over\s+(?=\d)/gi, "$1 / ")
    .replace(/\bplus\b/gi, "+")
    .replace(/\bminus\b/gi, "-")
    .replace(/\bto the power of\b/gi, "^")
    .replace(/(\d)\s*[xX]\s*(?=\d)/g, "$1*")
    .replace(/乘以|乘/g, "*")
    .replace(/除以/g, "/")
    .replace(/加上|加/g, "+")
    .replace(/减去|减/g, "-")
    .replace(/的平方/g, "^2")
    .replace(/[（]/g, "(")
    .replace(/[）]/g, ")")
    .replace(/[，]/g, ",")

const CANDIDATE = new RegExp(
  `(?:-\\s*)?(?:\\d|\\.\\d|\\(|(?:${FUNCS})\\s*\\(|\\bpi\\b)(?:\\d|[eE][+-]?\\d|[.\\s+\\-*/%^(),×÷]|(?:${FUNCS})\\s*\\(|\\bpi\\b)*`,
  "gi"
)
const HAS_OPERATOR = new RegExp(`\\d\\s*(?:[+\\-*/%^×÷]|\\*\\*)\\s*[\\d(.-]|(?:${FUNCS})\\s*\\(|\\)\\s*[+\\-*/%^]`, "i")
const DATE_LIKE = /^\s*\d{4}-\d{1,2}-\d{1,2}\s*$/

const trimCandidate = (raw: string): string => {
  let s = raw.trim().replace(/[\s+\-*/%^,×÷.]+$/, "").trim()
  // drop unbalanced trailing ")" (e.g. "(what is 2+2)")
  const balance = (x: string) => [...x].reduce((n, c) => n + (c === "(" ? 1 : c === ")" ? -1 : 0), 0)
  while (balance(s) < 0 && s.endsWith(")")) s = s.slice(0, -1).trim()
  while (balance(s) > 0 && s.startsWith("(")) s = s.slice(1).trim()
  return s
}

/**
 * The arithmetic expression in a question, if any: the longest run of
 * arithmetic that contains an operator or a function call (or, when the user
 * says "calculate"/"compute"/"计算", any number).
 *
 * @internal
 */
export const extractExpression = (question: string): string | undefined => {
  const text = normalize(question)
  const asked = /\b(?:calculate|compute|evaluate|calc)\b|计算|算一下|等于多少/i.test(question)
  let best: string | undefined
  for (const match of text.matchAll(CANDIDATE)) {
    const candidate = trimCandidate(match[0])
    if (candidate === "" || DATE_LIKE.test(candidate)) continue
    if (!HAS_OPERATOR.test(candidate) && !asked) continue
    if (!/\d|pi/i.test(candidate)) continue
    if (best === undefined || candidate.length > best.length) best = candidate
  }
  return best
}

const CITIES: ReadonlyArray<readonly [RegExp, string]> = [
  [/\b(?:tokyo|japan|osaka)\b|东京|日本/i, "Asia/Tokyo"],
  [/\b(?:beijing|shanghai|china|shenzhen|guangzhou)\b|北京|上海|中国|深圳|广州/i, "Asia/Shanghai"],
  [/\bhong kong\b|香港/i, "Asia/Hong_Kong"],
  [/\b(?:taipei|taiwan)\b|台北/i, "Asia/Taipei"],
  [/\bsingapore\b|新加坡/i, "Asia/Singapore"],
  [/\b(?:seoul|korea)\b|首尔/i, "Asia/Seoul"],
  [/\b(?:mumbai|delhi|india|bangalore)\b|印度|孟买/i, "Asia/Kolkata"],
  [/\bdubai\b|迪拜/i, "Asia/Dubai"],
  [/\bsydney\b|悉尼/i, "Australia/Sydney"],
  [/\b(?:london|uk|england)\b|伦敦|英国/i, "Europe/London"],
  [/\b(?:paris|france)\b|巴黎|法国/i, "Europe/Paris"],
  [/\b(?:berlin|germany)\b|柏林|德国/i, "Europe/Berlin"],
  [/\b(?:madrid|spain)\b|马德里/i, "Europe/Madrid"],
  [/\b(?:rome|italy)\b|罗马/i, "Europe/Rome"],
  [/\bmoscow\b|莫斯科/i, "Europe/Moscow"],
  [/\b(?:new york|nyc|boston|washington)\b|纽约/i, "America/New_York"],
  [/\bchicago\b|芝加哥/i, "America/Chicago"],
  [/\b(?:los angeles|san francisco|seattle|california)\b|洛杉矶|旧金山/i, "America/Los_Angeles"],
  [/\btoronto\b|多伦多/i, "America/Toronto"],
  [/\bs[aã]o paulo\b|圣保罗/i, "America/Sao_Paulo"],
  [/\b(?:utc|gmt)\b/i, "UTC"]
]

const TIME_ASKED =
  /\bwhat(?:'s| is)?\s+(?:the\s+)?(?:current\s+)?(?:time|date|day)\b|\btime\s+(?:is it|now|in)\b|\bcurrent\s+(?:time|date)\b|\bwhat day\b|\btoday'?s date\b|\bwhat time\b|\bdate today\b|几点|时间|日期|星期几|礼拜几|今天几号/i

/**
 * The time zone a time question asks about: a known city, an IANA name, or the
 * capitalised place after "in"; `undefined` when the question is not about time.
 *
 * @internal
 */
export const extractTimeQuestion = (question: string): { readonly timezone: string } | undefined => {
  if (!TIME_ASKED.test(question)) return undefined
  const iana = /\b([A-Z][a-zA-Z]+\/[A-Z][a-zA-Z_]+(?:\/[A-Z][a-zA-Z_]+)?)\b/.exec(question)
  if (iana) return { timezone: iana[1] }
  for (const [pattern, zone] of CITIES) if (pattern.test(question)) return { timezone: zone }
  const place = /\bin\s+([A-Z][a-zA-Z]+(?:\s+[A-Z][a-zA-Z]+)?)/.exec(question)
  if (place) return { timezone: place[1] }
  return { timezone: "UTC" }
}

/** What the demo would call for this question, in order. @internal */
export const plan = (question: string): Array<PlannedCall> => {
  const calls: Array<PlannedCall> = []
  const expression = extractExpression(question)
  if (expression !== undefined) calls.push({ tool: "calculator", args: { expression } })
  const time = extractTimeQuestion(question)
  if (time !== undefined) calls.push({ tool: "current_time", args: time })
  return calls
}

/** A tool result as the demo reads it. @internal */
export interface Observed {
  readonly tool: string
  readonly args: Record<string, unknown>
  /** The result text, or the error message. */
  readonly text: string
  readonly error: boolean
}

const line = (text: string, label: string): string | undefined =>
  new RegExp(`^${label}:\\s*(.+)$`, "m").exec(text)?.[1]?.trim()

const describeResult = (o: Observed, lang: Lang): string => {
  if (o.error) {
    const message = o.text.replace(/^Error:\s*/, "")
    return lang === "zh"
      ? `工具 \`${o.tool}\` 出错：${message}`
      : `The \`${o.tool}\` tool reported an error: ${message}`
  }
  if (o.tool === "calculator") {
    const m = /^(.*)=\s*([^=]+)$/s.exec(o.text)
    const expr = m ? m[1].trim() : String(o.args.expression ?? "")
    const value = m ? m[2].trim() : o.text.trim()
    return lang === "zh" ? `计算结果：${expr} = **${value}**` : `${expr} = **${value}**`
  }
  if (o.tool === "current_time") {
    const zone = line(o.text, "Time zone") ?? String(o.args.timezone ?? "UTC")
    const human = line(o.text, "Human-readable")
    const iso = line(o.text, "Local time")
    if (human) {
      return lang === "zh"
        ? `${zone} 的当前时间是 **${human}**（${iso ?? ""}）。`
        : `The current time in ${zone} is **${human}** (${iso ?? ""}).`
    }
  }
  const text = o.text.length > 500 ? `${o.text.slice(0, 500)}…` : o.text
  return lang === "zh" ? `\`${o.tool}\` 的结果：\n${text}` : `Result of \`${o.tool}\`:\n${text}`
}

/**
 * The tools by source, for the explanation: plain names first, then one line per
 * MCP server (`server__tool` names, listed without the prefix).
 */
const toolLines = (tools: ReadonlyArray<string>, lang: Lang): Array<string> => {
  const plain: Array<string> = []
  const byServer = new Map<string, Array<string>>()
  for (const name of tools) {
    const cut = name.indexOf("__")
    if (cut <= 0) {
      plain.push(name)
      continue
    }
    const server = name.slice(0, cut)
    const list = byServer.get(server) ?? []
    list.push(name.slice(cut + 2))
    byServer.set(server, list)
  }
  const code = (names: ReadonlyArray<string>) => names.map((n) => `\`${n}\``).join(", ")
  const lines = plain.length > 0 ? [`- ${code(plain)}`] : []
  for (const [server, names] of byServer) {
    lines.push(
      lang === "zh"
        ? `- MCP 服务器 \`${server}\`（${names.length} 个）：${code(names)}`
        : `- from the MCP server \`${server}\` (${names.length}): ${code(names)}`
    )
  }
  return lines
}

/**
 * The explanation given when the demo cannot help: what it is, the tools the
 * agent really has (`tools`: every tool name the request offered or could load),
 * and how to configure a real model.
 *
 * @internal
 */
export const explanation = (lang: Lang, tools: ReadonlyArray<string> = []): string => {
  const inventory = tools.length === 0
    ? ""
    : lang === "zh"
    ? `\n\n这个智能体共有 ${tools.length} 个工具，真正的大模型都可以使用：\n${toolLines(tools, lang).join("\n")}`
    : `\n\nThe agent has ${tools.length} tool${tools.length === 1 ? "" : "s"}, all usable by a real model:\n${
      toolLines(tools, lang).join("\n")
    }`
  return lang === "zh"
    ? "我是本 ReAct 引擎内置的**离线演示模型**：当前没有配置真正的大模型，所以我按固定规则工作：算术用 `calculator` 工具，查询时间用 `current_time` 工具。" +
      inventory + "\n\n" +
      "要使用真实模型，请设置 `LLM_BASE_URL`、`LLM_API_KEY` 和 `LLM_MODEL`（任何兼容 OpenAI 的接口均可）后重启。\n\n" +
      "可以试试：“(17 + 25) * 3 等于多少？” 或 “东京现在几点？”"
    : "I'm the **offline demo model** built into this ReAct engine: no LLM is configured, so I follow fixed rules: " +
      "arithmetic goes to the `calculator` tool, questions about the time to `current_time`." +
      inventory + "\n\n" +
      "To use a real model, set `LLM_BASE_URL`, `LLM_API_KEY` and `LLM_MODEL` (any OpenAI-compatible endpoint) and restart.\n\n" +
      "Try: \"What is (17 + 25) * 3?\" or \"What time is it in Tokyo?\""
}

/**
 * The answer to a question from what the tools returned. `interrupt` is the
 * message the user sent mid-run (acknowledged first). With no results: a direct
 * computation when possible, else the explanation (naming `tools`).
 *
 * @internal
 */
export const compose = (
  question: string,
  results: ReadonlyArray<Observed>,
  interrupt?: string,
  tools: ReadonlyArray<string> = []
): string => {
  const lang = detectLanguage(interrupt ?? question)
  const parts: Array<string> = []
  if (interrupt !== undefined) {
    parts.push(lang === "zh" ? `收到你的新消息：“${interrupt}”。` : `Noted your new message: "${interrupt}".`)
  }
  if (results.length > 0) {
    for (const r of results) parts.push(describeResult(r, lang))
  } else {
    const expression = extractExpression(interrupt ?? question)
    const direct = expression === undefined ? undefined : Calculator.evaluate(expression)
    if (expression !== undefined && direct !== undefined && Either.isRight(direct)) {
      parts.push(`${expression} = **${Calculator.formatNumber(direct.right)}**`)
    } else {
      parts.push(explanation(lang, tools))
    }
  }
  return parts.join("\n\n")
}
