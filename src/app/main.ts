/**
 * `npm start`: the HTTP server (API + web page) on `HOST:PORT` (default
 * 127.0.0.1:3000), over the app layer configured from the environment. Works
 * with zero configuration on the built-in offline demo model. Traces and metrics
 * go to `OTEL_EXPORTER_OTLP_ENDPOINT` when it is set (`Telemetry.layerConfig`).
 *
 * @since 0.1.0
 */
import * as HttpServer from "@effect/platform/HttpServer"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { AppInfo, AppLayer } from "./App.js"
import * as Server from "../server/Server.js"
import * as ServerConfig from "../server/ServerConfig.js"
import * as Telemetry from "../Telemetry.js"

const Banner = Layer.effectDiscard(Effect.gen(function*() {
  const settings = yield* ServerConfig.ServerConfig
  const info = yield* AppInfo
  const server = yield* HttpServer.HttpServer
  const port = server.address._tag === "TcpAddress" ? server.address.port : settings.port
  const host = settings.host === "0.0.0.0" || settings.host === "::" ? "localhost" : settings.host
  const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}`
  const model = info.demo ? `${info.model} (OFFLINE DEMO — set LLM_BASE_URL / LLM_MODEL for a real model)` : info.model
  yield* Effect.logInfo(`react-engine listening on ${url}  model: ${model}  database: ${settings.databasePath}`)
  process.stdout.write(`\n  ReAct engine ready: ${url}\n  model: ${model}\n\n`)
}))

/**
 * The server program's layer: server + banner over the app services and the
 * environment's settings.
 *
 * @since 0.1.0 @category layers
 */
export const MainLayer = Banner.pipe(
  Layer.provideMerge(Server.layer()),
  Layer.provide(AppLayer),
  Layer.provide(ServerConfig.layerConfig)
)

// telemetry first: the tracer reaches every request and run, and the last spans are flushed after the server closed
Layer.launch(MainLayer.pipe(Layer.provide(Telemetry.layerConfig))).pipe(NodeRuntime.runMain)
