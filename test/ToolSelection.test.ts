import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import type { Abilities } from "../src/Llm.js"
import * as Message from "../src/Message.js"
import * as ScriptedLlm from "../src/ScriptedLlm.js"
import * as Tool from "../src/Tool.js"
import * as Toolkit from "../src/Toolkit.js"
import { makeActiveToolSet, selectTools } from "../src/ToolSelection.js"
import * as Usage from "../src/Usage.js"
import { catalogueToolkit, catalogueTools } from "./utils/catalogue.js"

const plainOnly: Partial<Abilities> = { toolCall: false, toolChoice: false, jsonMode: false }
const usage = { prompt: 50, completion: 5 }
const query = "Find recent news about the Rust 2024 edition and save a summary to notes/rust.md"

const select = (
  script: ReadonlyArray<ScriptedLlm.ScriptStep>,
  options: { abilities?: Partial<Abilities>; max?: number } = {}
) => {
  const llm = ScriptedLlm.makeUnsafe(script, { abilities: options.abilities ?? {} })
  return {
    llm,
    run: selectTools({
      query,
      toolkit: catalogueToolkit,
      llm: llm.service,
      ...(options.max ? { max: options.max } : {})
    })
  }
}

const userText = (llm: ScriptedLlm.ScriptedLlm, i = 0) =>
  Message.textOf(llm.requests[i].request.messages.find((m) => m.role === "user")?.content)

describe("selectTools", () => {
  it.effect("happy path: one call, known names in the model's order, usage counted", () =>
    Effect.gen(function*() {
      const { llm, run } = select([
        ScriptedLlm.toolCall("select_tools", { tools: ["web_search", "fetch_url", "write_file"] }, { usage })
      ])
      const selection = yield* run
      assert.deepStrictEqual(selection.selected, ["web_search", "fetch_url", "write_file"])
      assert.strictEqual(selection.llmCalls, 1)
      assert.deepStrictEqual(selection.usage, Usage.make(50, 5))
      assert.isUndefined(selection.fallbackReason)
      assert.strictEqual(llm.calls, 1)
    }))

  it.effect("the request carries the compact catalogue (80-char descriptions, one line each, no schemas) and the query", () =>
    Effect.gen(function*() {
      const { llm, run } = select([ScriptedLlm.toolCall("select_tools", { tools: ["web_search"] })])
      yield* run
      const text = userText(llm)
      assert.include(text, query)
      const lines = text.split("\n").filter((l) => l.startsWith("- "))
      // the two pinned tools are always advertised: they are not offered
      assert.strictEqual(lines.length, 38)
      assert.notInclude(text, "- calculator")
      for (const line of lines) {
        const match = /^- ([a-z_]+): (.+)$/.exec(line)
        assert.isNotNull(match, line)
        assert.isAtMost(match![2].length, 80, line)
      }
      // short descriptions are kept whole
      assert.include(lines, "- delete_file: Delete a file or an empty directory. Cannot be undone.")
      // newlines become spaces
      assert.include(lines.find((l) => l.startsWith("- search_files"))!, "recursively from")
      // long descriptions are cut to exactly 80 characters, "..." included
      const long = lines.find((l) => l.startsWith("- github_search_code: "))!
      const description = long.slice("- github_search_code: ".length)
      assert.strictEqual(description.length, 80)
      assert.isTrue(description.endsWith("..."))
      assert.isTrue(
        "Search source code across GitHub repositories with GitHub code-search syntax (qualifiers like repo:, language:, path:)."
          .startsWith(description.slice(0, 77))
      )
      assert.notInclude(text, "properties")
      assert.notInclude(text, "ISO 8601")
    }))

  it.effect("max is enforced after dropping duplicates and unknown names", () =>
    Effect.gen(function*() {
      const { run } = select([
        ScriptedLlm.toolCall("select_tools", {
          tools: ["web_search", "web_search", "no_such_tool", "FETCH_URL", "write_file", "read_file", "sql_query"]
        })
      ], { max: 3 })
      const selection = yield* run
      assert.deepStrictEqual(selection.selected, ["web_search", "fetch_url", "write_file"])
    }))

  it.effect("the default max is 6", () =>
    Effect.gen(function*() {
      const names = catalogueTools.filter((t) => !t.pinned).slice(0, 10).map((t) => t.name)
      const { run } = select([ScriptedLlm.toolCall("select_tools", { tools: names })])
      assert.deepStrictEqual((yield* run).selected, names.slice(0, 6))
    }))

  it.effect("a plain-text reply naming tools is understood", () =>
    Effect.gen(function*() {
      const { run } = select([ScriptedLlm.text("I would use web_search, then write_file.")], { abilities: plainOnly })
      assert.deepStrictEqual((yield* run).selected, ["web_search", "write_file"])
    }))

  it.effect("fallback: unparseable twice → full set, both calls counted", () =>
    Effect.gen(function*() {
      const { llm, run } = select([
        ScriptedLlm.text("Sure! Let me think about that.", { usage }),
        ScriptedLlm.text("I cannot decide.", { usage })
      ], { abilities: plainOnly })
      const selection = yield* run
      assert.isNull(selection.selected)
      assert.strictEqual(selection.llmCalls, 2)
      assert.strictEqual(llm.calls, 2)
      assert.deepStrictEqual(selection.usage, Usage.make(100, 10, { calls: 2 }))
      assert.isString(selection.fallbackReason)
    }))

  it.effect("fallback: empty list", () =>
    Effect.gen(function*() {
      const { run } = select([ScriptedLlm.toolCall("select_tools", { tools: [] }, { usage })])
      const selection = yield* run
      assert.isNull(selection.selected)
      assert.include(selection.fallbackReason!, "no tools")
      assert.deepStrictEqual(selection.usage, Usage.make(50, 5))
    }))

  it.effect("fallback: all names unknown", () =>
    Effect.gen(function*() {
      const { run } = select([ScriptedLlm.toolCall("select_tools", { tools: ["teleport", "time_travel"] })])
      const selection = yield* run
      assert.isNull(selection.selected)
      assert.include(selection.fallbackReason!, "teleport")
    }))

  it.effect("fallback: LLM errors at every level", () =>
    Effect.gen(function*() {
      const { llm, run } = select(Array.from({ length: 5 }, () => ScriptedLlm.fail("Server")))
      const selection = yield* run
      assert.isNull(selection.selected)
      assert.strictEqual(llm.calls, 5)
      assert.strictEqual(selection.llmCalls, 5)
      assert.include(selection.fallbackReason!, "Server")
    }))

  it.effect("no selectable tools: no LLM call", () =>
    Effect.gen(function*() {
      const llm = ScriptedLlm.makeUnsafe([])
      const toolkit = Toolkit.makeUnsafe(catalogueTools.filter((t) => t.pinned))
      const selection = yield* selectTools({ query, toolkit, llm: llm.service })
      assert.isNull(selection.selected)
      assert.strictEqual(llm.calls, 0)
    }))
})

describe("makeActiveToolSet", () => {
  const names = (tools: ReadonlyArray<Tool.Tool>) => tools.map((t) => t.name)
  const defNames = (set: ReturnType<typeof makeActiveToolSet>) => set.definitions().map((d) => d.function.name)

  it("advertises the selected and pinned tools plus request_tools", () => {
    const set = makeActiveToolSet(catalogueToolkit, ["fetch_url", "web_search", "unknown_tool"])
    assert.deepStrictEqual(names(set.advertised()), [
      "web_search",
      "fetch_url",
      "calculator",
      "current_time",
      "request_tools"
    ])
    assert.deepStrictEqual(defNames(set), names(set.advertised()))
    const meta = set.definitions().find((d) => d.function.name === "request_tools")!
    const listed = meta.function.description.split("Not loaded yet: ")[1].replace(/\.$/, "").split(", ")
    assert.strictEqual(listed.length, 40 - 4)
    assert.include(listed, "github_create_issue")
    assert.include(listed, "sql_query")
    assert.notInclude(listed, "web_search")
    assert.notInclude(listed, "calculator")
    assert.deepStrictEqual((meta.function.parameters as any).required, ["names"])
    assert.strictEqual(set.version(), 0)
    // memoized per version
    assert.strictEqual(set.definitions(), set.definitions())
  })

  it("pinned tools are advertised even with an empty selection", () => {
    const set = makeActiveToolSet(catalogueToolkit, [])
    assert.deepStrictEqual(names(set.advertised()), ["calculator", "current_time", "request_tools"])
  })

  it.effect("request_tools loads tools, changes the advertised definitions and the version", () =>
    Effect.gen(function*() {
      const set = makeActiveToolSet(catalogueToolkit, ["web_search"])
      const before = set.definitions()
      const meta = set.resolve("request_tools")!
      const output = yield* Tool.execute(meta, { names: ["sql_query", "describe_table", "nope", "web_search"] })
      assert.include(output as string, "Loaded: sql_query, describe_table")
      assert.include(output as string, "Unknown (not registered): nope")
      assert.include(output as string, "Already available: web_search")
      assert.strictEqual(set.version(), 1)
      const after = set.definitions()
      assert.notStrictEqual(after, before)
      assert.deepStrictEqual(defNames(set), [
        "web_search",
        "sql_query",
        "describe_table",
        "calculator",
        "current_time",
        "request_tools"
      ])
      assert.notInclude(after.at(-1)!.function.description, "sql_query")
      assert.include(after.at(-1)!.function.description, "geocode")
      // nothing new: no version change
      yield* Tool.execute(set.resolve("request_tools")!, { names: ["sql_query"] })
      assert.strictEqual(set.version(), 1)
      // names as one string are accepted too
      const text = yield* Tool.execute(set.resolve("request_tools")!, { names: "geocode, directions" })
      assert.include(text as string, "Loaded: geocode, directions")
      assert.strictEqual(set.version(), 2)
    }))

  it("resolving a registered but unselected tool loads it", () => {
    const set = makeActiveToolSet(catalogueToolkit, ["web_search"])
    assert.strictEqual(set.resolve("web_search")?.name, "web_search")
    assert.strictEqual(set.version(), 0)
    const tool = set.resolve("send_email")
    assert.strictEqual(tool?.name, "send_email")
    assert.strictEqual(set.version(), 1)
    assert.include(names(set.advertised()), "send_email")
    assert.isUndefined(set.resolve("no_such_tool"))
    assert.strictEqual(set.version(), 1)
  })

  it("request_tools disappears once every tool is loaded", () => {
    const toolkit = Toolkit.makeUnsafe(catalogueTools.slice(0, 3))
    const set = makeActiveToolSet(toolkit, ["read_file"])
    assert.include(names(set.advertised()), "request_tools")
    set.resolve("write_file")
    set.resolve("list_directory")
    assert.deepStrictEqual(names(set.advertised()), ["read_file", "write_file", "list_directory"])
    assert.strictEqual(set.version(), 2)
  })

  it("null: every tool, no meta-tool, constant version", () => {
    const set = makeActiveToolSet(catalogueToolkit, null)
    assert.strictEqual(set.advertised().length, 40)
    assert.strictEqual(set.definitions().length, 40)
    assert.notInclude(defNames(set), "request_tools")
    assert.isUndefined(set.resolve("request_tools"))
    assert.strictEqual(set.resolve("sql_query")?.name, "sql_query")
    assert.strictEqual(set.version(), 0)
  })
})
