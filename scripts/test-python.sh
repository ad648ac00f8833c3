#!/usr/bin/env bash
# The Python the tests compare with, pinned, in a virtual environment under target/:
# RAGFlow's SDK and OpenAI's, the clients `tests/cli/serve.rs` drives `canvas serve`
# with; Jinja2, which the engine's templates are rendered against
# (`crates/engine/tests/jinja2.rs`); and tabulate with wcwidth, which ExeSQL's and
# ExcelProcessor's markdown tables are written against (`crates/pyrt/tests/tabulate.rs`).
# Idempotent: an environment that already has the pins is left as it is. Prints the
# environment's python.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="target/pyenv"
python="$PWD/$venv/bin/python"
pins=(ragflow-sdk==0.22.1 openai==3.57.0 jinja2==3.1.6 tabulate==0.9.0 wcwidth==0.2.13)
stamp="$venv/.pins"

if [ ! -x "$python" ]; then
  python3 -m venv "$venv" >&2
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "${pins[*]}" ]; then
  "$python" -m pip install --quiet --disable-pip-version-check "${pins[@]}" >&2
  printf '%s' "${pins[*]}" >"$stamp"
fi
echo "$python"
