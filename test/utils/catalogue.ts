/**
 * A realistic 40-tool catalogue (filesystem, web, GitHub, calendar, mail, chat,
 * database, maps, finance, documents…) with real-looking Effect Schema
 * parameters, for tool-selection tests and the benchmark. Handlers echo their
 * arguments.
 */
import { Effect, Schema } from "effect"
import * as Tool from "../../src/Tool.js"
import * as Toolkit from "../../src/Toolkit.js"

const S = Schema
const Path = S.String.annotations({ description: "Absolute or workspace-relative path" })
const Limit = S.optional(
  S.Int.pipe(S.between(1, 100)).annotations({ description: "Maximum number of results (default 20)" })
)
const IsoDate = S.String.annotations({ description: "ISO 8601 date-time, e.g. 2026-03-01T09:00:00Z" })
const Repo = S.String.annotations({ description: "Repository as owner/name" })

const make = <A, I>(
  name: string,
  description: string,
  parameters: Schema.Schema<A, I, never>,
  options: { readonly readOnly?: boolean; readonly pinned?: boolean } = {}
): Tool.Tool =>
  Tool.make({
    name,
    description,
    parameters,
    handler: (args) => Effect.succeed(`${name} ok: ${JSON.stringify(args)}`),
    ...options
  })

/** The 40 tools, in registration order. */
export const catalogueTools: ReadonlyArray<Tool.Tool> = [
  // filesystem
  make(
    "read_file",
    "Read the complete contents of a file from the workspace as text. Use offset/length for big files.",
    S.Struct({ path: Path, offset: S.optional(S.Int), length: S.optional(S.Int) })
  ),
  make(
    "write_file",
    "Create a new file or overwrite an existing one with the given content.",
    S.Struct({ path: Path, content: S.String, createDirectories: S.optional(S.Boolean) }),
    { readOnly: false }
  ),
  make(
    "list_directory",
    "List files and folders in a directory, with sizes and modification times.",
    S.Struct({ path: Path, recursive: S.optional(S.Boolean), limit: Limit })
  ),
  make(
    "search_files",
    "Find files whose name matches a glob pattern, recursively\nfrom a starting directory.",
    S.Struct({
      root: Path,
      pattern: S.String.annotations({ description: "Glob such as **/*.ts" }),
      exclude: S.optional(S.Array(S.String))
    })
  ),
  make(
    "move_file",
    "Move or rename a file or directory.",
    S.Struct({ source: Path, destination: Path, overwrite: S.optional(S.Boolean) }),
    { readOnly: false }
  ),
  make("delete_file", "Delete a file or an empty directory. Cannot be undone.", S.Struct({ path: Path }), {
    readOnly: false
  }),
  // web
  make(
    "web_search",
    "Search the web and return the top results with titles, URLs and snippets. Good for recent news and facts.",
    S.Struct({
      query: S.String,
      limit: Limit,
      freshness: S.optional(S.Literal("day", "week", "month", "any")),
      site: S.optional(S.String)
    })
  ),
  make(
    "fetch_url",
    "Download a web page and return its main content converted to Markdown.",
    S.Struct({ url: S.String, maxChars: S.optional(S.Int), includeLinks: S.optional(S.Boolean) })
  ),
  make(
    "extract_links",
    "List the hyperlinks found on a web page.",
    S.Struct({ url: S.String, sameDomainOnly: S.optional(S.Boolean) })
  ),
  // GitHub
  make(
    "github_create_issue",
    "Open a new issue in a GitHub repository with a title, body, labels and assignees.",
    S.Struct({
      repo: Repo,
      title: S.String,
      body: S.String,
      labels: S.optional(S.Array(S.String)),
      assignees: S.optional(S.Array(S.String))
    }),
    { readOnly: false }
  ),
  make(
    "github_list_issues",
    "List issues of a GitHub repository filtered by state, labels and assignee.",
    S.Struct({
      repo: Repo,
      state: S.optional(S.Literal("open", "closed", "all")),
      labels: S.optional(S.Array(S.String)),
      assignee: S.optional(S.String),
      limit: Limit
    })
  ),
  make(
    "github_get_pull_request",
    "Get a pull request: description, status checks, review state and changed files.",
    S.Struct({ repo: Repo, number: S.Int })
  ),
  make(
    "github_comment",
    "Add a comment to a GitHub issue or pull request.",
    S.Struct({ repo: Repo, number: S.Int, body: S.String }),
    { readOnly: false }
  ),
  make(
    "github_search_code",
    "Search source code across GitHub repositories with GitHub code-search syntax (qualifiers like repo:, language:, path:).",
    S.Struct({ query: S.String, limit: Limit })
  ),
  // calendar
  make(
    "calendar_list_events",
    "List calendar events between two dates.",
    S.Struct({ calendarId: S.optional(S.String), start: IsoDate, end: IsoDate, query: S.optional(S.String) })
  ),
  make(
    "calendar_create_event",
    "Create a calendar event and invite attendees by email.",
    S.Struct({
      title: S.String,
      start: IsoDate,
      end: IsoDate,
      attendees: S.optional(S.Array(S.String)),
      location: S.optional(S.String),
      description: S.optional(S.String)
    }),
    { readOnly: false }
  ),
  make(
    "calendar_delete_event",
    "Cancel a calendar event and notify its attendees.",
    S.Struct({ eventId: S.String, notify: S.optional(S.Boolean) }),
    { readOnly: false }
  ),
  make(
    "calendar_find_free_slots",
    "Find time slots when all the given people are free, within working hours.",
    S.Struct({
      attendees: S.Array(S.String),
      durationMinutes: S.Int,
      from: IsoDate,
      to: IsoDate,
      timezone: S.optional(S.String)
    })
  ),
  // mail
  make(
    "send_email",
    "Send an email message (plain text or HTML) with optional CC, BCC and attachments by path.",
    S.Struct({
      to: S.Array(S.String),
      subject: S.String,
      body: S.String,
      cc: S.optional(S.Array(S.String)),
      bcc: S.optional(S.Array(S.String)),
      html: S.optional(S.Boolean),
      attachments: S.optional(S.Array(Path))
    }),
    { readOnly: false }
  ),
  make(
    "search_email",
    "Search the mailbox with Gmail-style queries (from:, to:, subject:, has:attachment, after:).",
    S.Struct({ query: S.String, limit: Limit })
  ),
  make(
    "read_email",
    "Read one email message with its headers, body and attachment list.",
    S.Struct({ messageId: S.String, format: S.optional(S.Literal("text", "html")) })
  ),
  // chat
  make(
    "slack_post_message",
    "Post a message to a Slack channel or thread.",
    S.Struct({ channel: S.String, text: S.String, threadTs: S.optional(S.String) }),
    { readOnly: false }
  ),
  make(
    "slack_list_channels",
    "List the Slack channels the bot can read.",
    S.Struct({ includeArchived: S.optional(S.Boolean), limit: Limit })
  ),
  make(
    "slack_search_messages",
    "Search Slack messages across channels.",
    S.Struct({ query: S.String, channel: S.optional(S.String), limit: Limit })
  ),
  // database
  make(
    "sql_query",
    "Run a read-only SQL query against the analytics warehouse (PostgreSQL dialect) and return rows as a table.",
    S.Struct({ sql: S.String, maxRows: S.optional(S.Int.pipe(S.between(1, 10000))) })
  ),
  make(
    "list_tables",
    "List the tables of the analytics warehouse with row counts.",
    S.Struct({ schema: S.optional(S.String) })
  ),
  make(
    "describe_table",
    "Show the columns, types, indexes and sample rows of a warehouse table.",
    S.Struct({ table: S.String, sampleRows: S.optional(S.Int) })
  ),
  // weather, time, maths
  make(
    "get_weather",
    "Current weather conditions for a city or coordinates: temperature, wind, humidity.",
    S.Struct({ location: S.String, units: S.optional(S.Literal("metric", "imperial")) })
  ),
  make(
    "get_forecast",
    "Hourly and daily weather forecast for up to 10 days.",
    S.Struct({
      location: S.String,
      days: S.optional(S.Int.pipe(S.between(1, 10))),
      units: S.optional(S.Literal("metric", "imperial"))
    })
  ),
  make(
    "calculator",
    "Evaluate an arithmetic expression exactly (+ - * / ^, parentheses, sqrt, log, sin, cos).",
    S.Struct({ expression: S.String }),
    { pinned: true }
  ),
  make(
    "current_time",
    "The current date and time in a given IANA timezone.",
    S.Struct({ timezone: S.optional(S.String) }),
    { pinned: true }
  ),
  make(
    "convert_units",
    "Convert a quantity between units (length, mass, volume, temperature, speed, data size).",
    S.Struct({ value: S.Number, from: S.String, to: S.String })
  ),
  // maps, finance
  make(
    "geocode",
    "Turn an address or place name into coordinates, and coordinates into an address.",
    S.Struct({ query: S.String, country: S.optional(S.String) })
  ),
  make(
    "directions",
    "Route between two places by car, bike, transit or on foot, with duration and distance.",
    S.Struct({
      origin: S.String,
      destination: S.String,
      mode: S.optional(S.Literal("driving", "cycling", "transit", "walking")),
      departAt: S.optional(IsoDate)
    })
  ),
  make(
    "stock_quote",
    "Latest price, daily change and volume for a stock ticker symbol.",
    S.Struct({ symbol: S.String, exchange: S.optional(S.String) })
  ),
  make(
    "currency_convert",
    "Convert an amount between currencies at today's reference exchange rate.",
    S.Struct({
      amount: S.Number,
      from: S.String.annotations({ description: "ISO 4217 code" }),
      to: S.String.annotations({ description: "ISO 4217 code" })
    })
  ),
  // documents, tickets, media
  make(
    "translate_text",
    "Translate text between languages, keeping formatting and Markdown intact.",
    S.Struct({ text: S.String, targetLanguage: S.String, sourceLanguage: S.optional(S.String) })
  ),
  make(
    "create_document",
    "Create a shared document (Markdown) in the team wiki and return its URL.",
    S.Struct({
      title: S.String,
      content: S.String,
      folder: S.optional(S.String),
      shareWith: S.optional(S.Array(S.String))
    }),
    { readOnly: false }
  ),
  make(
    "jira_create_ticket",
    "Create a Jira ticket in a project with type, priority, summary, description and components.",
    S.Struct({
      project: S.String,
      type: S.Literal("bug", "task", "story", "epic"),
      summary: S.String,
      description: S.optional(S.String),
      priority: S.optional(S.Literal("lowest", "low", "medium", "high", "highest")),
      components: S.optional(S.Array(S.String))
    }),
    { readOnly: false }
  ),
  make(
    "generate_image",
    "Generate an image from a text prompt and save it as a PNG artifact.",
    S.Struct({
      prompt: S.String,
      size: S.optional(S.Literal("512x512", "1024x1024", "1792x1024")),
      style: S.optional(S.String)
    }),
    { readOnly: false }
  )
]

/** The catalogue as a toolkit. */
export const catalogueToolkit: Toolkit.ToolkitService = Toolkit.makeUnsafe(catalogueTools)
