// Resolve hooks for the scratch bench (registered by register.mjs):
//  - BS3_DIR: load better-sqlite3 from a copy built for the running Node's ABI
//  - EFFECT_UNSTABLE_SHIM=1: map `effect/unstable/X` (4.0 betas) to `effect/X` (4.1 layout)
import { pathToFileURL } from "node:url"
export async function resolve(specifier, context, next) {
  if (process.env.BS3_DIR && specifier === "better-sqlite3") {
    return {
      url: pathToFileURL(`${process.env.BS3_DIR}/node_modules/better-sqlite3/lib/index.js`).href,
      format: "commonjs",
      shortCircuit: true
    }
  }
  if (process.env.EFFECT_UNSTABLE_SHIM === "1" && specifier.startsWith("effect/unstable/")) {
    return next("effect/" + specifier.slice("effect/unstable/".length), context)
  }
  return next(specifier, context)
}
