/**
 * `npm start`: the HTTP server (API + web page) on `HOST:PORT` (default
 * 127.0.0.1:3000), over the app layer configured from the environment. Works
 * with zero configuration on the built-in offline demo model. Traces and metrics
 * go to `OTEL_EXPORTER_OTLP_ENDPOINT` when it is set (`Telemetry.layerConfig`).
 *
 * `npm start` runs it compiled (scripts/start.js: build/app/main.js, built when
 * stale, imported in the npm child process itself), so SIGTERM / SIGINT reach
 * this process: `NodeRuntime.runMain` interrupts the program, the layers close
 * (the tool calls in flight get `SHUTDOWN_GRACE_MS` to finish and store their
 * outcomes, SSE streams end, the port is released, runs stay durable) and the
 * process exits with code 0. The tests run the source with `node --import tsx`.
 *
 * @since 0.1.0
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as HttpServer from "@effect/platform/HttpServer"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Database from "../server/Database.js"
import * as OperatorLog from "../server/OperatorLog.js"
import * as Server from "../server/Server.js"
import * as ServerConfig from "../server/ServerConfig.js"
import * as ServerScheduler from "../server/ServerScheduler.js"
import * as SqlMemory from "../server/SqlMemory.js"
import * as Telemetry from "../Telemetry.js"
import * as App from "./App.js"
import { configMessage } from "./startupError.js"

const Banner = Layer.effectDiscard(Effect.gen(function*() {
  const settings = yield* ServerConfig.ServerConfig
  const info = yield* App.AppInfo
  const server = yield* HttpServer.HttpServer
  const port = server.address._tag === "TcpAddress" ? server.address.port : settings.port
  const host = settings.host === "0.0.0.0" || settings.host === "::" ? "localhost" : settings.host
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`
  const model = info.demo ? `${info.model} (OFFLINE DEMO — set LLM_BASE_URL / LLM_MODEL for a real model)` : info.model
  const database = Database.describe(yield* Database.location)
  yield* Effect.logInfo(`react-engine listening on ${url}  model: ${model}  database: ${database}`)
  process.stdout.write(`\n  ReAct engine ready: ${url}\n  model: ${model}\n\n`)
}))

/** The app's services, with the user messages injected into runs kept in the run log. */
const ServerApp = Layer.unwrapEffect(
  Effect.map(
    App.isDemo,
    (demo) => App.layer(App.LlmLayer, { demo, memory: SqlMemory.layerConfig().pipe(Layer.provide(App.EmbedderLayer)) })
  )
)

/**
 * The server program's layer: server + banner over the app services, the
 * storage (database, run log, workflow engine) and the environment's settings.
 *
 * @since 0.1.0
 * @category layers
 */
export const MainLayer = Banner.pipe(
  Layer.provideMerge(Server.layer()),
  Layer.provideMerge(ServerApp),
  Layer.provide(Server.storageConfig),
  Layer.provide(ServerConfig.layerConfig)
)

// A start-up failure the user can fix (the port is taken, bad HOST) is one line
// saying what to do; anything else is reported with its cause.
const reportFailure = <A, E, R>(self: Effect.Effect<A, E, R>) =>
  Effect.tapErrorCause(self, (cause) => {
    const listen = Option.filter(Cause.failureOption(cause), (e): e is E & Server.ListenError =>
      e instanceof Server.ListenError)
    return Option.isSome(listen)
      ? Effect.logError(listen.value.message)
      : Cause.isInterruptedOnly(cause)
      ? Effect.void
      : configMessage(cause) !== undefined
      ? Effect.logError(`react-engine could not start: ${configMessage(cause)}`)
      : Effect.logError("react-engine could not start", cause)
  })

/**
 * `NodeRuntime.runMain` stops the server gracefully on the first SIGINT / SIGTERM and
 * then removes its listeners, so a second one kills the process at once. But one stop
 * often arrives twice within milliseconds: Ctrl-C signals the whole foreground process
 * group (npm and the server) and npm forwards its copy; systemd's default `KillMode`
 * signals every process of the service, npm included. A repeat within a second of the
 * first is that same stop and is ignored; a later one (a second Ctrl-C) still kills at once.
 */
const ignoreRepeatedStop = () => {
  let first: number | undefined
  const onSignal = (signal: NodeJS.Signals) => {
    if (first === undefined) first = Date.now()
    else if (Date.now() - first >= 1000) {
      process.off("SIGINT", onSignal)
      process.off("SIGTERM", onSignal)
      process.kill(process.pid, signal)
    }
  }
  process.on("SIGINT", onSignal)
  process.on("SIGTERM", onSignal)
}

ignoreRepeatedStop()
// telemetry first: the tracer reaches every request and run, and the last spans are flushed after the server closed
// the scheduler outermost: the server's fibers and its runs' give the event loop a turn every few ms
Layer.launch(
  MainLayer.pipe(
    Layer.provide(Telemetry.layerConfig),
    Layer.provide(OperatorLog.layer),
    Layer.provide(ServerScheduler.layerConfig)
  )
).pipe(
  reportFailure,
  (program) => NodeRuntime.runMain(program, { disableErrorReporting: true })
)
