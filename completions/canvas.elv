
use builtin;
use str;

set edit:completion:arg-completer[canvas] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'canvas'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'canvas'= {
            cand -h 'Print help'
            cand --help 'Print help'
            cand -V 'Print version'
            cand --version 'Print version'
            cand run 'Run a canvas (JSON or YAML; `-` reads stdin) and print its events'
            cand resume 'Continue a stored run: answer its form, go on after a stop, or send the next turn'
            cand chat 'Chat with a conversational canvas: each line you type is a turn of one run'
            cand runs 'List the stored runs, newest first; `canvas runs prune` deletes old ones'
            cand show 'Show one stored run: status, canvas, times, waiting form, error'
            cand events 'Replay a stored run''s events in any output format'
            cand cancel 'Ask the process running a run to stop at its next node boundary (resumable)'
            cand validate 'Check canvases statically (no network, no models): exit 1 on errors'
            cand migrate 'Rewrite legacy or graph-only canvases into the current form; shows the diff'
            cand batch 'Run a canvas over every row of a dataset, with checks; resumable'
            cand batches 'List the stored batches: rows done, failed, waiting and pending'
            cand serve 'Serve canvases through RAGFlow''s agent API (its SDK and OpenAI clients work)'
            cand graph 'Draw a canvas''s execution graph as Mermaid or Graphviz DOT'
            cand components 'List the components and tools this build knows, with their parameters'
            cand completions 'Print a shell completion script (bash, zsh, fish, powershell, elvish)'
            cand man 'Print the man page (or write every page with --dir)'
        }
        &'canvas;run'= {
            cand -q '`sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @)'
            cand --query '`sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @)'
            cand -i 'A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE)'
            cand --input 'A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE)'
            cand --inputs 'A JSON or YAML file mapping field keys to values'
            cand --format 'text (default on a terminal), jsonl (one event per line) or sse'
            cand --store 'Store [default: ~/.local/share/canvas/canvas.db]'
            cand --max-parallel 'Most components running at once'
            cand --max-steps 'Step budget of a turn: a resumable stop (0: none)'
            cand --timeout 'Wall-clock limit for the whole turn, in seconds'
            cand --seed 'Seed for random choices (Message alternatives): reproducible runs'
            cand --mock-llm 'Answer every model call from a script (docs/mock-llm.md), offline'
            cand --llm-config 'Provider configuration (docs/providers.md)'
            cand --model 'The model of components whose llm_id is empty'
            cand --record 'Save every model call and its answer (for --replay)'
            cand --replay 'Answer model calls from a --record file; any other call fails'
            cand --mcp-config 'Where the MCP servers an Agent names are (YAML)'
            cand --output-dir 'Where generated files go (documents, workbooks, code artifacts)'
            cand --no-validate 'Skip the checks of `canvas validate` (expert use; see docs/validate.md)'
            cand -v 'More output: node starts, logs on stderr, error causes'
            cand --verbose 'More output: node starts, logs on stderr, error causes'
            cand --quiet 'Less output: message text and errors only'
            cand --non-interactive 'Never prompt (implied when stdin is not a terminal)'
            cand --allow-private-network 'Let tools reach private addresses'
            cand --allow-sql-writes 'Let ExeSQL run INSERT, UPDATE and DELETE (refused by default)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'canvas;resume'= {
            cand --canvas-changed 'Run the stored canvas even if its file changed since the run started'
            cand -q '`sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @)'
            cand --query '`sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @)'
            cand -i 'A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE)'
            cand --input 'A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE)'
            cand --inputs 'A JSON or YAML file mapping field keys to values'
            cand --format 'text (default on a terminal), jsonl (one event per line) or sse'
            cand --store 'Store [default: ~/.local/share/canvas/canvas.db]'
            cand --max-parallel 'Most components running at once'
            cand --max-steps 'Step budget of a turn: a resumable stop (0: none)'
            cand --timeout 'Wall-clock limit for the whole turn, in seconds'
            cand --seed 'Seed for random choices (Message alternatives): reproducible runs'
            cand --mock-llm 'Answer every model call from a script (docs/mock-llm.md), offline'
            cand --llm-config 'Provider configuration (docs/providers.md)'
            cand --model 'The model of components whose llm_id is empty'
            cand --record 'Save every model call and its answer (for --replay)'
            cand --replay 'Answer model calls from a --record file; any other call fails'
            cand --mcp-config 'Where the MCP servers an Agent names are (YAML)'
            cand --output-dir 'Where generated files go (documents, workbooks, code artifacts)'
            cand -v 'More output: node starts, logs on stderr, error causes'
            cand --verbose 'More output: node starts, logs on stderr, error causes'
            cand --quiet 'Less output: message text and errors only'
            cand --non-interactive 'Never prompt (implied when stdin is not a terminal)'
            cand --allow-private-network 'Let tools reach private addresses'
            cand --allow-sql-writes 'Let ExeSQL run INSERT, UPDATE and DELETE (refused by default)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'canvas;chat'= {
            cand -q '`sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @)'
            cand --query '`sys.query` (@FILE: read from a file, @-: from stdin, @@: a literal @)'
            cand -i 'A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE)'
            cand --input 'A Begin input or form field, KEY=VALUE, repeatable (VALUE may be @FILE)'
            cand --inputs 'A JSON or YAML file mapping field keys to values'
            cand --format 'text (default on a terminal), jsonl (one event per line) or sse'
            cand --store 'Store [default: ~/.local/share/canvas/canvas.db]'
            cand --max-parallel 'Most components running at once'
            cand --max-steps 'Step budget of a turn: a resumable stop (0: none)'
            cand --timeout 'Wall-clock limit for the whole turn, in seconds'
            cand --seed 'Seed for random choices (Message alternatives): reproducible runs'
            cand --mock-llm 'Answer every model call from a script (docs/mock-llm.md), offline'
            cand --llm-config 'Provider configuration (docs/providers.md)'
            cand --model 'The model of components whose llm_id is empty'
            cand --record 'Save every model call and its answer (for --replay)'
            cand --replay 'Answer model calls from a --record file; any other call fails'
            cand --mcp-config 'Where the MCP servers an Agent names are (YAML)'
            cand --output-dir 'Where generated files go (documents, workbooks, code artifacts)'
            cand --no-validate 'Skip the checks of `canvas validate` (expert use; see docs/validate.md)'
            cand -v 'More output: node starts, logs on stderr, error causes'
            cand --verbose 'More output: node starts, logs on stderr, error causes'
            cand --quiet 'Less output: message text and errors only'
            cand --non-interactive 'Never prompt (implied when stdin is not a terminal)'
            cand --allow-private-network 'Let tools reach private addresses'
            cand --allow-sql-writes 'Let ExeSQL run INSERT, UPDATE and DELETE (refused by default)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'canvas;runs'= {
            cand --status 'Only runs with this status'
            cand --limit 'At most N runs (0 = all)'
            cand --format 'Output format'
            cand --store 'Store [default: ~/.local/share/canvas/canvas.db]'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand prune 'Delete old runs and give their space back (a dry run without --yes)'
        }
        &'canvas;runs;prune'= {
            cand --older-than 'Runs last updated more than DURATION ago: 30d, 12h, 90m, 2w (units s m h d w)'
            cand --status 'Runs with status S (repeatable, or a comma list: failed,cancelled)'
            cand --keep 'Never delete the N most recently created runs (counting every run)'
            cand --format 'Output format: the table and a summary, or one JSON object (json never asks)'
            cand --store 'Store [default: ~/.local/share/canvas/canvas.db]'
            cand -y 'Delete without asking (without it: a dry run, or a question on a terminal)'
            cand --yes 'Delete without asking (without it: a dry run, or a question on a terminal)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'canvas;show'= {
            cand --format 'Output format'
            cand --store 'Store [default: ~/.local/share/canvas/canvas.db]'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'canvas;events'= {
            cand --format 'Output format [default: text on a terminal, jsonl otherwise]'
            cand --turn 'Only the events of turn N (the first turn is 1)'
            cand --store 'Store [default: ~/.local/share/canvas/canvas.db]'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'canvas;cancel'= {
            cand --store 'Store [default: ~/.local/share/canvas/canvas.db]'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'canvas;validate'= {
            cand --format 'Output format'
            cand --strict 'Fail on warnings too'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'canvas;migrate'= {
            cand -o 'Write the migrated canvas to OUT (one input file only)'
            cand --output 'Write the migrated canvas to OUT (one input file only)'
            cand --format 'Output format'
            cand --write 'Rewrite each file in place (only files that need it are touched)'
            cand --check 'Exit 1 when any file needs migrating (for CI); nothing is written'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'canvas;batch'= {
            cand --dataset 'The rows: .jsonl, .csv or .yaml (docs/batch.md)'
            cand --resume 'Continue a stored batch (an id, a unique prefix, or `latest`)'
            cand --concurrency 'Rows run at once'
            cand -o 'Write one result per row here (.jsonl, or .csv)'
            cand --output 'Write one result per row here (.jsonl, or .csv)'
            cand --format 'The summary''s format: text or json'
            cand --lease 'Seconds before a dead worker''s rows are taken over'
            cand --store 'Store [default: ~/.local/share/canvas/canvas.db]'
            cand --rps 'Most model calls per second to each provider'
            cand --max-parallel 'Most components of one run running at once (as `run`''s flag; not shown: rarely changed for a batch, whose rows already run side by side)'
            cand --max-steps 'Step budget of a row''s turn (0: none)'
            cand --seed 'Seed for random choices (Message alternatives)'
            cand --mock-llm 'Answer every model call from a script (docs/mock-llm.md), offline'
            cand --llm-config 'Provider configuration (docs/providers.md)'
            cand --model 'The model of components whose llm_id is empty'
            cand --record 'Save every model call and its answer (for --replay)'
            cand --replay 'Answer model calls from a --record file; any other call fails'
            cand --mcp-config 'Where the MCP servers an Agent names are (YAML)'
            cand --output-dir 'Where generated files go (documents, workbooks, code artifacts)'
            cand --worker 'Join (or start) the unfinished batch of this canvas and dataset'
            cand --quiet 'No progress bar'
            cand --no-validate 'Skip the checks of `canvas validate` (expert use; see docs/validate.md)'
            cand --allow-private-network 'Let tools reach private addresses'
            cand --allow-sql-writes 'Let ExeSQL run INSERT, UPDATE and DELETE (refused by default)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'canvas;batches'= {
            cand --limit 'At most N batches (0 = all)'
            cand --format 'Output format'
            cand --store 'Store [default: ~/.local/share/canvas/canvas.db]'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'canvas;serve'= {
            cand --addr 'Address to listen on (port 0: any free port)'
            cand --api-key-file 'API keys, one a line (Bearer tokens)'
            cand --api-keys 'API keys separated by commas (for containers; a file is safer)'
            cand --ready-file 'Write the bound address to FILE once listening'
            cand --max-body 'Largest request body, in bytes'
            cand --timeout 'Seconds a request (or a turn) may take'
            cand --lease 'Seconds before a dead instance''s sessions are taken over'
            cand --store 'Store [default: ~/.local/share/canvas/canvas.db]'
            cand --max-parallel 'Most components of one turn running at once'
            cand --max-steps 'Step budget of a turn (0: none)'
            cand --seed 'Seed for random choices (Message alternatives)'
            cand --mock-llm 'Answer every model call from a script (docs/mock-llm.md), offline'
            cand --llm-config 'Provider configuration (docs/providers.md)'
            cand --model 'The model of components whose llm_id is empty'
            cand --record 'Save every model call and its answer (for --replay)'
            cand --replay 'Answer model calls from a --record file; any other call fails'
            cand --mcp-config 'Where the MCP servers an Agent names are (YAML)'
            cand --output-dir 'Where generated files go (documents, workbooks, code artifacts)'
            cand --quiet 'No access log (JSON lines on stderr)'
            cand --no-validate 'Skip the checks of `canvas validate` (expert use; see docs/validate.md)'
            cand --allow-private-network 'Let tools reach private addresses'
            cand --allow-sql-writes 'Let ExeSQL run INSERT, UPDATE and DELETE (refused by default)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'canvas;graph'= {
            cand --format 'Output format'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'canvas;components'= {
            cand --format 'Output format'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
        }
        &'canvas;completions'= {
            cand --dir 'Write every shell''s script into DIR instead (the repository''s `completions/`)'
            cand -h 'Print help'
            cand --help 'Print help'
        }
        &'canvas;man'= {
            cand --dir 'Write `canvas.1` and one `canvas-<command>.1` per subcommand into DIR'
            cand -h 'Print help'
            cand --help 'Print help'
        }
    ]
    $completions[$command]
}
