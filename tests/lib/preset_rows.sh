# Helpers of the per-preset tables (tests/runtime/presets_table.sh,
# tests/train/presets_train_table.sh); source it with $sf set to the
# sparsefuse binary.

# The presets `sparsefuse presets` lists as runnable, one per line.
presets() { "$sf" presets | awk '/^[a-z0-9]/ && $2 != "deviates:" {print $1}'; }

# Presets whose workers agree at run time, cycle by cycle, which ready
# tensors to fuse (Horovod's negotiation): their grouping follows the real
# backward's timing, which the simulator knows only from the trace.
negotiated_presets="horovod rgmerge-dynamic"
is_negotiated() { [[ " $negotiated_presets " == *" $1 "* ]]; }

# The mean iteration time (ms) of a result.json.
mean_ms() {
  /usr/bin/python3 -c "import json,sys; r=json.load(open(sys.argv[1])); t=r['iteration_time_s']; print(f\"{1e3*sum(t)/len(t):.3f}\" if isinstance(t, list) else f\"{1e3*t['mean']:.3f}\")" "$1"
}

# Why the runtime refused a preset, from the log LOG that says so.
refusal_reason() { grep -o 'cannot run preset "[^"]*": .*' "$1" | head -1 | cut -d: -f2- | cut -c2-; }

# One row: PRESET RANKS VERDICT ITERATION_MS BUCKETS.
print_row() { printf '%-16s %5s  %-8s %12s  %s\n' "$@"; }

# For the tests (after tests/lib/common.sh): fails unless TABLE's rows for
# NP ranks name every preset exactly once.
expect_every_preset() {
  local table=$1 np=$2 expected listed
  expected=$(presets | sort)
  [[ $(echo "$expected" | wc -l) -ge 30 ]] || fail "sparsefuse presets listed only: $expected"
  listed=$(awk -v np="$np" 'NR > 1 && $2 == np {print $1}' "$table" | sort)
  [[ "$listed" == "$expected" ]] || fail "-np $np: the table's presets differ from sparsefuse presets"
}
