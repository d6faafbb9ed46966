/**
 * The files the environment names (REACT_GUARDRAILS_FILE, MODEL_PRICES_FILE,
 * MCP_CONFIG) are read through the `FileSystem` in context, not from the disk
 * directly: a file system that serves them from memory (paths that exist on no
 * disk) is what the configuration sees, and every read goes through it.
 */
import * as PlatformError from "@effect/platform/Error"
import * as FileSystem from "@effect/platform/FileSystem"
import { assert, describe, it } from "@effect/vitest"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as AgentConfig from "../src/AgentConfig.js"
import * as McpTools from "../src/McpTools.js"

const memoryFs = (files: Record<string, string>) => {
  const reads: Array<string> = []
  const layer = FileSystem.layerNoop({
    readFileString: (path) => {
      reads.push(path)
      return path in files
        ? Effect.succeed(files[path])
        : Effect.fail(
          new PlatformError.SystemError({
            reason: "NotFound",
            module: "FileSystem",
            method: "readFileString",
            pathOrDescriptor: path
          })
        )
    }
  })
  return { layer, reads }
}

const withEnv = (vars: Record<string, string>) =>
  Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(vars))))

describe("configuration files through FileSystem", () => {
  it.effect("AgentConfig.load reads the guardrails file and the price table from the FileSystem in context", () => {
    const fs = memoryFs({
      "/virtual/guardrails.json": JSON.stringify({
        input: [{ type: "pattern", name: "secrets", patterns: ["password"] }],
        refusal: "No."
      }),
      "/virtual/prices.json": JSON.stringify({ "m-1": { input: 1, output: 2 } })
    })
    return Effect.gen(function*() {
      const options = yield* AgentConfig.load().pipe(
        withEnv({
          REACT_GUARDRAILS_FILE: "/virtual/guardrails.json",
          MODEL_PRICES_FILE: "/virtual/prices.json",
          REACT_RUN_BUDGET_USD: "1"
        })
      )
      assert.strictEqual(options.guardrails?.refusal, "No.")
      assert.strictEqual(options.guardrails?.input?.length, 1)
      assert.deepStrictEqual(options.budget?.prices, { "m-1": { input: 1, output: 2 } })
      assert.deepStrictEqual([...fs.reads].sort(), ["/virtual/guardrails.json", "/virtual/prices.json"])
      // a file the file system does not have is a ConfigError naming the variable and the path
      const missing = yield* Effect.exit(
        AgentConfig.load().pipe(withEnv({ REACT_GUARDRAILS_FILE: "/virtual/none.json" }))
      )
      assert.isTrue(Exit.isFailure(missing))
      assert.include(
        String(Exit.isFailure(missing) ? missing.cause : ""),
        "REACT_GUARDRAILS_FILE: cannot read /virtual/none.json"
      )
    }).pipe(Effect.provide(fs.layer))
  })

  it.scoped("McpTools.layerConfig reads MCP_CONFIG's file from the FileSystem in context", () => {
    const fs = memoryFs({ "/virtual/mcp.json": JSON.stringify({ mcpServers: {} }) })
    return Effect.gen(function*() {
      const mcp = yield* McpTools.fromConfigFile("/virtual/mcp.json")
      assert.deepStrictEqual(mcp.tools, [])
      assert.deepStrictEqual(fs.reads, ["/virtual/mcp.json"])
    }).pipe(Effect.provide(fs.layer))
  })
})
