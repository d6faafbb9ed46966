// Lint and format as Effect's own repositories do (Effect-TS/effect's eslint.config.mjs):
// eslint's and typescript-eslint's recommended rules, @effect/eslint-plugin's dprint rule as
// the formatter (the @dprint/typescript wasm comes from the registry: nothing is downloaded
// at run time), and the same house rules. `npm run lint` checks, `npm run lint:fix` formats;
// test/lint.test.ts runs it in `npm test`.
import * as effectEslint from "@effect/eslint-plugin"
import js from "@eslint/js"
import sortDestructureKeys from "eslint-plugin-sort-destructure-keys"
import globals from "globals"
import tseslint from "typescript-eslint"

export default tseslint.config(
  {
    // what the tree generates: the build, reports, Stryker's sandbox, the bench's transpiled child
    ignores: [
      "**/dist",
      "**/build",
      "**/node_modules",
      "**/reports",
      "**/.stryker-tmp",
      "bench/.child",
      "**/*.md",
      "data/**"
    ]
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  {
    files: ["**/*.ts", "**/*.mts", "**/*.mjs", "**/*.js", "**/*.cjs"],
    plugins: { "sort-destructure-keys": sortDestructureKeys },
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: "module"
    },
    rules: {
      "no-fallthrough": "off",
      "no-irregular-whitespace": "off",
      "object-shorthand": "error",
      "prefer-destructuring": "off",
      "sort-imports": "off",
      "no-restricted-syntax": ["error", {
        selector: "CallExpression[callee.property.name='push'] > SpreadElement.arguments",
        message: "Do not use spread arguments in Array.push"
      }],
      "no-unused-vars": "off",
      "require-yield": "off",
      "prefer-rest-params": "off",
      "prefer-spread": "off",
      "sort-destructure-keys/sort-destructure-keys": "off",
      "@typescript-eslint/array-type": ["error", { default: "generic", readonly: "generic" }],
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/no-unsafe-function-type": "off",
      "@typescript-eslint/no-wrapper-object-types": "off",
      "@typescript-eslint/consistent-type-imports": "error",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/ban-ts-comment": "off",
      "@typescript-eslint/no-array-constructor": "off",
      "@typescript-eslint/no-use-before-define": "off",
      "@typescript-eslint/no-namespace": "off",
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }]
    }
  },
  {
    // Node's globals (from the `globals` package) everywhere but the page; typescript-eslint
    // already leaves undefined names in .ts files to the type checker
    files: ["**/*.ts", "**/*.mts", "**/*.mjs", "**/*.js", "**/*.cjs"],
    ignores: ["src/web/**"],
    languageOptions: { globals: globals.nodeBuiltin }
  },
  {
    // the web page: plain browser modules, the browser's globals only
    files: ["src/web/**/*.js"],
    languageOptions: { globals: globals.browser }
  },
  {
    // dependency-cruiser reads its configuration as a CommonJS module (require, module, __dirname)
    files: ["**/*.cjs"],
    languageOptions: { sourceType: "commonjs", globals: globals.node },
    rules: { "@typescript-eslint/no-require-imports": "off" }
  },
  {
    // tests read terminal output: they match and strip its ANSI escapes (ESC, \x1b)
    files: ["test/**"],
    rules: { "no-control-regex": "off" }
  },
  {
    files: ["src/**/*.ts"],
    rules: {
      "@effect/no-import-from-barrel-package": ["error", {
        packageNames: ["effect", "@effect/platform", "@effect/sql"]
      }]
    }
  }
)
