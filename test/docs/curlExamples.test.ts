/**
 * The `$ curl …` transcripts in the docs are what the server answers (issue 32, "Docs out of
 * step with the product"). Every fenced block of README.md and docs/*.md with lines starting
 * `$ curl` is a transcript: each command (with `\` continuation lines) is run against the real
 * server (`src/app/main.ts`, a child process) on the offline demo model and a fresh SQLite
 * file, as curl would send it (`-X`, `-H`, `-d`, `-i`, `| head -N`; `localhost:3000` is the
 * test server), and what it prints must be the lines that follow it in the doc. `$ # the same
 * again` repeats the previous command.
 *
 * Before comparing, what differs from run to run is replaced on both sides (tool-call ids,
 * idempotency keys, approval and completion ids, elapsed times, timestamps); `…` in a doc
 * stands for any text (an elision). A mismatch fails with both versions and the first line
 * that differs. `UPDATE_DOC_EXAMPLES=1` rewrites the outputs of the transcripts that have no
 * `…` with what the server printed (then review the diff).
 */
import { afterAll, assert, beforeAll, describe, it } from "@effect/vitest"
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { curl, firstDifference, normal, pattern, ROOT, transcripts } from "../utils/docExamples.js"
import { type ServerProcess, startServerProcess } from "../utils/serverProcess.js"

const UPDATE = process.env.UPDATE_DOC_EXAMPLES === "1"

/** Transcripts that cannot be replayed as written, and why (matched on their first command). */
const NOT_REPLAYABLE: ReadonlyArray<readonly [RegExp, string]> = [
  [
    /\/api\/react\/approve/,
    "the approval id is minted by a run waiting for a person: test/docs/approvalExamples.test.ts replays it with the live id"
  ],
  [
    /\/api\/tools$/,
    "shows MCP servers (fs, a github server that does not start) the demo set-up does not have (test/server/tools.test.ts)"
  ]
]

const FILES = ["README.md", ...readdirSync(join(ROOT, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)]
const ALL = FILES.flatMap(transcripts)

describe("the curl transcripts in the docs are what the server answers (demo model)", () => {
  let server: ServerProcess | undefined
  let dir = ""
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "react-doc-examples-"))
    server = await startServerProcess({ DATABASE_PATH: join(dir, "docs.sqlite"), RUN_DETACH_GRACE_MS: "60000" })
  }, 90_000)
  afterAll(async () => {
    await server?.kill("SIGTERM")
    if (dir !== "") rmSync(dir, { recursive: true, force: true })
  })

  it("finds the transcripts (http-api.md's run stream among them)", () => {
    assert.isAtLeast(ALL.length, 5)
    assert.isTrue(
      ALL.some((t) =>
        t.file === "docs/http-api.md" &&
        t.commands.some((c) => c.command.includes("-sN -XPOST localhost:3000/api/react "))
      )
    )
  })

  for (const t of ALL) {
    const skip = NOT_REPLAYABLE.find(([re]) => re.test(t.commands[0].command))
    const name = `${t.file}:${t.line} ${t.commands[0].command.slice(0, 90)}`
    if (skip !== undefined) {
      it.skip(`${name} — not replayable: ${skip[1]}`, () => undefined)
      continue
    }
    it(name, async () => {
      for (const c of t.commands) {
        const actual = await curl(new URL(server!.url), c.command)
        const ok = pattern(c.expected).test(normal(actual))
        if (!ok && UPDATE && !c.expected.includes("…") && c.expected !== "") {
          // the output right after the command's first line (files are re-read: other updates moved lines)
          const path = join(ROOT, t.file)
          const content = readFileSync(path, "utf8")
          const at = content.indexOf(c.expected, content.indexOf(c.raw))
          assert.isAbove(at, -1, `${t.file}: cannot find the output of ${c.command} to update it`)
          writeFileSync(path, content.slice(0, at) + actual + content.slice(at + c.expected.length))
          continue
        }
        assert.isTrue(
          ok,
          `${t.file}:${c.outputLine}: the doc shows another answer to\n  $ ${c.command}\n${
            firstDifference(normal(c.expected), normal(actual))
          }\n` +
            `--- doc ---\n${c.expected}\n--- server (normalised) ---\n${normal(actual)}\n` +
            (c.expected.includes("…")
              ? "(fix the doc by hand: it has elisions)"
              : "(UPDATE_DOC_EXAMPLES=1 rewrites it)")
        )
      }
    }, 60_000)
  }
})
