
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'canvas' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'canvas'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'canvas' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Run a canvas (JSON or YAML; `-` reads stdin) and print its events')
            [CompletionResult]::new('resume', 'resume', [CompletionResultType]::ParameterValue, 'Continue a stored run: answer its form, go on after a stop, or send the next turn')
            [CompletionResult]::new('chat', 'chat', [CompletionResultType]::ParameterValue, 'Chat with a conversational canvas: each line you type is a turn of one run')
            [CompletionResult]::new('runs', 'runs', [CompletionResultType]::ParameterValue, 'List the stored runs, newest first; `canvas runs prune` deletes old ones')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show one stored run: status, canvas, times, waiting form, error')
            [CompletionResult]::new('events', 'events', [CompletionResultType]::ParameterValue, 'Replay a stored run''s events in any output format')
            [CompletionResult]::new('cancel', 'cancel', [CompletionResultType]::ParameterValue, 'Ask the process running a run to stop at its next node boundary (resumable)')
            [CompletionResult]::new('validate', 'validate', [CompletionResultType]::ParameterValue, 'Check canvases statically (no network, no models): exit 1 on errors')
            [CompletionResult]::new('migrate', 'migrate', [CompletionResultType]::ParameterValue, 'Rewrite legacy or graph-only canvases into the current form; shows the diff')
            [CompletionResult]::new('batch', 'batch', [CompletionResultType]::ParameterValue, 'Run a canvas over every row of a dataset, with checks; resumable')
            [CompletionResult]::new('batches', 'batches', [CompletionResultType]::ParameterValue, 'List the stored batches: rows done, failed, waiting and pending')
            [CompletionResult]::new('serve', 'serve', [CompletionResultType]::ParameterValue, 'Serve canvases through RAGFlow''s agent API (its SDK and OpenAI clients work)')
            [CompletionResult]::new('graph', 'graph', [CompletionResultType]::ParameterValue, 'Draw a canvas''s execution graph as Mermaid or Graphviz DOT')
            [CompletionResult]::new('components', 'components', [CompletionResultType]::ParameterValue, 'List the components and tools this build knows, with their parameters')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script (bash, zsh, fish, powershell, elvish)')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Print the man page (or write every page with --dir)')
            break
        }
        'canvas;run' {
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, '`sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @)')
            [CompletionResult]::new('--query', '--query', [CompletionResultType]::ParameterName, '`sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @)')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE)')
            [CompletionResult]::new('--input', '--input', [CompletionResultType]::ParameterName, 'A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE)')
            [CompletionResult]::new('--inputs', '--inputs', [CompletionResultType]::ParameterName, 'A JSON or YAML file mapping field keys to values')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'text (default on a terminal), jsonl (one event per line) or sse')
            [CompletionResult]::new('--store', '--store', [CompletionResultType]::ParameterName, 'Store [default: ~/.local/share/canvas/canvas.db]')
            [CompletionResult]::new('--max-parallel', '--max-parallel', [CompletionResultType]::ParameterName, 'Most components running at once')
            [CompletionResult]::new('--max-steps', '--max-steps', [CompletionResultType]::ParameterName, 'Step budget of a turn: a resumable stop (0: none)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Wall-clock limit for the whole turn, in seconds')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed for random choices (Message alternatives): reproducible runs')
            [CompletionResult]::new('--mock-llm', '--mock-llm', [CompletionResultType]::ParameterName, 'Answer every model call from a script (docs/mock-llm.md), offline')
            [CompletionResult]::new('--llm-config', '--llm-config', [CompletionResultType]::ParameterName, 'Provider configuration (docs/providers.md)')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model of components whose llm_id is empty')
            [CompletionResult]::new('--record', '--record', [CompletionResultType]::ParameterName, 'Save every model call and its answer (for --replay)')
            [CompletionResult]::new('--replay', '--replay', [CompletionResultType]::ParameterName, 'Answer model calls from a --record file; any other call fails')
            [CompletionResult]::new('--mcp-config', '--mcp-config', [CompletionResultType]::ParameterName, 'Where the MCP servers an Agent names are (YAML)')
            [CompletionResult]::new('--output-dir', '--output-dir', [CompletionResultType]::ParameterName, 'Where generated files go (documents, workbooks, code artifacts)')
            [CompletionResult]::new('--no-validate', '--no-validate', [CompletionResultType]::ParameterName, 'Skip the checks of `canvas validate` (expert use; see docs/validate.md)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More output: node starts, logs on stderr, error causes')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More output: node starts, logs on stderr, error causes')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Less output: message text and errors only')
            [CompletionResult]::new('--non-interactive', '--non-interactive', [CompletionResultType]::ParameterName, 'Never prompt (implied when stdin is not a terminal)')
            [CompletionResult]::new('--allow-private-network', '--allow-private-network', [CompletionResultType]::ParameterName, 'Let tools reach private addresses')
            [CompletionResult]::new('--allow-sql-writes', '--allow-sql-writes', [CompletionResultType]::ParameterName, 'Let ExeSQL run INSERT, UPDATE and DELETE (refused by default)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'canvas;resume' {
            [CompletionResult]::new('--canvas-changed', '--canvas-changed', [CompletionResultType]::ParameterName, 'Run the stored canvas even if its file changed since the run started')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, '`sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @)')
            [CompletionResult]::new('--query', '--query', [CompletionResultType]::ParameterName, '`sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @)')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE)')
            [CompletionResult]::new('--input', '--input', [CompletionResultType]::ParameterName, 'A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE)')
            [CompletionResult]::new('--inputs', '--inputs', [CompletionResultType]::ParameterName, 'A JSON or YAML file mapping field keys to values')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'text (default on a terminal), jsonl (one event per line) or sse')
            [CompletionResult]::new('--store', '--store', [CompletionResultType]::ParameterName, 'Store [default: ~/.local/share/canvas/canvas.db]')
            [CompletionResult]::new('--max-parallel', '--max-parallel', [CompletionResultType]::ParameterName, 'Most components running at once')
            [CompletionResult]::new('--max-steps', '--max-steps', [CompletionResultType]::ParameterName, 'Step budget of a turn: a resumable stop (0: none)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Wall-clock limit for the whole turn, in seconds')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed for random choices (Message alternatives): reproducible runs')
            [CompletionResult]::new('--mock-llm', '--mock-llm', [CompletionResultType]::ParameterName, 'Answer every model call from a script (docs/mock-llm.md), offline')
            [CompletionResult]::new('--llm-config', '--llm-config', [CompletionResultType]::ParameterName, 'Provider configuration (docs/providers.md)')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model of components whose llm_id is empty')
            [CompletionResult]::new('--record', '--record', [CompletionResultType]::ParameterName, 'Save every model call and its answer (for --replay)')
            [CompletionResult]::new('--replay', '--replay', [CompletionResultType]::ParameterName, 'Answer model calls from a --record file; any other call fails')
            [CompletionResult]::new('--mcp-config', '--mcp-config', [CompletionResultType]::ParameterName, 'Where the MCP servers an Agent names are (YAML)')
            [CompletionResult]::new('--output-dir', '--output-dir', [CompletionResultType]::ParameterName, 'Where generated files go (documents, workbooks, code artifacts)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More output: node starts, logs on stderr, error causes')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More output: node starts, logs on stderr, error causes')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Less output: message text and errors only')
            [CompletionResult]::new('--non-interactive', '--non-interactive', [CompletionResultType]::ParameterName, 'Never prompt (implied when stdin is not a terminal)')
            [CompletionResult]::new('--allow-private-network', '--allow-private-network', [CompletionResultType]::ParameterName, 'Let tools reach private addresses')
            [CompletionResult]::new('--allow-sql-writes', '--allow-sql-writes', [CompletionResultType]::ParameterName, 'Let ExeSQL run INSERT, UPDATE and DELETE (refused by default)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'canvas;chat' {
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, '`sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @)')
            [CompletionResult]::new('--query', '--query', [CompletionResultType]::ParameterName, '`sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @)')
            [CompletionResult]::new('-i', '-i', [CompletionResultType]::ParameterName, 'A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE)')
            [CompletionResult]::new('--input', '--input', [CompletionResultType]::ParameterName, 'A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE)')
            [CompletionResult]::new('--inputs', '--inputs', [CompletionResultType]::ParameterName, 'A JSON or YAML file mapping field keys to values')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'text (default on a terminal), jsonl (one event per line) or sse')
            [CompletionResult]::new('--store', '--store', [CompletionResultType]::ParameterName, 'Store [default: ~/.local/share/canvas/canvas.db]')
            [CompletionResult]::new('--max-parallel', '--max-parallel', [CompletionResultType]::ParameterName, 'Most components running at once')
            [CompletionResult]::new('--max-steps', '--max-steps', [CompletionResultType]::ParameterName, 'Step budget of a turn: a resumable stop (0: none)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Wall-clock limit for the whole turn, in seconds')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed for random choices (Message alternatives): reproducible runs')
            [CompletionResult]::new('--mock-llm', '--mock-llm', [CompletionResultType]::ParameterName, 'Answer every model call from a script (docs/mock-llm.md), offline')
            [CompletionResult]::new('--llm-config', '--llm-config', [CompletionResultType]::ParameterName, 'Provider configuration (docs/providers.md)')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model of components whose llm_id is empty')
            [CompletionResult]::new('--record', '--record', [CompletionResultType]::ParameterName, 'Save every model call and its answer (for --replay)')
            [CompletionResult]::new('--replay', '--replay', [CompletionResultType]::ParameterName, 'Answer model calls from a --record file; any other call fails')
            [CompletionResult]::new('--mcp-config', '--mcp-config', [CompletionResultType]::ParameterName, 'Where the MCP servers an Agent names are (YAML)')
            [CompletionResult]::new('--output-dir', '--output-dir', [CompletionResultType]::ParameterName, 'Where generated files go (documents, workbooks, code artifacts)')
            [CompletionResult]::new('--no-validate', '--no-validate', [CompletionResultType]::ParameterName, 'Skip the checks of `canvas validate` (expert use; see docs/validate.md)')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'More output: node starts, logs on stderr, error causes')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'More output: node starts, logs on stderr, error causes')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Less output: message text and errors only')
            [CompletionResult]::new('--non-interactive', '--non-interactive', [CompletionResultType]::ParameterName, 'Never prompt (implied when stdin is not a terminal)')
            [CompletionResult]::new('--allow-private-network', '--allow-private-network', [CompletionResultType]::ParameterName, 'Let tools reach private addresses')
            [CompletionResult]::new('--allow-sql-writes', '--allow-sql-writes', [CompletionResultType]::ParameterName, 'Let ExeSQL run INSERT, UPDATE and DELETE (refused by default)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'canvas;runs' {
            [CompletionResult]::new('--status', '--status', [CompletionResultType]::ParameterName, 'Only runs with this status')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'At most N runs (0 = all)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--store', '--store', [CompletionResultType]::ParameterName, 'Store [default: ~/.local/share/canvas/canvas.db]')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('prune', 'prune', [CompletionResultType]::ParameterValue, 'Delete old runs and give their space back (a dry run without --yes)')
            break
        }
        'canvas;runs;prune' {
            [CompletionResult]::new('--older-than', '--older-than', [CompletionResultType]::ParameterName, 'Runs last updated more than DURATION ago: 30d, 12h, 90m, 2w (units s m h d w)')
            [CompletionResult]::new('--status', '--status', [CompletionResultType]::ParameterName, 'Runs with status S (repeatable, or a comma list: failed,cancelled)')
            [CompletionResult]::new('--keep', '--keep', [CompletionResultType]::ParameterName, 'Never delete the N most recently created runs (counting every run)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format: the table and a summary, or one JSON object (json never asks)')
            [CompletionResult]::new('--store', '--store', [CompletionResultType]::ParameterName, 'Store [default: ~/.local/share/canvas/canvas.db]')
            [CompletionResult]::new('-y', '-y', [CompletionResultType]::ParameterName, 'Delete without asking (without it: a dry run, or a question on a terminal)')
            [CompletionResult]::new('--yes', '--yes', [CompletionResultType]::ParameterName, 'Delete without asking (without it: a dry run, or a question on a terminal)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'canvas;show' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--store', '--store', [CompletionResultType]::ParameterName, 'Store [default: ~/.local/share/canvas/canvas.db]')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'canvas;events' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format [default: text on a terminal, jsonl otherwise]')
            [CompletionResult]::new('--turn', '--turn', [CompletionResultType]::ParameterName, 'Only the events of turn N (the first turn is 1)')
            [CompletionResult]::new('--store', '--store', [CompletionResultType]::ParameterName, 'Store [default: ~/.local/share/canvas/canvas.db]')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'canvas;cancel' {
            [CompletionResult]::new('--store', '--store', [CompletionResultType]::ParameterName, 'Store [default: ~/.local/share/canvas/canvas.db]')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'canvas;validate' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--strict', '--strict', [CompletionResultType]::ParameterName, 'Fail on warnings too')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'canvas;migrate' {
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write the migrated canvas to OUT (one input file only)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write the migrated canvas to OUT (one input file only)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--write', '--write', [CompletionResultType]::ParameterName, 'Rewrite each file in place (only files that need it are touched)')
            [CompletionResult]::new('--check', '--check', [CompletionResultType]::ParameterName, 'Exit 1 when any file needs migrating (for CI); nothing is written')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'canvas;batch' {
            [CompletionResult]::new('--dataset', '--dataset', [CompletionResultType]::ParameterName, 'The rows: .jsonl, .csv or .yaml (docs/batch.md)')
            [CompletionResult]::new('--resume', '--resume', [CompletionResultType]::ParameterName, 'Continue a stored batch (an id, a unique prefix, or `latest`)')
            [CompletionResult]::new('--concurrency', '--concurrency', [CompletionResultType]::ParameterName, 'Rows run at once')
            [CompletionResult]::new('-o', '-o', [CompletionResultType]::ParameterName, 'Write one result per row here (.jsonl, or .csv)')
            [CompletionResult]::new('--output', '--output', [CompletionResultType]::ParameterName, 'Write one result per row here (.jsonl, or .csv)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'The summary''s format: text or json')
            [CompletionResult]::new('--lease', '--lease', [CompletionResultType]::ParameterName, 'Seconds before a dead worker''s rows are taken over')
            [CompletionResult]::new('--store', '--store', [CompletionResultType]::ParameterName, 'Store [default: ~/.local/share/canvas/canvas.db]')
            [CompletionResult]::new('--rps', '--rps', [CompletionResultType]::ParameterName, 'Most model calls per second to each provider')
            [CompletionResult]::new('--max-parallel', '--max-parallel', [CompletionResultType]::ParameterName, 'Most components of one run running at once (as `run`''s flag; not shown: rarely changed for a batch, whose rows already run side by side)')
            [CompletionResult]::new('--max-steps', '--max-steps', [CompletionResultType]::ParameterName, 'Step budget of a row''s turn (0: none)')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed for random choices (Message alternatives)')
            [CompletionResult]::new('--mock-llm', '--mock-llm', [CompletionResultType]::ParameterName, 'Answer every model call from a script (docs/mock-llm.md), offline')
            [CompletionResult]::new('--llm-config', '--llm-config', [CompletionResultType]::ParameterName, 'Provider configuration (docs/providers.md)')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model of components whose llm_id is empty')
            [CompletionResult]::new('--record', '--record', [CompletionResultType]::ParameterName, 'Save every model call and its answer (for --replay)')
            [CompletionResult]::new('--replay', '--replay', [CompletionResultType]::ParameterName, 'Answer model calls from a --record file; any other call fails')
            [CompletionResult]::new('--mcp-config', '--mcp-config', [CompletionResultType]::ParameterName, 'Where the MCP servers an Agent names are (YAML)')
            [CompletionResult]::new('--output-dir', '--output-dir', [CompletionResultType]::ParameterName, 'Where generated files go (documents, workbooks, code artifacts)')
            [CompletionResult]::new('--worker', '--worker', [CompletionResultType]::ParameterName, 'Join (or start) the unfinished batch of this canvas and dataset')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress bar')
            [CompletionResult]::new('--no-validate', '--no-validate', [CompletionResultType]::ParameterName, 'Skip the checks of `canvas validate` (expert use; see docs/validate.md)')
            [CompletionResult]::new('--allow-private-network', '--allow-private-network', [CompletionResultType]::ParameterName, 'Let tools reach private addresses')
            [CompletionResult]::new('--allow-sql-writes', '--allow-sql-writes', [CompletionResultType]::ParameterName, 'Let ExeSQL run INSERT, UPDATE and DELETE (refused by default)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'canvas;batches' {
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'At most N batches (0 = all)')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--store', '--store', [CompletionResultType]::ParameterName, 'Store [default: ~/.local/share/canvas/canvas.db]')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'canvas;serve' {
            [CompletionResult]::new('--addr', '--addr', [CompletionResultType]::ParameterName, 'Address to listen on (port 0: any free port)')
            [CompletionResult]::new('--api-key-file', '--api-key-file', [CompletionResultType]::ParameterName, 'API keys, one a line (Bearer tokens)')
            [CompletionResult]::new('--api-keys', '--api-keys', [CompletionResultType]::ParameterName, 'API keys separated by commas (for containers; a file is safer)')
            [CompletionResult]::new('--ready-file', '--ready-file', [CompletionResultType]::ParameterName, 'Write the bound address to FILE once listening')
            [CompletionResult]::new('--max-body', '--max-body', [CompletionResultType]::ParameterName, 'Largest request body, in bytes')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Seconds a request (or a turn) may take')
            [CompletionResult]::new('--lease', '--lease', [CompletionResultType]::ParameterName, 'Seconds before a dead instance''s sessions are taken over')
            [CompletionResult]::new('--store', '--store', [CompletionResultType]::ParameterName, 'Store [default: ~/.local/share/canvas/canvas.db]')
            [CompletionResult]::new('--max-parallel', '--max-parallel', [CompletionResultType]::ParameterName, 'Most components of one turn running at once')
            [CompletionResult]::new('--max-steps', '--max-steps', [CompletionResultType]::ParameterName, 'Step budget of a turn (0: none)')
            [CompletionResult]::new('--seed', '--seed', [CompletionResultType]::ParameterName, 'Seed for random choices (Message alternatives)')
            [CompletionResult]::new('--mock-llm', '--mock-llm', [CompletionResultType]::ParameterName, 'Answer every model call from a script (docs/mock-llm.md), offline')
            [CompletionResult]::new('--llm-config', '--llm-config', [CompletionResultType]::ParameterName, 'Provider configuration (docs/providers.md)')
            [CompletionResult]::new('--model', '--model', [CompletionResultType]::ParameterName, 'The model of components whose llm_id is empty')
            [CompletionResult]::new('--record', '--record', [CompletionResultType]::ParameterName, 'Save every model call and its answer (for --replay)')
            [CompletionResult]::new('--replay', '--replay', [CompletionResultType]::ParameterName, 'Answer model calls from a --record file; any other call fails')
            [CompletionResult]::new('--mcp-config', '--mcp-config', [CompletionResultType]::ParameterName, 'Where the MCP servers an Agent names are (YAML)')
            [CompletionResult]::new('--output-dir', '--output-dir', [CompletionResultType]::ParameterName, 'Where generated files go (documents, workbooks, code artifacts)')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No access log (JSON lines on stderr)')
            [CompletionResult]::new('--no-validate', '--no-validate', [CompletionResultType]::ParameterName, 'Skip the checks of `canvas validate` (expert use; see docs/validate.md)')
            [CompletionResult]::new('--allow-private-network', '--allow-private-network', [CompletionResultType]::ParameterName, 'Let tools reach private addresses')
            [CompletionResult]::new('--allow-sql-writes', '--allow-sql-writes', [CompletionResultType]::ParameterName, 'Let ExeSQL run INSERT, UPDATE and DELETE (refused by default)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'canvas;graph' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'canvas;components' {
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'canvas;completions' {
            [CompletionResult]::new('--dir', '--dir', [CompletionResultType]::ParameterName, 'Write every shell''s script into DIR instead (the repository''s `completions/`)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'canvas;man' {
            [CompletionResult]::new('--dir', '--dir', [CompletionResultType]::ParameterName, 'Write `canvas.1` and one `canvas-<command>.1` per subcommand into DIR')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
