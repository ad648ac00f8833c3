#!/usr/bin/env bash
# Fuzzing with cargo-fuzz (docs/fuzzing.md). Everything runs under `nice -n 19`, one
# fuzzer process at a time.
#
#   scripts/fuzz.sh seed                    corpora in fuzz/corpus/<target>/ from ../shared etc.
#   scripts/fuzz.sh build                   build every target (nightly)
#   scripts/fuzz.sh run SECONDS [TARGET…]   fuzz each target (all by default) in turn
#   scripts/fuzz.sh totals                  time, executions, coverage and crashes per target
#   scripts/fuzz.sh keep TARGET FILE [NAME] minimize a crash into fuzz/regressions/TARGET/
#
# Settings (environment): FUZZ_TIMEOUT (seconds one input may take: a hang, default
# 10), FUZZ_RSS_MB (memory limit, default 2048), CANVAS_SHARED (default ../shared).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(dsl template pyrt mock_script llm_config inputs stored_events)
LOGS=fuzz/logs
SUMMARY=$LOGS/fuzz.log
TIMEOUT=${FUZZ_TIMEOUT:-10}
RSS_MB=${FUZZ_RSS_MB:-2048}
# No sanitizer: the code under test is safe Rust, so libFuzzer's own checks (panics,
# deadly signals, hangs, RSS) find what ASan would, at twice the speed; the targets'
# allocator refuses single allocations past 2 GiB (ASan's malloc limit).
FUZZ=(nice -n 19 cargo +nightly fuzz)
SAN=(--sanitizer none)

usage() {
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

known() {
  local t
  for t in "${TARGETS[@]}"; do [ "$t" = "$1" ] && return 0; done
  echo "error: unknown target $1 (targets: ${TARGETS[*]})" >&2
  exit 2
}

# The last value of `key: N` (libFuzzer's progress lines and final stats) in a log.
last() { grep -oE "$1: ?[0-9]+" "$2" | tail -n 1 | grep -oE '[0-9]+$' || echo 0; }

run_one() {
  local target=$1 seconds=$2
  local stamp log start end status result artifact seconds
  stamp=$(date -u +%Y%m%dT%H%M%SZ)
  log=$LOGS/$target.$stamp.log
  mkdir -p "fuzz/corpus/$target" "$LOGS"
  echo "== $target: ${seconds}s (log: $log)"
  # Built first (cargo fuzz build), so the wall clock is the fuzzing alone.
  "${FUZZ[@]}" build "${SAN[@]}" "$target" >"$log" 2>&1 || { cat "$log" >&2; return 1; }
  start=$(date +%s)
  set +e
  "${FUZZ[@]}" run "${SAN[@]}" "$target" "fuzz/corpus/$target" -- \
    -max_total_time="$seconds" -timeout="$TIMEOUT" -rss_limit_mb="$RSS_MB" \
    -print_final_stats=1 >>"$log" 2>&1
  status=$?
  set -e
  end=$(date +%s)
  artifact=$(grep -oE 'Test unit written to [^ ]+' "$log" | tail -n 1 | sed 's/.* //' || true)
  if [ "$status" -eq 0 ]; then
    result=ok
  elif [ -n "$artifact" ]; then
    result="crash:$artifact"
  else
    result="error:$status"
  fi
  # libFuzzer's own time ("Done N runs in S second(s)"), else the wall clock (a crash).
  seconds=$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -n 1 | awk '{print $5}' || true)
  printf '%s\ttarget=%s\tseconds=%s\texecs=%s\tcov=%s\tft=%s\tresult=%s\tlog=%s\n' \
    "$stamp" "$target" "${seconds:-$((end - start))}" "$(last stat::number_of_executed_units "$log")" \
    "$(last cov "$log")" "$(last ft "$log")" "$result" "$log" | tee -a "$SUMMARY"
}

totals() {
  [ -f "$SUMMARY" ] || { echo "no runs yet ($SUMMARY)"; return; }
  # Time and executions add up over runs; coverage and result are the last run's (the
  # corpus grows); crashes counts the runs that did not end ok (each found something).
  awk -F'\t' '
    { for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = substr($i, length(kv[1]) + 2) }
      t = f["target"]; if (!(t in secs)) order[n++] = t
      secs[t] += f["seconds"]; execs[t] += f["execs"]; runs[t]++
      cov[t] = f["cov"]; ft[t] = f["ft"]; last[t] = f["result"]
      if (f["result"] != "ok") bad[t]++ }
    END {
      printf "%-14s %5s %9s %14s %7s %7s %7s  %s\n", "target", "runs", "seconds", "executions", "cov", "ft", "crashes", "last run"
      for (i = 0; i < n; i++) { t = order[i]
        printf "%-14s %5d %9d %14d %7s %7s %7d  %s\n", t, runs[t], secs[t], execs[t], cov[t], ft[t], bad[t] + 0, last[t] }
    }' "$SUMMARY"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  seed)
    python3 scripts/fuzz_seed.py
    ;;
  build)
    "${FUZZ[@]}" build "${SAN[@]}"
    ;;
  run)
    [ $# -ge 1 ] || usage
    seconds=$1
    shift
    targets=("$@")
    [ ${#targets[@]} -gt 0 ] || targets=("${TARGETS[@]}")
    for t in "${targets[@]}"; do known "$t"; done
    "${FUZZ[@]}" build "${SAN[@]}"
    for t in "${targets[@]}"; do run_one "$t" "$seconds"; done
    totals
    ;;
  totals)
    totals
    ;;
  keep)
    [ $# -ge 2 ] || usage
    known "$1"
    [ -f "$2" ] || { echo "error: no file $2" >&2; exit 2; }
    name=${3:-$(basename "$2")}
    out=fuzz/regressions/$1/$name
    mkdir -p "fuzz/regressions/$1"
    # tmin shrinks a crash (not a hang) into fuzz/artifacts/TARGET/minimized-from-*.
    marker=$(mktemp)
    "${FUZZ[@]}" tmin "${SAN[@]}" -r 2000 "$1" "$2" -- -timeout="$TIMEOUT" \
      -rss_limit_mb="$RSS_MB" >&2 || true
    small=$(find "fuzz/artifacts/$1" -name 'minimized-from-*' -newer "$marker" 2>/dev/null | head -n 1)
    rm -f "$marker"
    cp "${small:-$2}" "$out"
    echo "$out ($(wc -c <"$out") bytes)"
    ;;
  *)
    usage
    ;;
esac
