// `npm run build` (also run by `prepack`): the published package in dist/.
// - a clean dist/ (no stale files from renamed modules end up in the tarball);
// - tsc over src/ minus src/app (tsconfig.build.json): ESM .js, .d.ts, declaration and source maps;
// - the web page's static files next to the compiled server: WebPage.ts reads them from
//   `../web/` relative to itself, i.e. src/web when run from source, dist/web when installed.
import { execFileSync } from "node:child_process"
import { cpSync, rmSync } from "node:fs"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("..", import.meta.url))
const dist = fileURLToPath(new URL("../dist/", import.meta.url))
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")

rmSync(dist, { recursive: true, force: true })
execFileSync(process.execPath, [tsc, "-p", "tsconfig.build.json"], { cwd: root, stdio: "inherit" })
cpSync(fileURLToPath(new URL("../src/web/", import.meta.url)), `${dist}web`, { recursive: true })
