#!/usr/bin/env bash
# The Python the tests compare with, pinned, in a virtual environment under target/:
# RAGFlow's SDK and OpenAI's, the clients `tests/cli/serve.rs` drives `canvas serve`
# with, and Jinja2, which the engine's templates are rendered against
# (`crates/engine/tests/jinja2.rs`). Idempotent: an environment that already has the
# pins is left as it is. Prints the environment's python.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="target/pyenv"
python="$PWD/$venv/bin/python"
pins=(ragflow-sdk==0.22.1 openai==3.57.0 jinja2==3.1.6)
stamp="$venv/.pins"

if [ ! -x "$python" ]; then
  python3 -m venv "$venv" >&2
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "${pins[*]}" ]; then
  "$python" -m pip install --quiet --disable-pip-version-check "${pins[@]}" >&2
  printf '%s' "${pins[*]}" >"$stamp"
fi
echo "$python"
