#!/usr/bin/env node
/**
 * `react-engine <command>`: the package's binary (package.json `bin`). One command
 * today, `eval` — the same CLI as `npm run eval` (./eval.ts). `npm run build` compiles
 * this file and the app files it imports into dist/bin/ (scripts/build.js): the
 * package ships the binary, not the bundled server application.
 */
import { runMain } from "./eval.js"

const USAGE = "usage: react-engine eval <cases.jsonl> [options]   (`react-engine eval` alone lists the options)"

const [command, ...rest] = process.argv.slice(2)
if (command === "eval") {
  runMain(rest)
} else {
  console.error(command === undefined ? USAGE : `unknown command ${JSON.stringify(command)}\n${USAGE}`)
  process.exitCode = 2
}
