/**
 * Command-line arguments of `npm run ask`, parsed with node's `util.parseArgs`.
 *
 * @internal
 */
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { readFileSync } from "node:fs"
import { parseArgs } from "node:util"
import * as Output from "../Output.js"
import { MaxIterations } from "../server/ApiSchema.js"

/** @internal */
export interface CliOptions {
  readonly question: string
  readonly json: boolean
  readonly conversationId?: string
  readonly maxIterations?: number
  /** Default: `REACT_DEFAULT_MODE` (else react). */
  readonly mode?: "react" | "dag" | "auto"
  /** Approve every tool call that needs approval, without asking. */
  readonly approveAll: boolean
  /** `--schema FILE`: a JSON Schema file; the answer is a value of it. */
  readonly schemaFile?: string
  /** Files sent with the question (`--file`, repeatable): images, PDFs, text files. */
  readonly files?: ReadonlyArray<string>
  /** The user whose memory the run uses (kept in DATABASE_PATH's SQLite file; docs/memory.md). */
  readonly userId?: string
}

/** @internal */
export type Parsed =
  | { readonly _tag: "Run"; readonly options: CliOptions }
  | { readonly _tag: "Tools"; readonly json: boolean }
  | { readonly _tag: "Help" }
  | { readonly _tag: "Invalid"; readonly message: string }

/** @internal */
export const USAGE = `Usage: npm run ask -- [options] "question"
       echo "question" | npm run ask -- [options]
       npm run -s ask -- --json "question"    (-s: without npm's own lines, so stdout is only JSON)

Runs the ReAct agent once and streams its progress and answer to the terminal.

Options:
  --json                  print every event as a JSON line ({"event","data"}), ending with "done"
  --conversation <id>     conversation id (the interrupt queue key; a fresh one when absent)
  --user <id>             the user whose memory the run reads and writes (working memory, recall of
                          their earlier turns), kept in DATABASE_PATH's SQLite file like the server's
  --max-iterations <n>    cap on tool-loop LLM calls for this run, 1 to 200
                          (default: REACT_MAX_ITERATIONS or 50)
  --mode <mode>           react (one tool loop), dag (a plan of steps run in parallel, checked and
                          re-planned), or auto (a router picks); default: REACT_DEFAULT_MODE or react
  --schema <file>         a JSON Schema (an object): the answer is a value of it, printed as JSON
                          (with --json: done.output); a value that does not validate after
                          REACT_OUTPUT_RETRIES re-asks fails the run (error code output_invalid)
  --tools                 list the agent's tools (name, source, description) and the MCP
                          servers that did not start, then exit (with --json: one JSON object)
  --file <path>           send a file with the question: an image (png, jpeg, gif, webp), a PDF or a
                          text file (txt, md, csv, json); repeatable. A model that cannot read it
                          (LLM_INPUT_MODALITIES) gets a note naming it
  --approve-all           approve every tool call that needs approval (REACT_APPROVAL_TOOLS, MCP servers
                          with "needsApproval": true) without asking; otherwise the CLI asks on the
                          terminal (y approves; anything else denies, a text being the reason), and with
                          no terminal to ask (stdin not a TTY) such calls are denied ("no approver")
  -h, --help              show this help

The model comes from LLM_BASE_URL / LLM_API_KEY / LLM_MODEL; with none set, the
built-in offline demo model answers (arithmetic and time questions). MCP servers
from the file named by MCP_CONFIG are started for the run.

Exit codes: 0 the run finished, 1 the run failed, 2 bad usage, 130 interrupted (Ctrl-C).`

const decodeMaxIterations = Schema.decodeUnknownEither(MaxIterations)

/**
 * Parses argv (without node and the script). The question is the positional
 * arguments joined by spaces; `stdin` is used when there are none.
 *
 * @internal
 */
export const parse = (argv: ReadonlyArray<string>, stdin?: string): Parsed => {
  let values: {
    json?: boolean
    conversation?: string
    user?: string
    "max-iterations"?: string
    mode?: string
    schema?: string
    tools?: boolean
    "approve-all"?: boolean
    file?: Array<string>
    help?: boolean
  }
  let positionals: Array<string>
  try {
    const parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        json: { type: "boolean" },
        conversation: { type: "string" },
        user: { type: "string" },
        "max-iterations": { type: "string" },
        mode: { type: "string" },
        schema: { type: "string" },
        tools: { type: "boolean" },
        "approve-all": { type: "boolean" },
        file: { type: "string", multiple: true },
        help: { type: "boolean", short: "h" }
      }
    })
    values = parsed.values
    positionals = parsed.positionals
  } catch (e) {
    // node's parseArgs leaves a quote open ("…as in '-- \"--bogus\""): said plainly instead
    const unknown = /^Unknown option '([^']*)'/.exec((e as Error).message)
    return unknown === null
      ? { _tag: "Invalid", message: (e as Error).message }
      : {
        _tag: "Invalid",
        message: `Unknown option '${unknown[1]}'. A question that starts with '-' goes after '--': npm run ask -- -- "${
          unknown[1]
        } …"`
      }
  }
  if (values.help) return { _tag: "Help" }
  if (values.tools) {
    return positionals.length > 0
      ? { _tag: "Invalid", message: "--tools takes no question." }
      : { _tag: "Tools", json: values.json === true }
  }
  const question = (positionals.length > 0 ? positionals.join(" ") : stdin ?? "").trim()
  if (question === "") return { _tag: "Invalid", message: "No question given." }
  let maxIterations: number | undefined
  if (values["max-iterations"] !== undefined) {
    const raw = values["max-iterations"].trim()
    // the same rule as the API's max_iterations
    const decoded = decodeMaxIterations(/^\d+$/.test(raw) ? Number(raw) : NaN)
    if (Either.isLeft(decoded)) {
      return { _tag: "Invalid", message: `--max-iterations must be an integer from 1 to 200, got "${raw}".` }
    }
    maxIterations = decoded.right
  }
  const mode = values.mode?.trim()
  if (mode !== undefined && mode !== "react" && mode !== "dag" && mode !== "auto") {
    return { _tag: "Invalid", message: `--mode must be react, dag or auto, got "${mode}".` }
  }
  const schemaFile = values.schema?.trim()
  if (values.schema !== undefined && schemaFile === "") return { _tag: "Invalid", message: "--schema needs a file." }
  const conversation = values.conversation?.trim()
  if (values.conversation !== undefined && (conversation === "" || conversation!.length > 200)) {
    return { _tag: "Invalid", message: "--conversation must be a non-empty id of at most 200 characters." }
  }
  const user = values.user?.trim()
  if (values.user !== undefined && !/^[A-Za-z0-9._:@-]{1,128}$/.test(user ?? "")) {
    return { _tag: "Invalid", message: "--user must be 1-128 characters of letters, digits, '.', '_', ':', '@', '-'." }
  }
  return {
    _tag: "Run",
    options: {
      question,
      ...(user ? { userId: user } : {}),
      json: values.json === true,
      approveAll: values["approve-all"] === true,
      ...(conversation ? { conversationId: conversation } : {}),
      ...(maxIterations !== undefined ? { maxIterations } : {}),
      ...(mode !== undefined ? { mode } : {}),
      ...(schemaFile ? { schemaFile } : {}),
      ...(values.file !== undefined && values.file.length > 0 ? { files: values.file } : {})
    }
  }
}

/**
 * The output schema of `--schema FILE` (a JSON Schema, as the API's
 * `output_schema`), or what is wrong with it.
 *
 * @internal
 */
export const readSchema = (file: string): Schema.Schema<unknown, unknown> | string => {
  let json: unknown
  try {
    json = JSON.parse(readFileSync(file, "utf8"))
  } catch (e) {
    return `--schema ${file}: ${(e as Error).message}`
  }
  const converted = Output.fromJsonSchema(json)
  if (Either.isRight(converted)) return converted.right
  const { keyword, message, path } = converted.left
  return `--schema ${file}: unsupported JSON Schema: ${message} (keyword "${keyword}" at ${
    path === "" ? "the root" : path
  })`
}
