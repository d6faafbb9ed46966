import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { assert, describe, it } from "@effect/vitest"
import * as Config from "effect/Config"
import * as ConfigProvider from "effect/ConfigProvider"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as McpTools from "../src/McpTools.js"
import * as Tool from "../src/Tool.js"
import { mcpHttpServer } from "./utils/mcpHttpServer.js"

const require = createRequire(import.meta.url)
const FS_SERVER = require.resolve("@modelcontextprotocol/server-filesystem/dist/index.js")

/** Runs an effect with its log lines captured. */
const captureLogs = () => {
  const lines: Array<string> = []
  const logger = Logger.make(({ logLevel, message }) => {
    lines.push(`${logLevel.label}: ${Array.isArray(message) ? message.join(" ") : String(message)}`)
  })
  return { lines, layer: Logger.replace(Logger.defaultLogger, logger) }
}

const tempDir = () => {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), "mcp-test-")))
  writeFileSync(join(dir, "hello.txt"), "Hello from MCP!\nSecond line.")
  return dir
}

const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

const waitUntilGone = (pid: number) =>
  Effect.gen(function*() {
    for (let i = 0; i < 100 && isAlive(pid); i++) yield* Effect.sleep("50 millis")
    return !isAlive(pid)
  })

const fsConfig = (dir: string): McpTools.McpConfig => ({
  mcpServers: {
    filesystem: { command: process.execPath, args: [FS_SERVER, dir] },
    broken: { command: "/nonexistent/definitely-not-a-command" }
  }
})

describe("McpTools", () => {
  it("names tools server__tool, sanitized and capped at 64 chars", () => {
    assert.strictEqual(McpTools.toolName("filesystem", "read_file"), "filesystem__read_file")
    assert.strictEqual(McpTools.toolName("my server", "get.data/v2"), "my_server__get_data_v2")
    const long = McpTools.toolName("s".repeat(40), "t".repeat(40))
    assert.strictEqual(long.length, 64)
    assert.match(long, /^[a-zA-Z0-9_-]+$/)
    assert.notStrictEqual(long, McpTools.toolName("s".repeat(40), "t".repeat(41)))
  })

  it.effect("parses the shared config format and rejects bad shapes clearly", () =>
    Effect.gen(function*() {
      const ok = yield* McpTools.parseConfig(JSON.stringify({
        mcpServers: { a: { command: "npx", args: ["-y", "x"], env: { K: "v" } }, b: { url: "https://h/mcp" } }
      }))
      assert.deepStrictEqual(Object.keys(ok.mcpServers), ["a", "b"])
      const notJson = yield* Effect.flip(McpTools.parseConfig("{nope"))
      assert.include(notJson, "invalid JSON")
      const badShape = yield* Effect.flip(McpTools.parseConfig(JSON.stringify({ mcpServers: { a: { args: [] } } })))
      assert.include(badShape, "mcpServers")
      const badUrl = yield* Effect.flip(McpTools.parseConfig(JSON.stringify({ mcpServers: { a: { url: "ftp://x" } } })))
      assert.include(badUrl, "http(s) URL")
    }))

  it.live(
    "filesystem server over stdio: tools, read, isError outside the dir, a bad server skipped, closed at scope end",
    () =>
      Effect.gen(function*() {
        const dir = tempDir()
        const logs = captureLogs()
        const { pid, readResult, outside, names, readOnly, writeReadOnly } = yield* Effect.scoped(
          Effect.gen(function*() {
            const mcp = yield* McpTools.fromConfig(fsConfig(dir))
            assert.strictEqual(mcp.servers.length, 1)
            // the server that did not start is reported with its error
            assert.deepStrictEqual(mcp.failed.map((f) => f.name), ["broken"])
            assert.include(mcp.failed[0].error, "cannot start")
            const byName = new Map(mcp.tools.map((t) => [t.name, t]))
            const read = byName.get("filesystem__read_text_file") ?? byName.get("filesystem__read_file")!
            return {
              pid: mcp.servers[0].pid!,
              names: mcp.tools.map((t) => t.name),
              readOnly: read.readOnly,
              writeReadOnly: byName.get("filesystem__write_file")?.readOnly,
              readResult: yield* Tool.execute(read, { path: join(dir, "hello.txt") }),
              outside: yield* Effect.either(Tool.execute(read, { path: "/etc/hostname" }))
            }
          })
        ).pipe(Effect.provide(logs.layer))
        assert.isTrue(names.length > 5)
        assert.isTrue(names.every((n) => n.startsWith("filesystem__")), names.join(","))
        assert.include(names, "filesystem__read_text_file")
        assert.isTrue(readOnly)
        assert.isFalse(writeReadOnly)
        assert.strictEqual(readResult, "Hello from MCP!\nSecond line.")
        assert.isTrue(Either.isLeft(outside))
        if (Either.isLeft(outside)) {
          assert.instanceOf(outside.left, Tool.ToolError)
          assert.include(outside.left.message.toLowerCase(), "access denied")
        }
        assert.isTrue(
          logs.lines.some((l) => l.startsWith("WARN") && l.includes("\"broken\" skipped")),
          logs.lines.join("\n")
        )
        assert.isTrue(yield* waitUntilGone(pid), "the server process should be gone after the scope closed")
        rmSync(dir, { recursive: true, force: true })
      }),
    60_000
  )

  it.live("the JSON Schema and description come from the server", () =>
    Effect.scoped(Effect.gen(function*() {
      const dir = tempDir()
      const mcp = yield* McpTools.fromConfig({
        mcpServers: { fs: { command: process.execPath, args: [FS_SERVER, dir] } }
      })
      const read = mcp.tools.find((t) => t.name === "fs__read_text_file")!
      assert.include(read.description.toLowerCase(), "read")
      assert.strictEqual(read.jsonSchema.type, "object")
      assert.deepStrictEqual((read.jsonSchema as { required?: Array<string> }).required, ["path"])
      assert.isUndefined(read.jsonSchema.$schema)
      const bad = yield* Effect.flip(Tool.execute(read, [1, 2]))
      assert.include(bad.message, "Invalid arguments")
      rmSync(dir, { recursive: true, force: true })
    })), 60_000)

  it.live("a malformed or missing config file gives no tools and a warning", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const bad = join(dir, "mcp.json")
      writeFileSync(bad, "{ \"mcpServers\": { \"x\": 42 } }")
      const logs = captureLogs()
      const fromBad = yield* Effect.scoped(McpTools.fromConfigFile(bad)).pipe(Effect.provide(logs.layer))
      const fromMissing = yield* Effect.scoped(McpTools.fromConfigFile(join(dir, "missing.json"))).pipe(
        Effect.provide(logs.layer)
      )
      assert.deepStrictEqual(fromBad, McpTools.empty)
      assert.deepStrictEqual(fromMissing, McpTools.empty)
      assert.strictEqual(logs.lines.filter((l) => l.startsWith("WARN") && l.includes("ignored")).length, 2)
      assert.isTrue(logs.lines.some((l) => l.includes(bad) && l.includes("mcpServers")), logs.lines.join("\n"))
      rmSync(dir, { recursive: true, force: true })
    }).pipe(Effect.provide(NodeFileSystem.layer)))

  it.live("layerConfig reads MCP_CONFIG; unset means no MCP tools", () =>
    Effect.gen(function*() {
      const dir = tempDir()
      const file = join(dir, "mcp.json")
      writeFileSync(file, JSON.stringify({ mcpServers: { fs: { command: process.execPath, args: [FS_SERVER, dir] } } }))
      const withConfig = (map: Map<string, string>) =>
        Effect.scoped(Layer.build(McpTools.layerConfig())).pipe(
          Effect.map((ctx) => ctx.unsafeMap.get(McpTools.McpTools.key) as McpTools.McpToolsService),
          Effect.provide(Layer.setConfigProvider(ConfigProvider.fromMap(map)))
        )
      const none = yield* withConfig(new Map())
      assert.strictEqual(none.tools.length, 0)
      const some = yield* withConfig(new Map([["MCP_CONFIG", file]]))
      assert.isTrue(some.tools.some((t) => t.name === "fs__list_directory"))
      rmSync(dir, { recursive: true, force: true })
    }).pipe(Effect.provide(NodeFileSystem.layer)), 60_000)

  it.live(
    "layerConfig options win over MCP_CONFIG: a file, a value; a Config that cannot be read gives no tools",
    () =>
      Effect.gen(function*() {
        const dir = tempDir()
        const ghost = (name: string) => ({ mcpServers: { [name]: { command: join(dir, "no-such-command") } } })
        writeFileSync(join(dir, "mine.json"), JSON.stringify(ghost("mine")))
        writeFileSync(join(dir, "env.json"), JSON.stringify(ghost("from_env")))
        const logs = captureLogs()
        const build = (config: Parameters<typeof McpTools.layerConfig>[0], env: Record<string, string>) =>
          Effect.scoped(Layer.build(McpTools.layerConfig(config))).pipe(
            Effect.map((ctx) => ctx.unsafeMap.get(McpTools.McpTools.key) as McpTools.McpToolsService),
            Effect.provide(Layer.setConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(env))))),
            Effect.provide(logs.layer)
          )
        // the servers that were tried are the ones that failed: each is named
        const tried = (mcp: McpTools.McpToolsService) => mcp.failed.map((f) => f.name)
        const env = { MCP_CONFIG: join(dir, "env.json"), MY_MCP_FILE: join(dir, "mine.json") }
        assert.deepStrictEqual(tried(yield* build({}, env)), ["from_env"])
        assert.deepStrictEqual(tried(yield* build({ file: Config.string("MY_MCP_FILE") }, env)), ["mine"])
        assert.deepStrictEqual(tried(yield* build(Config.succeed({ config: ghost("inline") }), env)), ["inline"])
        const unread = yield* build({ file: Config.string("NOT_SET") }, env)
        assert.deepStrictEqual(unread, McpTools.empty)
        assert.isTrue(logs.lines.some((l) => l.startsWith("WARN") && l.includes("NOT_SET")), logs.lines.join("\n"))
        rmSync(dir, { recursive: true, force: true })
      }).pipe(Effect.provide(NodeFileSystem.layer)),
    60_000
  )

  it.live(
    "Streamable HTTP server: text, isError, non-text parts, headers, cancellation",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* mcpHttpServer
        const mcp = yield* McpTools.fromConfig({
          mcpServers: { "remote api": { url: server.url, headers: { Authorization: "Bearer t0k" } } }
        })
        const tool = (name: string) => mcp.tools.find((t) => t.name === `remote_api__${name}`)!
        assert.deepStrictEqual(mcp.tools.map((t) => t.name).sort(), [
          "remote_api__echo",
          "remote_api__fail",
          "remote_api__picture",
          "remote_api__slow",
          "remote_api__whoami"
        ])
        assert.isTrue(tool("echo").readOnly)
        assert.isFalse(tool("fail").readOnly)
        assert.strictEqual(yield* Tool.execute(tool("echo"), { text: "hi" }), "echo: hi")
        const failed = yield* Effect.flip(Tool.execute(tool("fail"), {}))
        assert.strictEqual(failed.message, "something went wrong")
        assert.strictEqual(yield* Tool.execute(tool("picture"), {}), "here it is\n[image: image/png]")
        assert.strictEqual(yield* Tool.execute(tool("whoami"), {}), "Bearer t0k")
        // Interrupting the tool aborts the MCP request (the server sees the cancellation).
        const fiber = yield* Effect.fork(Tool.execute(tool("slow"), {}))
        yield* Effect.sleep("300 millis")
        yield* Fiber.interrupt(fiber)
        for (let i = 0; i < 40 && server.cancelled() === 0; i++) yield* Effect.sleep("50 millis")
        assert.strictEqual(server.cancelled(), 1)
      })),
    60_000
  )

  it.live(
    "a server entry with `needsApproval: true`: each of its tools waits for approval; other servers' do not",
    () =>
      Effect.scoped(Effect.gen(function*() {
        const server = yield* mcpHttpServer
        const mcp = yield* McpTools.fromConfig({
          mcpServers: { guarded: { url: server.url, needsApproval: true }, open: { url: server.url } }
        })
        const guarded = mcp.tools.filter((t) => t.name.startsWith("guarded__"))
        const open = mcp.tools.filter((t) => t.name.startsWith("open__"))
        assert.strictEqual(guarded.length, 5)
        assert.isTrue(guarded.every((t) => t.needsApproval === true))
        assert.isTrue(open.every((t) => t.needsApproval === undefined))
      })),
    60_000
  )
})
