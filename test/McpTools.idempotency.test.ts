/**
 * An MCP tool call carries its idempotency key in the request's `_meta`
 * (`idempotencyKey`): a real stdio MCP server (test/utils/ledgerMcp.ts) reads
 * it and deduplicates its effect on it.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { fileURLToPath } from "node:url"
import * as McpTools from "../src/McpTools.js"
import * as ReactAgent from "../src/ReactAgent.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import { makeAgent } from "./utils/agentLayers.js"
import { type Attempt, openLedger } from "./utils/ledgerMcp.js"

const LEDGER = fileURLToPath(new URL("./utils/ledgerMcp.ts", import.meta.url))

/** The ledger server's `pay` tool, and what it recorded. */
const ledger = Effect.gen(function*() {
  const dir = mkdtempSync(join(tmpdir(), "mcp-ledger-"))
  const attemptsFile = join(dir, "attempts.jsonl")
  const ledgerFile = join(dir, "ledger.sqlite")
  writeFileSync(attemptsFile, "")
  const context = yield* Layer.build(McpTools.layer({
    config: {
      mcpServers: {
        ledger: {
          command: process.execPath,
          args: ["--import", "tsx", LEDGER],
          env: { LEDGER_DB: ledgerFile, ATTEMPTS_FILE: attemptsFile }
        }
      }
    }
  }))
  const pay = Context.get(context, McpTools.McpTools).tools.find((t) => t.name === "ledger__pay")
  if (pay === undefined) throw new Error("the ledger server did not start")
  return {
    pay,
    attempts: (): Array<Attempt> =>
      readFileSync(attemptsFile, "utf8").split("\n").filter((l) => l !== "").map((l) => JSON.parse(l)),
    rows: () => {
      const db = openLedger(ledgerFile)
      try {
        return db.prepare("SELECT key, label FROM ledger ORDER BY label").all()
      } finally {
        db.close()
      }
    }
  }
})

describe("MCP tools: the idempotency key in _meta", () => {
  it.scopedLive(
    "the server gets the call's key; a second attempt with it changes nothing; a call outside a run sends none",
    () =>
      Effect.gen(function*() {
        const { attempts, pay, rows } = yield* ledger
        assert.isTrue(pay.idempotent, "idempotentHint")
        const call = { toolName: pay.name, iteration: 1, conversationId: "c", idempotencyKey: "ik_direct" }
        assert.strictEqual(yield* Tool.withCall(call)(Tool.execute(pay, { label: "a", ms: 0 })), "paid a")
        assert.strictEqual(yield* Tool.withCall(call)(Tool.execute(pay, { label: "a", ms: 0 })), "paid a")
        assert.deepStrictEqual(attempts(), [{ label: "a", key: "ik_direct", fresh: true }, {
          label: "a",
          key: "ik_direct",
          fresh: false
        }])
        assert.deepStrictEqual(rows(), [{ key: "ik_direct", label: "a" }])
        // no call context, no key: this server refuses
        const refused = yield* Effect.flip(Tool.execute(pay, { label: "b", ms: 0 }))
        assert.include(refused.message, "no idempotency key")
      }),
    60_000
  )

  it.scopedLive("in a run: each call's key, as its iteration start event shows it", () =>
    Effect.gen(function*() {
      const { attempts, pay, rows } = yield* ledger
      const h = makeAgent([
        ScriptedLlm.toolCalls([
          { id: "c1", name: pay.name, arguments: { label: "x", ms: 0 } },
          { id: "c2", name: pay.name, arguments: { label: "y", ms: 0 } }
        ]),
        ScriptedLlm.toolCalls([{ id: "c1", name: pay.name, arguments: { label: "z", ms: 0 } }]),
        ScriptedLlm.text("done"),
        ScriptedLlm.text("answer")
      ], { tools: [pay], agent: { completionCheck: false } })
      const events = yield* Effect.flatMap(ReactAgent.ReactAgent, (agent) =>
        Stream.runCollect(agent.run({ query: "pay" }))).pipe(
          Effect.map(Chunk.toArray),
          Effect.provide(h.layer)
        )
      const keys = new Map(
        events.flatMap((
          e
        ) => (e._tag === "ToolStart" ? [[(e.tool_args as { label: string }).label, e.idempotency_key]] : []))
      )
      assert.strictEqual(keys.size, 3)
      assert.strictEqual(new Set(keys.values()).size, 3)
      const seen = attempts()
      assert.deepStrictEqual(
        seen.map((a) =>
          a.label
        ).sort(),
        ["x", "y", "z"]
      )
      for (const a of seen) assert.strictEqual(a.key, keys.get(a.label), `the key of ${a.label}`)
      assert.strictEqual(rows().length, 3)
    }), 60_000)
})
