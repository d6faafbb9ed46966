/**
 * A real MCP server over stdio whose tools record every execution to a file
 * (`RECORD_FILE`; `INSTANCE`, when set, is appended to each line): `record {label, ms}` (has side effects: not idempotent) and
 * `record_idem {label, ms}` (annotated `idempotentHint`). Each call appends
 * `start <label>` when it begins and `end <label>` when it finishes after `ms`.
 * It exits as soon as its parent goes (stdin closes), so a call in flight when
 * the server is killed never finishes.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js"
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js"
import { appendFileSync } from "node:fs"
import { z } from "zod"

const file = process.env.RECORD_FILE ?? "/dev/null"
// with several servers, each line says which one ran the call
const instance = process.env.INSTANCE
const record = (line: string) => appendFileSync(file, `${line}${instance ? ` ${instance}` : ""}\n`)

const server = new McpServer({ name: "recorder", version: "1.0.0" })
const run = async ({ label, ms }: { label: string; ms: number }) => {
  record(`start ${label}`)
  await new Promise((resolve) => setTimeout(resolve, ms))
  record(`end ${label}`)
  return { content: [{ type: "text" as const, text: `recorded ${label}` }] }
}
server.registerTool("record", {
  description: "Records a label (a side effect)",
  inputSchema: { label: z.string(), ms: z.number() }
}, run)
server.registerTool("record_idem", {
  description: "Records a label (safe to repeat)",
  inputSchema: { label: z.string(), ms: z.number() },
  annotations: { idempotentHint: true }
}, run)

process.stdin.on("end", () => process.exit(0))
process.stdin.on("close", () => process.exit(0))
await server.connect(new StdioServerTransport())
