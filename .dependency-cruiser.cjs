// Layout rules of docs/architecture.md ("Layout"), checked by dependency-cruiser.
// `npm test` runs them (test/layout.test.ts); `npx depcruise src` prints the same report.
const fs = require("node:fs")
const path = require("node:path")

// Documented exceptions, each with the issue that removes it (none left: round.ts traces
// through Effect.withSpan and no longer imports internal/telemetry).
const exceptions = {}

// The public modules, by their name in lower case: a folder's owner is found whatever the
// module's capitals (internal/a2a/ serves src/A2A.ts, internal/dagAgent/ src/DagAgent.ts).
const publicModules = new Map(
  ["src", "src/tools"].flatMap((dir) =>
    fs.readdirSync(path.join(__dirname, dir)).filter((file) => file.endsWith(".ts")).map((file) => {
      const stem = file.slice(0, -3)
      return [stem.toLowerCase(), stem]
    })
  )
)

// src/internal/<x>/ serves the public module src/<X>.ts (or src/tools/<X>.ts); only that
// module and the folder's own files import it.
const internalRules = fs
  .readdirSync(path.join(__dirname, "src/internal"), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map(({ name }) => {
    const owner = publicModules.get(name.toLowerCase()) ?? name[0].toUpperCase() + name.slice(1)
    // internal/llm serves every implementation of the Llm service (src/<Name>Llm.ts and
    // its internal/<name>Llm/ folder): the <think> tag splitter they share.
    const owners = name === "llm"
      ? [`^src/[A-Za-z]*Llm\\.ts$`, `^src/internal/[a-zA-Z]*Llm/`]
      : [`^src/(tools/)?${owner}\\.ts$`]
    return {
      name: `internal-${name}-only-from-${owner}`,
      comment: `src/internal/${name}/ is imported only by src/${owner}.ts and its own files`,
      severity: "error",
      from: { pathNot: [`^src/internal/${name}/`, ...owners, ...(exceptions[name] ?? [])] },
      to: { path: `^src/internal/${name}/` }
    }
  })

module.exports = {
  forbidden: [
    {
      name: "library-not-to-server-or-app",
      comment: "library modules never import the server or the bundled application",
      severity: "error",
      from: { path: "^src/", pathNot: "^src/(server|app|web)/" },
      to: { path: "^src/(server|app)/" }
    },
    {
      name: "server-not-to-app",
      comment: "the server is a library of its own; only the bundled application imports it",
      severity: "error",
      from: { path: "^src/server/" },
      to: { path: "^src/app/" }
    },
    {
      name: "server-internal-only-from-server",
      comment: "src/server/internal/ is the server's own implementation detail",
      severity: "error",
      from: { pathNot: "^src/server/" },
      to: { path: "^src/server/internal/" }
    },
    ...internalRules,
    {
      name: "no-circular",
      comment: "no import cycles through value imports",
      severity: "error",
      from: {},
      to: { circular: true, viaOnly: { dependencyTypesNot: ["type-only"] } }
    },
    {
      // Reported, then judged by test/layout.test.ts: a type-only cycle is allowed inside one
      // module's family (src/<X>.ts and src/internal/<x>/, the implementation naming its public
      // types) and for the pairs listed there with their reasons; any other fails the test.
      name: "type-only-circular",
      comment: "import cycles made of type-only imports",
      severity: "info",
      from: {},
      to: { circular: true }
    },
    {
      name: "not-to-unresolvable",
      severity: "error",
      from: {},
      to: { couldNotResolve: true }
    }
  ],
  options: {
    includeOnly: "^src/",
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" }
  }
}
