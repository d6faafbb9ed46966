/**
 * The docs' examples as checks (test/docs/*): the `$ curl …` transcripts of a markdown file,
 * a curl of them against a test server (the options the docs use), and the normalisation of
 * what differs from run to run (ids, keys, times) so that a doc and a live answer compare.
 * `…` in a doc stands for any text.
 */
import { readFileSync } from "node:fs"
import { request } from "node:http"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

export const ROOT = fileURLToPath(new URL("../..", import.meta.url))

export interface Command {
  readonly command: string
  /** The command's first line as written. */
  readonly raw: string
  readonly expected: string
  /** 1-based line of the output's first line. */
  readonly outputLine: number
}

export interface Transcript {
  readonly file: string
  /** 1-based line of the first command in the file. */
  readonly line: number
  readonly commands: ReadonlyArray<Command>
}

/** The transcripts of a markdown file (fenced blocks with `$ curl` lines). */
export const transcripts = (file: string): Array<Transcript> => {
  const lines = readFileSync(join(ROOT, file), "utf8").split("\n")
  const found: Array<Transcript> = []
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i].startsWith("```")) continue
    const start = i + 1
    let end = start
    while (end < lines.length && !lines[end].startsWith("```")) end++
    i = end
    const block = lines.slice(start, end)
    if (!block.some((l) => l.startsWith("$ curl"))) continue
    const commands: Array<Command> = []
    let previous = ""
    for (let j = 0; j < block.length;) {
      if (!block[j].startsWith("$ ")) {
        j++
        continue
      }
      const raw = block[j]
      let command = block[j].slice(2)
      while (command.endsWith("\\") && j + 1 < block.length) {
        command = `${command.slice(0, -1).trimEnd()} ${block[++j].trim()}`
      }
      j++
      const from = j
      while (j < block.length && !block[j].startsWith("$ ")) j++
      if (command.startsWith("#")) command = previous
      previous = command
      commands.push({
        command,
        raw,
        expected: block.slice(from, j).join("\n").replace(/\n+$/, ""),
        outputLine: start + from + 1
      })
    }
    found.push({ file, line: start + 1, commands })
  }
  return found
}

/** Shell words of a command line (single and double quotes; no expansions). */
const words = (line: string): Array<string> => {
  const out: Array<string> = []
  let current: string | undefined
  for (let i = 0; i < line.length; i++) {
    const c = line[i]
    if (c === "'" || c === "\"") {
      const close = line.indexOf(c, i + 1)
      if (close < 0) throw new Error(`unclosed quote in: ${line}`)
      current = (current ?? "") + line.slice(i + 1, close)
      i = close
    } else if (c === " ") {
      if (current !== undefined) out.push(current)
      current = undefined
    } else current = (current ?? "") + c
  }
  if (current !== undefined) out.push(current)
  return out
}

/** What curl would print for the command (only the options the docs use). */
export const curl = (base: URL, command: string): Promise<string> => {
  const [main, ...pipes] = command.split(" | ")
  const args = words(main)
  if (args[0] !== "curl") throw new Error(`not a curl command: ${command}`)
  let method: string | undefined
  let url: string | undefined
  let body: string | undefined
  let include = false
  const headers: Array<[string, string]> = []
  for (let i = 1; i < args.length; i++) {
    const a = args[i]
    if (a === "-H") {
      const h = args[++i]
      const colon = h.indexOf(":")
      headers.push([h.slice(0, colon).trim(), h.slice(colon + 1).trim()])
    } else if (a === "-d") body = args[++i]
    else if (a.startsWith("-X")) method = a.length > 2 ? a.slice(2) : args[++i]
    else if (/^-[sNi]+$/.test(a)) include ||= a.includes("i")
    else if (a.startsWith("-")) throw new Error(`curl option not handled here: ${a}`)
    else url = a
  }
  if (url === undefined) throw new Error(`no URL in: ${command}`)
  const target = new URL(url.startsWith("http") ? url : `http://${url}`)
  if (target.host !== "localhost:3000") throw new Error(`the docs' server is localhost:3000, not ${target.host}`)
  return new Promise((resolve, reject) => {
    const req = request({
      host: base.hostname,
      port: base.port,
      path: `${target.pathname}${target.search}`,
      method: method ?? (body === undefined ? "GET" : "POST"),
      // curl's defaults, then the command's headers (which win, Host included)
      headers: Object.fromEntries([
        ["Host", base.host],
        ["User-Agent", "curl/8"],
        ["Accept", "*/*"],
        ...(body === undefined ? [] : [["Content-Type", "application/x-www-form-urlencoded"]]),
        ...headers
      ].reduce((map, [k, v]) => map.set(k.toLowerCase(), v), new Map<string, string>()))
    }, (res) => {
      let text = include
        ? `HTTP/${res.httpVersion} ${res.statusCode} ${res.statusMessage}\n${
          res.rawHeaders.flatMap((v, k) => (k % 2 === 0 ? [`${v}: ${res.rawHeaders[k + 1]}`] : [])).join("\n")
        }\n\n`
        : ""
      res.setEncoding("utf8")
      res.on("data", (d: string) => (text += d))
      res.on("end", () => {
        let out = text
        for (const pipe of pipes) {
          const head = /^head -(\d+)$/.exec(pipe.trim())
          if (head === null) return reject(new Error(`pipe not handled here: ${pipe}`))
          out = out.split("\n").slice(0, Number(head[1])).join("\n")
        }
        resolve(out.replace(/\n+$/, ""))
      })
      res.on("error", reject)
    })
    req.on("error", reject)
    req.setTimeout(30_000, () => req.destroy(new Error(`no answer to: ${command}`)))
    req.end(body)
  })
}

/** What changes from run to run, replaced by a placeholder. */
const VOLATILE: ReadonlyArray<readonly [RegExp, string]> = [
  [/demo_call_[0-9a-f-]+/g, "demo_call_<id>"],
  [/ik_[0-9a-f]{32}/g, "ik_<key>"],
  [/apr_[0-9a-f]{32}/g, "apr_<id>"],
  [/chatcmpl-[0-9a-f-]+/g, "chatcmpl-<id>"],
  [/conv_[0-9a-f-]{36}/g, "conv_<id>"],
  [/run_[0-9a-f-]{36}/g, "run_<id>"],
  [/"(elapsed|iter_elapsed)":[0-9.]+/g, "\"$1\":<s>"],
  [/"created":\d+/g, "\"created\":<t>"],
  [/"(created_at|updated_at)":"[^"]*"/g, "\"$1\":<t>"],
  [/^(date|keep-alive): .*$/gm, "$1: <v>"]
]
export const normal = (text: string) =>
  VOLATILE.reduce((t, [pattern, by]) => t.replace(pattern, by), text.replace(/\r\n/g, "\n"))

/** The doc's output as a pattern: `…` stands for any text. */
export const pattern = (expected: string) =>
  new RegExp(
    `^${normal(expected).split("…").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("[\\s\\S]*?")}$`
  )

export const firstDifference = (expected: string, actual: string) => {
  const e = expected.split("\n")
  const a = actual.split("\n")
  for (let i = 0; i < Math.max(e.length, a.length); i++) {
    if (e[i] !== a[i] && !(e[i]?.includes("…") ?? false)) {
      return `line ${i + 1}:\n  doc:    ${e[i] ?? "(nothing)"}\n  server: ${a[i] ?? "(nothing)"}`
    }
  }
  return "(the lines differ around an elision)"
}
