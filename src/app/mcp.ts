/**
 * `npm run mcp`: the agent as an MCP server on stdio (one tool, `ask {query}`),
 * over the app layer configured from the environment (the same `LLM_*`,
 * `MCP_CONFIG`, `REACT_*` / `DAG_*` variables as `npm start`; `REACT_DEFAULT_MODE`
 * picks how `ask` runs). stdout carries the protocol, so every log line goes to
 * stderr. The process ends when the client closes stdin (or on SIGINT/SIGTERM).
 *
 * ```json
 * { "mcpServers": { "react-agent": { "command": "npm", "args": ["run", "--silent", "mcp"], "cwd": "/path/to/effect-react-engine" } } }
 * ```
 *
 * @since 0.1.0
 */
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import * as AgentMcpServer from "../AgentMcpServer.js"
import { modeConfig } from "../DagAgent.js"
import { AppLayer } from "./App.js"

const McpLayer = Layer.unwrapEffect(Effect.map(modeConfig, (mode) => AgentMcpServer.layer({ mode })))

AgentMcpServer.serveStdio.pipe(
  Effect.provide(McpLayer),
  Effect.provide(AppLayer),
  Effect.provide(Logger.replace(Logger.defaultLogger, Logger.prettyLogger({ stderr: true }))),
  (program) => NodeRuntime.runMain(program, { disablePrettyLogger: true })
)
