# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_canvas_global_optspecs
    string join \n h/help V/version
end

function __fish_canvas_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_canvas_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_canvas_using_subcommand
    set -l cmd (__fish_canvas_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c canvas -n "__fish_canvas_needs_command" -s h -l help -d 'Print help'
complete -c canvas -n "__fish_canvas_needs_command" -s V -l version -d 'Print version'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "run" -d 'Run a canvas (JSON or YAML; `-` reads stdin) and print its events'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "resume" -d 'Continue a stored run: answer its form, go on after a stop, or send the next turn'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "chat" -d 'Chat with a conversational canvas: each line you type is a turn of one run'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "runs" -d 'List the stored runs, newest first; `canvas runs prune` deletes old ones'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "show" -d 'Show one stored run: status, canvas, times, waiting form, error'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "events" -d 'Replay a stored run\'s events in any output format'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "cancel" -d 'Ask the process running a run to stop at its next node boundary (resumable)'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "validate" -d 'Check canvases statically (no network, no models): exit 1 on errors'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "migrate" -d 'Rewrite legacy or graph-only canvases into the current form; shows the diff'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "batch" -d 'Run a canvas over every row of a dataset, with checks; resumable'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "batches" -d 'List the stored batches: rows done, failed, waiting and pending'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "serve" -d 'Serve canvases through RAGFlow\'s agent API (its SDK and OpenAI clients work)'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "graph" -d 'Draw a canvas\'s execution graph as Mermaid or Graphviz DOT'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "components" -d 'List the components and tools this build knows, with their parameters'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "completions" -d 'Print a shell completion script (bash, zsh, fish, powershell, elvish)'
complete -c canvas -n "__fish_canvas_needs_command" -f -a "man" -d 'Print the man page (or write every page with --dir)'
complete -c canvas -n "__fish_canvas_using_subcommand run" -s q -l query -d '`sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @)' -r
complete -c canvas -n "__fish_canvas_using_subcommand run" -s i -l input -d 'A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE)' -r
complete -c canvas -n "__fish_canvas_using_subcommand run" -l inputs -d 'A JSON or YAML file mapping field keys to values' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand run" -l format -d 'text (default on a terminal), jsonl (one event per line) or sse' -r -f -a "text\t''
jsonl\t''
sse\t''"
complete -c canvas -n "__fish_canvas_using_subcommand run" -l store -d 'Store [default: ~/.local/share/canvas/canvas.db]' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand run" -l max-parallel -d 'Most components running at once' -r
complete -c canvas -n "__fish_canvas_using_subcommand run" -l max-steps -d 'Step budget of a turn: a resumable stop (0: none)' -r
complete -c canvas -n "__fish_canvas_using_subcommand run" -l timeout -d 'Wall-clock limit for the whole turn, in seconds' -r
complete -c canvas -n "__fish_canvas_using_subcommand run" -l seed -d 'Seed for random choices (Message alternatives): reproducible runs' -r
complete -c canvas -n "__fish_canvas_using_subcommand run" -l mock-llm -d 'Answer every model call from a script (docs/mock-llm.md), offline' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand run" -l llm-config -d 'Provider configuration (docs/providers.md)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand run" -l model -d 'The model of components whose llm_id is empty' -r
complete -c canvas -n "__fish_canvas_using_subcommand run" -l record -d 'Save every model call and its answer (for --replay)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand run" -l replay -d 'Answer model calls from a --record file; any other call fails' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand run" -l mcp-config -d 'Where the MCP servers an Agent names are (YAML)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand run" -l output-dir -d 'Where generated files go (documents, workbooks, code artifacts)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand run" -l no-validate -d 'Skip the checks of `canvas validate` (expert use; see docs/validate.md)'
complete -c canvas -n "__fish_canvas_using_subcommand run" -s v -l verbose -d 'More output: node starts, logs on stderr, error causes'
complete -c canvas -n "__fish_canvas_using_subcommand run" -l quiet -d 'Less output: message text and errors only'
complete -c canvas -n "__fish_canvas_using_subcommand run" -l non-interactive -d 'Never prompt (implied when stdin is not a terminal)'
complete -c canvas -n "__fish_canvas_using_subcommand run" -l allow-private-network -d 'Let tools reach private addresses'
complete -c canvas -n "__fish_canvas_using_subcommand run" -l allow-sql-writes -d 'Let ExeSQL run INSERT, UPDATE and DELETE (refused by default)'
complete -c canvas -n "__fish_canvas_using_subcommand run" -s h -l help -d 'Print help'
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l canvas-changed -d 'Run the stored canvas even if its file changed since the run started' -r -f -a "ok\t''"
complete -c canvas -n "__fish_canvas_using_subcommand resume" -s q -l query -d '`sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @)' -r
complete -c canvas -n "__fish_canvas_using_subcommand resume" -s i -l input -d 'A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE)' -r
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l inputs -d 'A JSON or YAML file mapping field keys to values' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l format -d 'text (default on a terminal), jsonl (one event per line) or sse' -r -f -a "text\t''
jsonl\t''
sse\t''"
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l store -d 'Store [default: ~/.local/share/canvas/canvas.db]' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l max-parallel -d 'Most components running at once' -r
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l max-steps -d 'Step budget of a turn: a resumable stop (0: none)' -r
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l timeout -d 'Wall-clock limit for the whole turn, in seconds' -r
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l seed -d 'Seed for random choices (Message alternatives): reproducible runs' -r
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l mock-llm -d 'Answer every model call from a script (docs/mock-llm.md), offline' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l llm-config -d 'Provider configuration (docs/providers.md)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l model -d 'The model of components whose llm_id is empty' -r
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l record -d 'Save every model call and its answer (for --replay)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l replay -d 'Answer model calls from a --record file; any other call fails' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l mcp-config -d 'Where the MCP servers an Agent names are (YAML)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l output-dir -d 'Where generated files go (documents, workbooks, code artifacts)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand resume" -s v -l verbose -d 'More output: node starts, logs on stderr, error causes'
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l quiet -d 'Less output: message text and errors only'
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l non-interactive -d 'Never prompt (implied when stdin is not a terminal)'
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l allow-private-network -d 'Let tools reach private addresses'
complete -c canvas -n "__fish_canvas_using_subcommand resume" -l allow-sql-writes -d 'Let ExeSQL run INSERT, UPDATE and DELETE (refused by default)'
complete -c canvas -n "__fish_canvas_using_subcommand resume" -s h -l help -d 'Print help'
complete -c canvas -n "__fish_canvas_using_subcommand chat" -s q -l query -d '`sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @)' -r
complete -c canvas -n "__fish_canvas_using_subcommand chat" -s i -l input -d 'A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE)' -r
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l inputs -d 'A JSON or YAML file mapping field keys to values' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l format -d 'text (default on a terminal), jsonl (one event per line) or sse' -r -f -a "text\t''
jsonl\t''
sse\t''"
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l store -d 'Store [default: ~/.local/share/canvas/canvas.db]' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l max-parallel -d 'Most components running at once' -r
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l max-steps -d 'Step budget of a turn: a resumable stop (0: none)' -r
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l timeout -d 'Wall-clock limit for the whole turn, in seconds' -r
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l seed -d 'Seed for random choices (Message alternatives): reproducible runs' -r
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l mock-llm -d 'Answer every model call from a script (docs/mock-llm.md), offline' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l llm-config -d 'Provider configuration (docs/providers.md)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l model -d 'The model of components whose llm_id is empty' -r
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l record -d 'Save every model call and its answer (for --replay)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l replay -d 'Answer model calls from a --record file; any other call fails' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l mcp-config -d 'Where the MCP servers an Agent names are (YAML)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l output-dir -d 'Where generated files go (documents, workbooks, code artifacts)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l no-validate -d 'Skip the checks of `canvas validate` (expert use; see docs/validate.md)'
complete -c canvas -n "__fish_canvas_using_subcommand chat" -s v -l verbose -d 'More output: node starts, logs on stderr, error causes'
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l quiet -d 'Less output: message text and errors only'
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l non-interactive -d 'Never prompt (implied when stdin is not a terminal)'
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l allow-private-network -d 'Let tools reach private addresses'
complete -c canvas -n "__fish_canvas_using_subcommand chat" -l allow-sql-writes -d 'Let ExeSQL run INSERT, UPDATE and DELETE (refused by default)'
complete -c canvas -n "__fish_canvas_using_subcommand chat" -s h -l help -d 'Print help'
complete -c canvas -n "__fish_canvas_using_subcommand runs; and not __fish_seen_subcommand_from prune" -l status -d 'Only runs with this status' -r -f -a "running\t''
waiting\t''
succeeded\t''
failed\t''
interrupted\t''
cancelled\t''"
complete -c canvas -n "__fish_canvas_using_subcommand runs; and not __fish_seen_subcommand_from prune" -l limit -d 'At most N runs (0 = all)' -r
complete -c canvas -n "__fish_canvas_using_subcommand runs; and not __fish_seen_subcommand_from prune" -l format -d 'Output format' -r -f -a "table\t'Aligned columns'
json\t'A JSON array of runs'"
complete -c canvas -n "__fish_canvas_using_subcommand runs; and not __fish_seen_subcommand_from prune" -l store -d 'Store [default: ~/.local/share/canvas/canvas.db]' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand runs; and not __fish_seen_subcommand_from prune" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c canvas -n "__fish_canvas_using_subcommand runs; and not __fish_seen_subcommand_from prune" -f -a "prune" -d 'Delete old runs and give their space back (a dry run without --yes)'
complete -c canvas -n "__fish_canvas_using_subcommand runs; and __fish_seen_subcommand_from prune" -l older-than -d 'Runs last updated more than DURATION ago: 30d, 12h, 90m, 2w (units s m h d w)' -r
complete -c canvas -n "__fish_canvas_using_subcommand runs; and __fish_seen_subcommand_from prune" -l status -d 'Runs with status S (repeatable, or a comma list: failed,cancelled)' -r -f -a "running\t''
waiting\t''
succeeded\t''
failed\t''
interrupted\t''
cancelled\t''"
complete -c canvas -n "__fish_canvas_using_subcommand runs; and __fish_seen_subcommand_from prune" -l keep -d 'Never delete the N most recently created runs (counting every run)' -r
complete -c canvas -n "__fish_canvas_using_subcommand runs; and __fish_seen_subcommand_from prune" -l format -d 'Output format: the table and a summary, or one JSON object (json never asks)' -r -f -a "table\t''
json\t''"
complete -c canvas -n "__fish_canvas_using_subcommand runs; and __fish_seen_subcommand_from prune" -l store -d 'Store [default: ~/.local/share/canvas/canvas.db]' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand runs; and __fish_seen_subcommand_from prune" -s y -l yes -d 'Delete without asking (without it: a dry run, or a question on a terminal)'
complete -c canvas -n "__fish_canvas_using_subcommand runs; and __fish_seen_subcommand_from prune" -s h -l help -d 'Print help'
complete -c canvas -n "__fish_canvas_using_subcommand show" -l format -d 'Output format' -r -f -a "text\t'Readable lines'
json\t'One JSON object'"
complete -c canvas -n "__fish_canvas_using_subcommand show" -l store -d 'Store [default: ~/.local/share/canvas/canvas.db]' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand show" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c canvas -n "__fish_canvas_using_subcommand events" -l format -d 'Output format [default: text on a terminal, jsonl otherwise]' -r -f -a "text\t'Readable text (default on a terminal)'
jsonl\t'The stored JSON lines, unchanged (default otherwise)'
sse\t'RAGFlow\'s SSE framing: `data:{json}` frames, then `data:[DONE]`'"
complete -c canvas -n "__fish_canvas_using_subcommand events" -l turn -d 'Only the events of turn N (the first turn is 1)' -r
complete -c canvas -n "__fish_canvas_using_subcommand events" -l store -d 'Store [default: ~/.local/share/canvas/canvas.db]' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand events" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c canvas -n "__fish_canvas_using_subcommand cancel" -l store -d 'Store [default: ~/.local/share/canvas/canvas.db]' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand cancel" -s h -l help -d 'Print help'
complete -c canvas -n "__fish_canvas_using_subcommand validate" -l format -d 'Output format' -r -f -a "text\t'Findings grouped per file (colored on a terminal)'
json\t'One JSON document: every file with its findings'
github\t'GitHub Actions workflow commands (`::error file=…,line=…::`)'"
complete -c canvas -n "__fish_canvas_using_subcommand validate" -l strict -d 'Fail on warnings too'
complete -c canvas -n "__fish_canvas_using_subcommand validate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c canvas -n "__fish_canvas_using_subcommand migrate" -s o -l output -d 'Write the migrated canvas to OUT (one input file only)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand migrate" -l format -d 'Output format' -r -f -a "diff\t'A unified diff of each rewrite (colored on a terminal)'
json\t'Each file with the rules applied and where'"
complete -c canvas -n "__fish_canvas_using_subcommand migrate" -l write -d 'Rewrite each file in place (only files that need it are touched)'
complete -c canvas -n "__fish_canvas_using_subcommand migrate" -l check -d 'Exit 1 when any file needs migrating (for CI); nothing is written'
complete -c canvas -n "__fish_canvas_using_subcommand migrate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l dataset -d 'The rows: .jsonl, .csv or .yaml (docs/batch.md)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l resume -d 'Continue a stored batch (an id, a unique prefix, or `latest`)' -r
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l concurrency -d 'Rows run at once' -r
complete -c canvas -n "__fish_canvas_using_subcommand batch" -s o -l output -d 'Write one result per row here (.jsonl, or .csv)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l format -d 'The summary\'s format: text or json' -r -f -a "text\t''
json\t''"
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l lease -d 'Seconds before a dead worker\'s rows are taken over' -r
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l store -d 'Store [default: ~/.local/share/canvas/canvas.db]' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l rps -d 'Most model calls per second to each provider' -r
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l max-parallel -d 'Most components of one run running at once (as `run`\'s flag; not shown: rarely changed for a batch, whose rows already run side by side)' -r
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l max-steps -d 'Step budget of a row\'s turn (0: none)' -r
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l seed -d 'Seed for random choices (Message alternatives)' -r
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l mock-llm -d 'Answer every model call from a script (docs/mock-llm.md), offline' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l llm-config -d 'Provider configuration (docs/providers.md)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l model -d 'The model of components whose llm_id is empty' -r
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l record -d 'Save every model call and its answer (for --replay)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l replay -d 'Answer model calls from a --record file; any other call fails' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l mcp-config -d 'Where the MCP servers an Agent names are (YAML)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l output-dir -d 'Where generated files go (documents, workbooks, code artifacts)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l worker -d 'Join (or start) the unfinished batch of this canvas and dataset'
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l quiet -d 'No progress bar'
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l no-validate -d 'Skip the checks of `canvas validate` (expert use; see docs/validate.md)'
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l allow-private-network -d 'Let tools reach private addresses'
complete -c canvas -n "__fish_canvas_using_subcommand batch" -l allow-sql-writes -d 'Let ExeSQL run INSERT, UPDATE and DELETE (refused by default)'
complete -c canvas -n "__fish_canvas_using_subcommand batch" -s h -l help -d 'Print help'
complete -c canvas -n "__fish_canvas_using_subcommand batches" -l limit -d 'At most N batches (0 = all)' -r
complete -c canvas -n "__fish_canvas_using_subcommand batches" -l format -d 'Output format' -r -f -a "table\t'Aligned columns'
json\t'A JSON array of batches'"
complete -c canvas -n "__fish_canvas_using_subcommand batches" -l store -d 'Store [default: ~/.local/share/canvas/canvas.db]' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand batches" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l addr -d 'Address to listen on (port 0: any free port)' -r
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l api-key-file -d 'API keys, one a line (Bearer tokens)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l api-keys -d 'API keys separated by commas (for containers; a file is safer)' -r
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l ready-file -d 'Write the bound address to FILE once listening' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l max-body -d 'Largest request body, in bytes' -r
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l timeout -d 'Seconds a request (or a turn) may take' -r
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l lease -d 'Seconds before a dead instance\'s sessions are taken over' -r
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l store -d 'Store [default: ~/.local/share/canvas/canvas.db]' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l max-parallel -d 'Most components of one turn running at once' -r
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l max-steps -d 'Step budget of a turn (0: none)' -r
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l seed -d 'Seed for random choices (Message alternatives)' -r
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l mock-llm -d 'Answer every model call from a script (docs/mock-llm.md), offline' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l llm-config -d 'Provider configuration (docs/providers.md)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l model -d 'The model of components whose llm_id is empty' -r
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l record -d 'Save every model call and its answer (for --replay)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l replay -d 'Answer model calls from a --record file; any other call fails' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l mcp-config -d 'Where the MCP servers an Agent names are (YAML)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l output-dir -d 'Where generated files go (documents, workbooks, code artifacts)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l quiet -d 'No access log (JSON lines on stderr)'
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l no-validate -d 'Skip the checks of `canvas validate` (expert use; see docs/validate.md)'
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l allow-private-network -d 'Let tools reach private addresses'
complete -c canvas -n "__fish_canvas_using_subcommand serve" -l allow-sql-writes -d 'Let ExeSQL run INSERT, UPDATE and DELETE (refused by default)'
complete -c canvas -n "__fish_canvas_using_subcommand serve" -s h -l help -d 'Print help'
complete -c canvas -n "__fish_canvas_using_subcommand graph" -l format -d 'Output format' -r -f -a "mermaid\t'A Mermaid flowchart (plain text, no fences: pipe it into `mmdc` or paste it in a Markdown mermaid block)'
dot\t'A Graphviz digraph (pipe it into `dot -Tsvg`)'"
complete -c canvas -n "__fish_canvas_using_subcommand graph" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c canvas -n "__fish_canvas_using_subcommand components" -l format -d 'Output format' -r -f -a "text\t'A readable list'
json\t'One JSON array'"
complete -c canvas -n "__fish_canvas_using_subcommand components" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c canvas -n "__fish_canvas_using_subcommand completions" -l dir -d 'Write every shell\'s script into DIR instead (the repository\'s `completions/`)' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand completions" -s h -l help -d 'Print help'
complete -c canvas -n "__fish_canvas_using_subcommand man" -l dir -d 'Write `canvas.1` and one `canvas-<command>.1` per subcommand into DIR' -r -F
complete -c canvas -n "__fish_canvas_using_subcommand man" -s h -l help -d 'Print help'
