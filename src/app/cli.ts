/**
 * `npm run ask -- "question"`: runs the agent once on the app's configuration
 * (`App.AppLayer`, the same layers as the server; the offline demo model when no
 * LLM is configured) and streams its progress and answer to the terminal. See
 * docs/cli.md.
 *
 * @since 0.1.0
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import type * as ConfigError from "effect/ConfigError"
import type * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { readFile } from "node:fs/promises"
import { basename } from "node:path"
import * as Attachments from "../Attachments.js"
import * as Budget from "../Budget.js"
import type * as DagAgentModule from "../DagAgent.js"
import * as ErrorMessage from "../ErrorMessage.js"
import * as Message from "../Message.js"
import type { ReactAgent as ReactAgentTag } from "../ReactAgent.js"
import type { RunEvent } from "../RunEvent.js"
import type { toolCatalogue } from "../server/AppInfo.js"
import * as Telemetry from "../Telemetry.js"
import type { Toolkit as ToolkitTag } from "../Toolkit.js"
import type { AppInfo as AppInfoTag, AppLayer, AppLayerWithMemory } from "./App.js"
import { answerFor, approvalMode, budgetAnswerFor } from "./cliApproval.js"
import { type CliOptions, parse, readSchema, USAGE } from "./cliArgs.js"
import { jsonRenderer, type Output, textRenderer, toolsText } from "./cliRender.js"
import { configMessage } from "./startupError.js"

const out: Output = {
  write: (text) => void process.stdout.write(text),
  error: (text) => void process.stderr.write(text),
  isTTY: process.stdout.isTTY === true
}

const readStdin: Effect.Effect<string> = Effect.async<string>((resume) => {
  const chunks: Array<Buffer> = []
  const onData = (c: Buffer) => chunks.push(c)
  const onEnd = () => resume(Effect.succeed(Buffer.concat(chunks).toString("utf8")))
  process.stdin.on("data", onData).once("end", onEnd).once("error", onEnd)
  return Effect.sync(() => {
    process.stdin.off("data", onData).off("end", onEnd)
    process.stdin.pause()
  })
})

const loadApp = async (): Promise<{
  readonly AppInfo: typeof AppInfoTag
  readonly ReactAgent: typeof ReactAgentTag
  readonly Dag: typeof DagAgentModule
  readonly Toolkit: typeof ToolkitTag
  readonly toolCatalogue: typeof toolCatalogue
  readonly layer: typeof AppLayer
  readonly layerWithMemory: typeof AppLayerWithMemory
}> => {
  const [app, agent, dag, toolkit, info] = await Promise.all([
    import("./App.js"),
    import("../ReactAgent.js"),
    import("../DagAgent.js"),
    import("../Toolkit.js"),
    import("../server/AppInfo.js")
  ])
  return {
    AppInfo: app.AppInfo,
    ReactAgent: agent.ReactAgent,
    Dag: dag,
    Toolkit: toolkit.Toolkit,
    toolCatalogue: info.toolCatalogue,
    layer: app.AppLayer,
    layerWithMemory: app.AppLayerWithMemory
  }
}

/** `--file` paths read and stored; `undefined` (after a message on stderr) when one cannot be read or is refused. */
const attachFiles = (paths: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const store = yield* Attachments.Attachments
    const parts: Array<Message.FilePart> = []
    for (const path of paths) {
      const bytes = yield* Effect.tryPromise(() => readFile(path)).pipe(Effect.either)
      if (bytes._tag === "Left") {
        out.error(`--file ${path}: cannot read it (${ErrorMessage.messageOf(bytes.left.error)})\n`)
        return undefined
      }
      const ref = yield* Effect.either(store.put(new Uint8Array(bytes.right), { name: basename(path) }))
      if (ref._tag === "Left") {
        out.error(`--file ${path}: ${ref.left.message}\n`)
        return undefined
      }
      parts.push(Message.file(ref.right))
    }
    return parts
  })

/** Log lines (MCP start-up, the demo-model notice) as `warning: …` on stderr, so stdout stays the answer / JSON lines. */
const stderrLogger = Logger.make(({ logLevel, message }) => {
  const text = (Array.isArray(message) ? message : [message]).map((m) => (typeof m === "string" ? m : String(m))).join(
    " "
  )
  const line = `${logLevel.label.toLowerCase()}: ${text}`
  out.error((process.stderr.isTTY ? `\x1b[2m${line}\x1b[22m` : line) + "\n")
})

/**
 * The CLI program for the given arguments; succeeds with the exit code
 * (0 done, 1 run failed, 2 usage error; `--tools` lists the tools and exits 0).
 *
 * @since 0.1.0
 * @category programs
 */
export const program = (argv: ReadonlyArray<string>): Effect.Effect<number> =>
  Effect.gen(function*() {
    let parsed = parse(argv)
    if (parsed._tag === "Invalid" && argv.every((a) => a.startsWith("-")) && !process.stdin.isTTY) {
      parsed = parse(argv, yield* readStdin)
    }
    if (parsed._tag === "Help") {
      out.write(USAGE + "\n")
      return 0
    }
    if (parsed._tag === "Invalid") {
      out.error(`${parsed.message}\n\n${USAGE}\n`)
      return 2
    }
    const command = parsed
    // Loaded only for a run, so that --help and usage errors answer at once.
    const { AppInfo, Dag, ReactAgent, Toolkit, layer, layerWithMemory, toolCatalogue } = yield* Effect.promise(() =>
      loadApp()
    )
    // with --user, the memory of DATABASE_PATH's SQLite file (as the server's)
    const cliLayer = parsed._tag === "Run" && parsed.options.userId !== undefined ? layerWithMemory : layer
    const listTools = (json: boolean): Effect.Effect<number, never, ToolkitTag | AppInfoTag> =>
      Effect.gen(function*() {
        const catalogue = toolCatalogue(yield* AppInfo, yield* Toolkit)
        out.write(json ? JSON.stringify(catalogue) + "\n" : toolsText(catalogue, out.isTTY))
        return 0
      })
    /** Budget policy `ask`: the run's wait is the conversation's pending budget approval. */
    const answerBudget = (
      react: Context.Tag.Service<ReactAgentTag>,
      mode: ReturnType<typeof approvalMode>,
      event: Extract<RunEvent, { _tag: "BudgetStatus" }>,
      conversationId: string
    ) =>
      Effect.flatMap(budgetAnswerFor(mode, event), (answer) =>
        Effect.flatMap(react.approvals.pending(conversationId), (pending) => {
          const wait = pending.find((p) =>
            p.toolName === Budget.WAIT_TOOL
          )
          return wait === undefined ?
            Effect.void :
            react.approve({ conversationId, approvalId: wait.approvalId, ...answer }).pipe(
              Effect.catchAll((refused) =>
                Effect.sync(() => out.error(`budget answer not taken: ${refused.message}\n`))
              )
            )
        }))
    const run = (options: CliOptions) =>
      Effect.gen(function*() {
        // `--schema FILE`: refused before anything runs, as the API refuses it (a usage error)
        const schema = options.schemaFile === undefined ? undefined : readSchema(options.schemaFile)
        if (typeof schema === "string") {
          out.error(`✗ ${schema}\n`)
          return 2
        }
        const agents = { react: yield* ReactAgent, dag: yield* Dag.DagAgent }
        const mode = options.mode ?? (yield* Dag.modeConfig)
        const info = yield* AppInfo
        const renderer = yield* Effect.acquireRelease(
          Effect.sync(() => (options.json ? jsonRenderer(out) : textRenderer(out, info))),
          (r) => Effect.sync(r.close)
        )
        const conversationId = options.conversationId ?? crypto.randomUUID()
        const approvals = approvalMode(options.approveAll, process.stdin.isTTY === true)
        // --file: checked and stored (in memory) before the run; a refused file stops here, the model never called
        const files = yield* attachFiles(options.files ?? [])
        if (files === undefined) return 2
        yield* Dag.runWithMode(agents, mode, {
          query: files.length === 0 ? options.question : [{ type: "text", text: options.question }, ...files],
          conversationId,
          ...(options.maxIterations !== undefined ? { maxIterations: options.maxIterations } : {}),
          ...(schema !== undefined ? { output: schema } : {}),
          ...(options.userId !== undefined ? { userId: options.userId } : {})
        }).pipe(Stream.runForEach((event) =>
          Effect.zipRight(
            Effect.sync(() => renderer.event(event)),
            event._tag === "BudgetStatus" && event.status === "exhausted"
              ? answerBudget(agents.react, approvals, event, conversationId)
              : event._tag !== "ApprovalRequested" ?
              Effect.void :
              answerFor(approvals, event).pipe(
                // the App's agents share one Approvals: the ReAct agent answers DAG steps' calls too
                Effect.flatMap((answer) =>
                  agents.react.approve({ conversationId, approvalId: event.approval_id, ...answer })
                ),
                Effect.catchAll((refused) => Effect.sync(() => out.error(`approval not taken: ${refused.message}\n`)))
              )
          )
        ))
        return renderer.failed() ? 1 : 0
      })
    const body: Effect.Effect<
      number,
      ConfigError.ConfigError,
      ToolkitTag | AppInfoTag | ReactAgentTag | DagAgentModule.DagAgent | Scope.Scope | Attachments.Attachments
    > = command._tag === "Tools" ? listTools(command.json) : run(command.options)
    return yield* Effect.scoped(body).pipe(
      Effect.onInterrupt(() => Effect.sync(() => out.error("\n✗ interrupted\n"))),
      Effect.provide(cliLayer),
      // the store `--file` puts into and the models read from (provided under the app: its models take it)
      Effect.provide(Attachments.layerMemory()),
      // built first, closed last: the run's spans are exported before the process exits
      Effect.provide(Telemetry.layerConfig),
      Effect.catchAllCause((cause) =>
        Cause.isInterruptedOnly(cause) ? Effect.interrupt : Effect.sync(() => {
          out.error(`✗ could not start: ${configMessage(cause) ?? Cause.pretty(cause)}\n`)
          return 1
        })
      )
    )
  }).pipe(
    Effect.provide(Logger.replace(Logger.defaultLogger, stderrLogger)),
    Logger.withMinimumLogLevel(LogLevel.Warning)
  )

const isMain = import.meta.url === `file://${process.argv[1]}` || /[/\\]cli\.[tj]s$/.test(process.argv[1] ?? "")

if (isMain) {
  NodeRuntime.runMain(program(process.argv.slice(2)), {
    disableErrorReporting: true,
    disablePrettyLogger: true,
    teardown: (exit, onExit) => {
      const code: number = Exit.isSuccess(exit) && typeof exit.value === "number"
        ? exit.value
        : Exit.isFailure(exit) && Cause.isInterruptedOnly(exit.cause)
        ? 130
        : 1
      process.exitCode = code
      // Exit even if a library left a handle open (e.g. a keep-alive socket).
      setTimeout(() => process.exit(code), 1000).unref()
      onExit(code)
    }
  })
}
